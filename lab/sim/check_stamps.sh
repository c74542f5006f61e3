#!/bin/sh
# SPDX-License-Identifier: MIT
# check_stamps.sh TLBPOL-SIM SOURCE_ROOT: flush stamps in the simulator
# (TLBPOL_EVF_STAMP, tlbpol_stamp()).  With --stamps the private unmaps of lazy-unmap and of a
# replayed real program (node's worker threads) give their frames back at
# once and the allocator reuses them, the last freed first; every policy
# must stay free of violations (--probe puts other CPUs' pages in every
# TLB, so a settle that returned early is seen) and default must send
# fewer munmap interrupts than linux; and on the 64 CPUs of the default
# machine, lazy-unmap (fresh addresses, frames reused at once: the worst
# case) at least 10x fewer, the goal flush stamps were made for.
set -u
sim=$1
root=$2
# say, col
. "$(dirname "$0")/check_lib.sh"

for lookahead in 0 64; do
	out=$("$sim" lazy-unmap --cpus 8 --nodes 1 --probe --stamps --stamp-lookahead $lookahead \
		--rules default,-flush-stamp --csv) || say "lazy-unmap --stamps exited $?"
	for p in naive before linux default custom; do
		v=$(col "$out" violations $p)
		[ "$v" = 0 ] || say "lazy-unmap --stamps (lookahead $lookahead): $p has $v violations"
	done
	l=$(col "$out" ipis_munmap linux) d=$(col "$out" ipis_munmap default)
	r=$(col "$out" stamped_reuses default)
	[ "$r" -gt 0 ] || say "lazy-unmap --stamps: default reused no stamped frame"
	[ "$d" -lt "$l" ] ||
		say "lazy-unmap --stamps (lookahead $lookahead): default $d munmap interrupts, linux $l"
	echo "lazy-unmap --cpus 8 --probe --stamps --stamp-lookahead $lookahead: munmap interrupts linux $l, default $d; $r stamped reuses"
done
out=$("$sim" lazy-unmap --stamps --events 16000 --csv) || say "lazy-unmap --stamps exited $?"
l=$(col "$out" ipis_munmap linux) d=$(col "$out" ipis_munmap default)
[ $((d * 10)) -le "$l" ] || say "lazy-unmap --stamps, 64 CPUs: default $d munmap interrupts, linux $l"
echo "lazy-unmap --stamps, 64 CPUs: munmap interrupts linux $l, default $d"
out=$("$sim" trace "$root/lab/validate/data/node-workers.trace" --cpus 2 --nodes 1 --probe \
	--stamps --stamp-lookahead 64 --csv) || say "trace --stamps exited $?"
for p in naive before linux default; do
	v=$(col "$out" violations $p)
	[ "$v" = 0 ] || say "node-workers --stamps: $p has $v violations"
done
[ "$(col "$out" stamped_reuses default)" -gt 0 ] || say "node-workers --stamps: no stamped reuse"
[ "$fail" -eq 0 ] && echo "ok: flush stamps in tlbpol-sim"
exit $fail
