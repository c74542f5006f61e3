#!/bin/sh
# SPDX-License-Identifier: MIT
# check_default_stamps.sh TLBPOL-SIM SOURCE_ROOT: `default` means every
# feature, flush stamps included, without any flag.  A replayed program
# (python's threads, node's workers, 2 CPUs as recorded) under the default
# policy stamps its private munmaps with a kernel's allocator and sends
# fewer munmap interrupts than linux; the policies without the stamp rule
# (naive, before, linux) do not stamp and give what --no-stamps gives;
# --no-stamps turns default's stamps off (the figures of a run without
# them: default's munmap interrupts no fewer than with); --stamps still
# stamps every policy.  No policy has a violation (--probe: other CPUs'
# pages in every TLB, so a stamp settled too early is seen).
set -u
sim=$1
root=$2
# say, col
. "$(dirname "$0")/check_lib.sh"
rows() { # rows CSV POLICY: POLICY's row without the stamps column (the last)
	printf '%s\n' "$1" | awk -F, -v p="$2" '$2 == p { NF--; print }' OFS=,
}

for t in python-threads node-workers; do
	tr=$root/lab/validate/data/$t.trace
	on=$("$sim" trace "$tr" --cpus 2 --nodes 1 --probe --csv) || say "$t: exited $?"
	off=$("$sim" trace "$tr" --cpus 2 --nodes 1 --probe --csv --no-stamps) ||
		say "$t --no-stamps: exited $?"
	all=$("$sim" trace "$tr" --cpus 2 --nodes 1 --probe --csv --stamps \
		--stamp-lookahead 64 --stamp-spare) || say "$t --stamps: exited $?"
	for p in naive before linux default; do
		for run in on off all; do
			eval "out=\$$run"
			v=$(col "$out" violations $p)
			[ "$v" = 0 ] || say "$t ($run): $p has ${v:-no row} violations"
		done
		[ "$(col "$all" stamps $p)" = 1 ] || say "$t --stamps: $p does not stamp"
		[ "$(col "$off" stamps $p)" = 0 ] || say "$t --no-stamps: $p stamps"
	done
	for p in naive before linux; do
		[ "$(col "$on" stamps $p)" = 0 ] || say "$t: $p stamps without the stamp rule"
		[ "$(rows "$on" $p)" = "$(rows "$off" $p)" ] ||
			say "$t: $p differs with --no-stamps (it has no stamp rule)"
	done
	[ "$(col "$on" stamps default)" = 1 ] || say "$t: default does not stamp by default"
	r=$(col "$on" stamped_reuses default)
	[ "${r:-0}" -gt 0 ] || say "$t: default reused no stamped frame"
	l=$(col "$on" ipis_munmap linux) d=$(col "$on" ipis_munmap default)
	n=$(col "$off" ipis_munmap default)
	[ "${d:-0}" -lt "${l:-0}" ] || say "$t: default $d munmap interrupts, linux $l"
	[ "${n:-0}" -gt "${d:-0}" ] || say "$t --no-stamps: default $n munmap interrupts, with stamps $d"
	echo "$t: munmap interrupts linux $l, default $d (--no-stamps $n); $r stamped reuses"
done

# A scenario: lazy-unmap's default stamps too, with no flag.
out=$("$sim" lazy-unmap --cpus 8 --nodes 1 --probe --csv) || say "lazy-unmap exited $?"
[ "$(col "$out" stamps default)" = 1 ] || say "lazy-unmap: default does not stamp by default"
[ "$(col "$out" stamps linux)" = 0 ] || say "lazy-unmap: linux stamps"
for p in naive before linux default; do
	v=$(col "$out" violations $p)
	[ "$v" = 0 ] || say "lazy-unmap: $p has ${v:-no row} violations"
done
# The table says it too.
"$sim" trace "$root/lab/validate/data/python-threads.trace" --cpus 2 --nodes 1 |
	grep -q '^  flush stamps: naive off, before off, linux off, default on' ||
	say "the table does not say which policies stamped"
# Guards stay unstamped: testdata/guards.trace punches a hole inside a
# mapping and replaces a mapping as MAP_FIXED does (both not stamped), and
# trims a mapping's end and unmaps a whole one (both stamped).
g=$("$sim" trace "$root/lab/sim/testdata/guards.trace" --cpus 2 --nodes 1 --probe) ||
	say "guards.trace exited $?"
printf '%s\n' "$g" | grep -q 'default on (.*; 2 munmaps not stamped' ||
	say "guards.trace: not the 2 munmaps expected kept unstamped: $(printf '%s\n' "$g" |
		grep 'flush stamps')"
[ "$fail" -eq 0 ] && echo "ok: default stamps by default"
exit $fail
