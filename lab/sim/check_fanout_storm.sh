#!/bin/sh
# SPDX-License-Identifier: MIT
# check_fanout_storm.sh TLBPOL-SIM: NUMA fan-out must not lose to direct
# interrupts when every CPU shoots down at once.  dontneed at 1024 CPUs on
# 16 nodes is tlb_flush2's storm (each CPU unmaps its pages and every
# shootdown reaches the 1023 others), vcpu the same in an overcommitted
# guest.  default (fan-out on) must send no more interrupts than linux
# (fan-out off) and take no more modelled time, with no violation.  When a
# node's leader was always its first target, one CPU per node forwarded
# every initiator's request and default took 2.07x linux's time in
# dontneed, and vcpu's waits passed the sim's limit.
set -u
sim=$1
# say, col
. "$(dirname "$0")/check_lib.sh"

for sc in dontneed vcpu; do
	out=$("$sim" $sc --cpus 1024 --nodes 16 --events 512 --csv) || say "$sc: exited $?"
	for p in linux default; do
		v=$(col "$out" violations $p)
		[ "$v" = 0 ] || say "$sc: $p has ${v:-no row} violations"
	done
	li=$(col "$out" ipis linux) di=$(col "$out" ipis default)
	lt=$(col "$out" modelled_ns linux) dt=$(col "$out" modelled_ns default)
	[ "${di:-1}" -le "${li:-0}" ] || say "$sc: default $di interrupts, linux $li"
	[ "${dt:-1}" -le "${lt:-0}" ] || say "$sc: default $dt modelled ns, linux $lt"
	echo "$sc at 1024 CPUs: interrupts linux $li, default $di; modelled ns linux $lt, default $dt"
done
exit $fail
