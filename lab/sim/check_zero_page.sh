#!/bin/sh
# SPDX-License-Identifier: MIT
# check_zero_page.sh TLBPOL-SIM LAB-TRACE: trace replay with --zero-page
# avoid, a host that maps a fresh zeroed frame at a read fault of private
# anonymous memory instead of the shared zero page (Linux does so where
# mm_forbids_zeropage(), 593befa6ab74), so that the write after it keeps
# the frame and needs no shootdown (docs/rules.md, "The copy-on-write
# shootdown").
#  - xz -T2 with its faults (LAB-TRACE/traces/xz-T2-faults.trace): avoid
#    sends far fewer copy-on-write (fault) interrupts than map under
#    linux and default; no stale-TLB violation under any policy, also with
#    --probe (every CPU reads pages other CPUs installed, so a frame
#    changed without a flush is seen); the replay prints the frames so
#    mapped and the never-written ones; map is the default.
#  - A hand-made trace, counted by hand: thread 1 (CPU 1) reads page 0,
#    thread 0 writes it (map: a copy, a shootdown; avoid: a plain write),
#    reads pages 1 and 2 and drops 2, thread 1 reads page 3, thread 0
#    forks (its writable pages are write-protected: one mprotect
#    interrupt) and writes page 3 (after a fork, a copy either way).  map:
#    fault 2; avoid: fault 1, 4 frames, 2 never written (pages 1 and 2).
#  - An mmap record that says `file` (or `shared`) keeps the zero page.
#  - --zero-page takes map or avoid; --help says so.
# Exits 77 when the simulator was not built.
set -u
sim=$1
trace=$2
if [ ! -x "$sim" ]; then
	echo "SKIP: no tlbpol-sim at $sim"
	exit 77
fi
# say, col
. "$(dirname "$0")/check_lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# zp ERRFILE POLICY: "frames never-written KiB" from the replay's line.
zp() {
	sed -n "s/^tlbpol-sim: trace: zero page avoided (rules $2 .*): \([0-9]*\) frames .*, \([0-9]*\) never written (\([0-9]*\) KiB).*/\1 \2 \3/p" "$1" |
		head -n 1
}
noviol() { # noviol CSV WHAT
	for p in naive before linux default; do
		v=$(col "$1" violations $p)
		[ "$v" = 0 ] || say "$2 $p: ${v:-no} stale-TLB violations"
	done
}

xz=$trace/traces/xz-T2-faults.trace
run="$sim trace $xz --cpus 2 --nodes 1 --csv"
map=$($run --zero-page map 2>"$tmp/map.err") || say "xz map: exited $?"
avoid=$($run --zero-page avoid 2>"$tmp/avoid.err") || say "xz avoid: exited $?"
probe=$($run --zero-page avoid --probe 2>"$tmp/probe.err") || say "xz avoid --probe: exited $?"
plain=$($run 2>/dev/null)
[ "$plain" = "$map" ] || say "xz: --zero-page map is not the default"
noviol "$map" "xz map"
noviol "$avoid" "xz avoid"
noviol "$probe" "xz avoid --probe"
for p in linux default; do
	fm=$(col "$map" ipis_fault $p)
	fa=$(col "$avoid" ipis_fault $p)
	im=$(col "$map" ipis $p)
	ia=$(col "$avoid" ipis $p)
	echo "xz-T2 $p: interrupts $im -> $ia, fault $fm -> $fa (map -> avoid)"
	if [ "${fm:-0}" -lt 500 ] || [ $((${fa:-99999} * 10)) -gt "$fm" ]; then
		say "xz $p: fault interrupts map $fm, avoid $fa: expected at least 500, and 10 times fewer"
	fi
	set -- $(zp "$tmp/avoid.err" $p)
	if [ $# != 3 ] || [ "$1" -lt 1000 ]; then
		say "xz $p: no 'zero page avoided' line with 1000 frames or more"
	else
		echo "xz-T2 $p: $1 frames mapped at read faults, $2 never written ($3 KiB)"
	fi
done
grep -q 'zero page avoided' "$tmp/map.err" && say "xz map: says the zero page was avoided"

# The hand-made trace (see above); $1: the mmap's 8th field, if any.
small() {
	cat <<EOF
# tlbpol-trace v3
100000 0 0 clone 1
200000 0 0 mmap 7f0000000000 8 rw-${1:+ $1}
300000 1 0 fault 7f0000000000 read
400000 0 0 fault 7f0000000000 cow
500000 0 0 fault 7f0000001000 read
600000 0 0 fault 7f0000002000 read
700000 0 0 dontneed 7f0000002000 1
800000 1 0 fault 7f0000003000 read
900000 0 0 fork 2 1
1000000 0 0 fault 7f0000003000 cow
1100000 2 1 exit
10000000 1 0 mmap 7f1000000000 1 rw-
EOF
}
expect() { # expect NAME FIELD ZERO-PAGE FAULT FRAMES NEVER-WRITTEN
	small "$2" > "$tmp/$1.trace"
	out=$("$sim" trace "$tmp/$1.trace" --cpus 2 --nodes 1 --csv --zero-page "$3" 2>"$tmp/$1.err") ||
		say "$1: exited $?"
	noviol "$out" "$1"
	for p in linux default; do
		f=$(col "$out" ipis_fault $p)
		got="fault $f; $(zp "$tmp/$1.err" $p)"
		echo "$1 $p: $got"
		[ "$got" = "fault $4; $5${5:+ }$6${6:+ $(($6 * 4))}" ] ||
			say "$1 $p: $got, expected fault $4; $5 $6"
	done
}
expect small-map '' map 2 '' ''
expect small-avoid '' avoid 1 4 2
expect small-anon anon avoid 1 4 2
expect small-file file avoid 2 0 0
grep -q 'anonymous memory: as the trace says' "$tmp/small-file.err" ||
	say "small-file: the replay does not say the trace marks anonymous memory"
small bogus > "$tmp/bogus.trace"
"$sim" trace "$tmp/bogus.trace" --cpus 2 --nodes 1 --zero-page avoid > /dev/null 2>&1 &&
	say "an mmap record with 8th field 'bogus' loaded"

# The command line.
"$sim" trace "$tmp/small-map.trace" --cpus 2 --zero-page never > /dev/null 2>&1
[ $? = 2 ] || say "--zero-page never: not refused with exit 2"
"$sim" --help | grep -q -- '--zero-page map|avoid' || say "--help does not list --zero-page"
[ $fail = 0 ] && echo "check_zero_page: ok"
exit $fail
