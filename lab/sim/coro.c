/* SPDX-License-Identifier: MIT */
/*
 * coro.c - the coroutines of coro.h.
 */
#define _GNU_SOURCE
#include "coro.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define CORO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORO_ASAN 1
#endif
#endif

#ifdef CORO_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
				     size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
/* A stack mapped where an earlier one was may still carry that one's
 * poisoned frames in the shadow: clear it both ways. */
#define UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define UNPOISON(p, n) ((void)0)
#endif

#if defined(__x86_64__)
#define CORO_ASM 1
#else
#include <ucontext.h>
#endif

struct coro {
#ifdef CORO_ASM
	void *sp; /* saved stack pointer: the callee-saved registers above it */
#else
	ucontext_t uc;
#endif
	void *stack;
	size_t size;
	void (*fn)(void *);
	void *arg;
#ifdef CORO_ASAN
	void *fake;
#endif
};

static struct coro main_coro;

struct coro *coro_main(void)
{
	return &main_coro;
}

#ifdef CORO_ASM
/*
 * coro_swap(save, sp): push the System V callee-saved registers, store the
 * stack pointer in *save, load sp, pop the other coroutine's registers and
 * return into it.  A new coroutine's stack is laid out (coro_new) so that
 * this pop and return land in coro_entry with fn and arg in r13 and r12.
 */
void coro_swap(void **save, void *sp);
void coro_entry(void);
__asm__(".text\n"
	".globl coro_swap\n"
	".type coro_swap,@function\n"
	"coro_swap:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	".size coro_swap, .-coro_swap\n"
	".globl coro_entry\n"
	".type coro_entry,@function\n"
	"coro_entry:\n"
	"	movq %r12, %rdi\n"
	"	callq *%r13\n"
	"	ud2\n"
	".size coro_entry, .-coro_entry\n");
#else
/* makecontext() passes int arguments only: the pointer in two halves. */
static void first_run(void *arg);
static void trampoline(unsigned hi, unsigned lo)
{
	first_run((void *)(((uintptr_t)hi << 16 << 16) | lo));
}
#endif

/* Now running on @self's stack: tell ASan the switch is over.  The first
 * switch of a run is always from the run loop, whose stack this learns. */
static void finish_switch(struct coro *self)
{
#ifdef CORO_ASAN
	const void *bottom = NULL;
	size_t size = 0;

	__sanitizer_finish_switch_fiber(self->fake, &bottom, &size);
	if (!main_coro.stack && self != &main_coro) {
		main_coro.stack = (void *)bottom;
		main_coro.size = size;
	}
#else
	(void)self;
#endif
}

static void first_run(void *arg)
{
	struct coro *co = arg;

	finish_switch(co);
	co->fn(co->arg);
	abort(); /* fn never returns */
}

struct coro *coro_new(size_t stack_bytes, void (*fn)(void *arg), void *arg)
{
	struct coro *co = calloc(1, sizeof(*co));

	if (!co)
		return NULL;
	/* Reserved, not committed: 1024 CPUs touch a few KiB each. */
	co->size = (stack_bytes + 4095) & ~(size_t)4095;
	co->stack = mmap(NULL, co->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (co->stack == MAP_FAILED) {
		free(co);
		return NULL;
	}
	UNPOISON(co->stack, co->size);
	co->fn = fn;
	co->arg = arg;
#ifdef CORO_ASM
	{
		/* After six pops and a return %rsp must be 16-byte aligned,
		 * so that coro_entry's call enters first_run as the ABI says. */
		uintptr_t top = ((uintptr_t)co->stack + co->size) & ~(uintptr_t)15;
		uintptr_t *sp = (uintptr_t *)(top - 72);

		sp[0] = 0;                       /* r15 */
		sp[1] = 0;                       /* r14 */
		sp[2] = (uintptr_t)first_run;    /* r13 */
		sp[3] = (uintptr_t)co;           /* r12 */
		sp[4] = 0;                       /* rbx */
		sp[5] = 0;                       /* rbp */
		sp[6] = (uintptr_t)coro_entry;   /* return address */
		co->sp = sp;
	}
#else
	if (getcontext(&co->uc)) {
		coro_free(co);
		return NULL;
	}
	co->uc.uc_stack.ss_sp = co->stack;
	co->uc.uc_stack.ss_size = co->size;
	co->uc.uc_link = NULL;
	makecontext(&co->uc, (void (*)(void))trampoline, 2,
		    (unsigned)((uintptr_t)co >> 16 >> 16), (unsigned)(uintptr_t)co);
#endif
	return co;
}

void coro_free(struct coro *co)
{
	if (!co)
		return;
	UNPOISON(co->stack, co->size);
	munmap(co->stack, co->size);
	free(co);
}

void coro_switch(struct coro *from, struct coro *to)
{
#ifdef CORO_ASAN
	__sanitizer_start_switch_fiber(&from->fake, to->stack, to->size);
#endif
#ifdef CORO_ASM
	coro_swap(&from->sp, to->sp);
#else
	swapcontext(&from->uc, &to->uc);
#endif
	finish_switch(from);
}
