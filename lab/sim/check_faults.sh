#!/bin/sh
# SPDX-License-Identifier: MIT
# check_faults.sh TLBPOL-SIM TESTDATA LAB-TRACE: page faults in trace replay
# (lab/trace/FORMAT.md "Page faults", trace version 3).  testdata/ holds
# one small trace three times: cow.v3.trace with its fault records,
# cow.v2.trace without them, cow.v1.trace in version 1.  Thread 1 runs in
# the address space on the other CPU throughout, so each shootdown is
# one interrupt.  Counted by hand (the trace's comment says how): with the
# faults, 4 copy-on-write interrupts (cause fault: 3 copies of the zero
# page, one more) and 1 for the DONTNEED; without them, 1 and no fault;
# version 1 still loads.  Every policy: no stale-TLB violation, also with
# --probe (other CPUs read the pages installed lately, so a copy whose old
# entry was not flushed is seen).  The replay says whether faults were
# recorded.  And the recorded sample (LAB-TRACE/samples/zero-cow.*,
# lab/validate/zero_cow.c: 2 threads x 10 rounds x 8 pages read, then
# written): its conversion has at least the program's 160 zero-page
# copies, and its replay sends copy-on-write interrupts.
set -u
sim=$1
data=$2
trace=$3
py=${PYTHON:-python3}
# say, col
. "$(dirname "$0")/check_lib.sh"
expect() { # expect TRACE FAULT DONTNEED [options]
	t=$1 want_fault=$2 want_dn=$3
	shift 3
	out=$("$sim" trace "$data/$t" --cpus 2 --nodes 1 --csv "$@") || say "$t $*: exited $?"
	for p in naive before linux default; do
		v=$(col "$out" violations $p)
		[ "$v" = 0 ] || say "$t $* $p: $v stale-TLB violations"
	done
	for p in linux default; do
		f=$(col "$out" ipis_fault $p)
		d=$(col "$out" ipis_dontneed $p)
		[ -z "$want_fault" ] || [ "$f" = "$want_fault" ] ||
			say "$t $* $p: $f copy-on-write (fault) interrupts, expected $want_fault"
		[ -z "$want_dn" ] || [ "$d" = "$want_dn" ] ||
			say "$t $* $p: $d dontneed interrupts, expected $want_dn"
		echo "$t $* $p: fault $f dontneed $d"
	done
}
expect cow.v3.trace 4 1
expect cow.v3.trace 4 1 --probe
expect cow.v2.trace 0 1
expect cow.v1.trace 0 ''

# What the table says about faults.
out=$("$sim" trace "$data/cow.v2.trace" --cpus 2 --nodes 1 --policy linux)
printf '%s\n' "$out" | grep -q 'faults: not recorded: copy-on-write shootdowns are not modelled' ||
	say "v2 replay: no 'faults: not recorded' line"
out=$("$sim" trace "$data/cow.v3.trace" --cpus 2 --nodes 1 --policy linux)
printf '%s\n' "$out" | grep -q 'faults: recorded: 4 read, 4 write, 4 copy-on-write' ||
	say "v3 replay: no 'faults: recorded: 4 read, 4 write, 4 copy-on-write' line"
printf '%s\n' "$out" | grep -q '^ *linux *dontneed 1 fault 4$' ||
	say "v3 replay: interrupts per cause are not 'dontneed 1 fault 4'"
# The converter on the recorded sample.
conv=$("$py" "$trace/strace2trace.py" --faults "$trace/samples/zero-cow.faults" \
	"$trace/samples/zero-cow.strace") || say "strace2trace.py on zero-cow exited $?"
cows=$(printf '%s\n' "$conv" | grep -c ' fault [0-9a-f]* cow$')
reads=$(printf '%s\n' "$conv" | grep -c ' fault [0-9a-f]* read$')
echo "zero-cow conversion: $cows cow, $reads read fault records"
if [ "$cows" -lt 160 ] || [ "$reads" -lt 160 ]; then
	say "zero-cow: $cows cow and $reads read records, expected at least 160 of each"
fi
printf '%s\n' "$conv" | head -n 1 | grep -qx '# tlbpol-trace v3' || say "zero-cow: not version 3"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%s\n' "$conv" > "$tmp"
out=$("$sim" trace "$tmp" --cpus 2 --nodes 1 --csv) || say "zero-cow replay exited $?"
for p in linux default; do
	f=$(col "$out" ipis_fault $p)
	echo "zero-cow replay $p: fault $f"
	[ "${f:-0}" -gt 0 ] || say "zero-cow replay $p: no copy-on-write interrupts"
done
# xz -T2 recorded with its faults (LAB-TRACE/traces/xz-T2-faults.trace:
# 1161 copies of the zero page; the kernel sent 1107-1148 shootdowns in
# runs without strace, a replay of the same recording without faults 1).
out=$("$sim" trace "$trace/traces/xz-T2-faults.trace" --cpus 2 --nodes 1 --csv --policy linux) ||
	say "xz-T2-faults replay exited $?"
f=$(col "$out" ipis_fault linux)
echo "xz-T2-faults replay linux: fault $f"
[ "${f:-0}" -ge 500 ] || say "xz-T2-faults replay linux: $f copy-on-write interrupts, expected at least 500"
[ $fail = 0 ] && echo "check_faults: ok"
exit $fail
