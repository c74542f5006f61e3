/* SPDX-License-Identifier: MIT */
/*
 * call.h - the entry and exit of an engine call for one CPU.
 *
 * The header's nesting rule (calls for one CPU never run concurrently, and
 * a task-side call does not nest in another from an interrupt or a
 * callback) is enforced here, by one flag per CPU, and what a CPU's
 * previous call left for its next one is settled on the way in
 * (tlbpol__settle(), pending.c).  Used by the calls at the top of the core
 * (submit.c, cpu.c); tlbpol_handle_ipi() is the one call that does not
 * enter this way (it has its own guard, in receive.c).
 */
#ifndef TLBPOL_CALL_H
#define TLBPOL_CALL_H

#include "internal.h"

/*
 * Enter a task-side call for @cpu (every call for one CPU but
 * tlbpol_handle_ipi()): -E_BUSY if one already runs on it, i.e. this one
 * nests in it from an interrupt or a callback (the header's nesting rule).
 * A nested call that got past the test before the outer one set the flag
 * ran to completion before the outer one touched anything (call_guard()).
 * Then what the CPU's previous call told its caller to do is done: publish
 * it (tlbpol_submit() does that out of line, so it calls the two apart).
 */
static inline int call_guard(struct tlbpol_cpu *c)
{
	if (prim_load_relaxed(&c->in_call))
		return -E_BUSY;
	prim_store_relaxed(&c->in_call, 1u);
	prim_barrier();
	return 0;
}

/* Does the CPU's previous call leave something to publish? */
static inline int call_owes_settle(const struct tlbpol_cpu *c)
{
	return (c->catchup_as | c->leaving_as) != 0;
}

static inline int call_enter(struct tlbpol_engine *eng, struct tlbpol_cpu *c, uint32_t cpu)
{
	if (call_guard(c))
		return -E_BUSY;
	if (call_owes_settle(c))
		tlbpol__settle(eng, cpu, 1);
	return 0;
}

/*
 * The checks and the entry of an engine call for @cpu, in the order the
 * header documents its errors: -EINVAL for a bad engine or @args_ok false,
 * -ERANGE for @cpu, -EBUSY nested in another call for @cpu.  0: entered,
 * *@cp is the CPU's state; the call ends with call_leave().
 */
static inline int cpu_call_enter(struct tlbpol_engine *eng, uint32_t cpu, int args_ok,
				 struct tlbpol_cpu **cp)
{
	if (!eng || eng->magic != TLBPOL_MAGIC || !args_ok)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	*cp = cpu_of(eng, cpu);
	return call_enter(eng, *cp, cpu) ? -E_BUSY : 0;
}

static inline void call_leave(struct tlbpol_cpu *c)
{
	prim_barrier();
	prim_store_relaxed(&c->in_call, 0u);
}

#endif /* TLBPOL_CALL_H */
