/* SPDX-License-Identifier: MIT */
/*
 * coro.h - coroutines for tlbpol-sim: every modelled CPU runs its workload
 * on a stack of its own, and the run loop (machine.c) resumes whichever CPU
 * has the earliest modelled time.  A CPU gives the host thread back only at
 * the points machine.c chooses (a wait turn, a stretch of computation, a
 * step's end), so a run is one OS thread and as deterministic as the code.
 *
 * On x86-64 the switch is eight instructions (the System V callee-saved
 * registers and the stack pointer; MXCSR and the x87 control word are left
 * alone, as nothing here changes them); elsewhere it is swapcontext(3),
 * which also saves the signal mask with a system call each time.  Under
 * AddressSanitizer each switch is announced to it
 * (__sanitizer_start_switch_fiber), so it knows which stack is live.
 */
#ifndef TLBPOL_SIM_CORO_H
#define TLBPOL_SIM_CORO_H

#include <stddef.h>

struct coro;

/* A coroutine that will run @fn(@arg) on a stack of @stack_bytes when first
 * resumed; NULL if out of memory.  @fn must never return: it ends by
 * switching away for good. */
struct coro *coro_new(size_t stack_bytes, void (*fn)(void *arg), void *arg);
void coro_free(struct coro *co);

/* The coroutine of the thread that called coro_main_init(): the run loop. */
struct coro *coro_main(void);

/* Save the running coroutine in @from and run @to. */
void coro_switch(struct coro *from, struct coro *to);

#endif
