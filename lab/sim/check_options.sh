#!/bin/sh
# SPDX-License-Identifier: MIT
# check_options.sh TLBPOL-SIM: the simulator's command line.  Its policies
# are called what tlbpol_rules_parse() calls their masks ("default", not
# "tlbpol") in tables, CSV and --policy; a command line it refuses exits 2
# with nothing on stdout, since scripts read both (lab/mutants/run.py
# takes 2 for STUCK).  tests/check_cli.sh checks --help and --rules.
set -u
sim=$1
short="spurious --cpus 4 --events 100"
fail=0
say() {
	echo "FAIL: $*"
	fail=1
}

# refused ARG...: exit 2, a message on stderr and nothing on stdout.
refused() {
	out=$("$sim" "$@" 2>/dev/null)
	rc=$?
	err=$("$sim" "$@" 2>&1 >/dev/null)
	[ "$rc" -eq 2 ] || say "tlbpol-sim $* exited $rc, not 2"
	[ -z "$out" ] || say "tlbpol-sim $* printed on stdout"
	[ -n "$err" ] || say "tlbpol-sim $* said nothing on stderr"
}

# shellcheck disable=SC2086
pols=$("$sim" $short --csv | sed 1d | cut -d, -f2 | tr '\n' ' ')
[ "$pols" = "naive before linux default " ] || say "CSV policies are: $pols"
# shellcheck disable=SC2086
row=$("$sim" $short --policy default --csv | sed 1d)
case "$row" in
spurious,default,*) ;;
*) say "--policy default: $row" ;;
esac
# shellcheck disable=SC2086
"$sim" $short | grep -q '^  default ' || say "no default row in the table"
# shellcheck disable=SC2086
a=$("$sim" $short --csv) b=$("$sim" spurious --cpus=4 --events=100 --csv)
[ "$a" = "$b" ] || say "--cpus=4 differs from --cpus 4"

# shellcheck disable=SC2086
refused $short --policy tlbpol
# shellcheck disable=SC2086
refused $short --policy
refused spurious --cpus -1
refused spurious --cpus abc
refused spurious --cpus ''
refused spurious --cpus 4294967298 --nodes 1 # 2 once wrapped to 32 bits
refused spurious --cpus 1
refused spurious --events -5
refused spurious --cpus
refused spurious --bogus
refused spurious --csv=yes
refused no-such-scenario
refused trace
refused --scale no-such-scenario
refused spurious --cost no-such-cost=1
refused all all all
refused dontneed --threads -1
refused dontneed --block-us abc
refused dontneed --pages 0
refused dontneed --pages 257
refused dontneed --ipi-delay-spins soon
refused dontneed --wait-irqs maybe
refused dontneed --wait-irqs
refused trace lab/trace/samples/python-threads.trace --trace-cpu-ns -3
refused trace lab/trace/samples/python-threads.trace --trace-compute-scale 0
refused dontneed --pcid=1
refused spurious --cost-file /nonexistent/machine.cost
tmp=$(mktemp)
printf '# a profile\nfault_ns=1000 # ok\nno_such_cost=3\n' >"$tmp"
refused spurious --cost-file "$tmp"
"$sim" spurious --cost-file "$tmp" 2>&1 | grep -q ":3:" || say "--cost-file does not name the bad line"
printf '# a profile\n\n  fault_ns = 1000\n' >"$tmp"
refused spurious --cost-file "$tmp" # spaces around '=' are not a cost name
printf 'fault_ns=1234.5  # measured\n' >"$tmp"
"$sim" --cost-file "$tmp" --costs | grep -q 'fault_ns  *1234.5 ' || say "--cost-file did not set fault_ns"
a=$("$sim" $short --cost-file "$tmp" --csv) b=$("$sim" $short --cost fault_ns=1234.5 --csv)
[ "$a" = "$b" ] || say "--cost-file differs from the same --cost"
rm -f "$tmp"

# --wait-irqs reaches the engine: auto is yes for naive, before and linux
# and no for default and custom; yes and no change what a mutual-shootdown
# run does (dontneed, 2 CPUs: each CPU waits while the other's request is
# posted) unless the CPUs poll (RULE_POLLING_CPUS: the loop serves then).
dn="dontneed --cpus 2 --nodes 1 --events 200 --csv"
for p in linux default custom; do
	# shellcheck disable=SC2086
	a=$("$sim" $dn --policy $p --rules default,-polling-cpus)
	# shellcheck disable=SC2086
	y=$("$sim" $dn --policy $p --rules default,-polling-cpus --wait-irqs yes)
	# shellcheck disable=SC2086
	n=$("$sim" $dn --policy $p --rules default,-polling-cpus --wait-irqs no)
	case $p in
	linux) [ "$a" = "$y" ] || say "--wait-irqs auto is not yes for linux" ;;
	*) [ "$a" = "$n" ] || say "--wait-irqs auto is not no for $p" ;;
	esac
	case $p in
	default) [ "$y" = "$n" ] || say "--wait-irqs changed default, whose CPUs poll" ;;
	*) [ "$y" != "$n" ] || say "--wait-irqs yes and no agree for $p" ;;
	esac
done

# --backend: an unknown mechanism is refused;
# a fixed invlpgb broadcasts where interrupts only never do, and the
# engine's choice sends fewer interrupts than interrupts only at 64 CPUs.
refused $short --backend rars
refused $short --backend ''
r="reclaim --cpus 64 --nodes 2 --events 2048 --policy default --csv"
# shellcheck disable=SC2086
i=$("$sim" $r --backend ipi | awk -F, 'NR == 2 { print $0 }')
# shellcheck disable=SC2086
f=$("$sim" $r --backend invlpgb --fixed | awk -F, 'NR == 2 { print $0 }')
[ -n "$i" ] && [ "$i" != "$f" ] || say "--backend invlpgb --fixed changed nothing"
# shellcheck disable=SC2086
"$sim" --scale reclaim --backend invlpgb --events 1024 | awk '
	$1 == 64 { seen = 1; if ($6 >= $2) bad = 1 }
	END { exit !(seen && !bad) }' || say "--scale --backend: the choice interrupts as much as ipi at 64 CPUs"

[ "$fail" -eq 0 ] && echo "ok: tlbpol-sim options"
exit $fail
