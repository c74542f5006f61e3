#!/bin/sh
# SPDX-License-Identifier: MIT
#
# kvm_emulation.sh KERNEL: how many of the test kernel's instructions KVM
# runs through its instruction emulator, for one boot of `linux` and one of
# `default` (run.sh --kvm -n 2 -- only=RULES).
#
# Where /dev/kvm is hardware virtualization (VMX, SVM) the guest's ordinary
# instructions run natively and only exits are emulated; kvm-pvm, the
# software hypervisor of nested hosts, may emulate the guest instruction by
# instruction (its dmesg line reports emul_batch).  Then the cycles the
# test kernel measures grow with the instructions a path runs, not with the
# interrupts it sends.  The count is the tracepoint kvm:kvm_emulate_insn,
# every event recorded and read back by perf script, and of those
# the 64-bit code's ("prot64"), whose RIPs addr2line looks up in KERNEL.
# Output, per rule set:  emulated<TAB>rules=R<TAB>all=N<TAB>prot64=N<TAB>top=F:n,...
# (the eight functions with the most emulated instructions)
# Exit status: 0; 77 without /dev/kvm, perf or the tracepoint.
set -u
kernel=${1:?usage: kvm_emulation.sh KERNEL}
top=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "kvm_emulation.sh: skipped: $*" >&2; exit 77; }
[ -r /dev/kvm ] && [ -w /dev/kvm ] || skip "no usable /dev/kvm"
command -v perf >/dev/null || skip "no perf"
command -v addr2line >/dev/null || skip "no addr2line"
perf list 2>/dev/null | grep -q 'kvm:kvm_emulate_insn' || skip "no tracepoint kvm:kvm_emulate_insn"
dmesg 2>/dev/null | grep -m1 -E 'kvm-pvm: loaded|kvm_intel|kvm_amd' | sed 's/^/# dmesg: /'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for rules in linux default; do
	# To a file, not a pipe: a pipe's reader falls behind and perf
	# drops events (a tenth of them were left).  About 2.5 GB a boot.
	perf record -q -o "$tmp/data" -e kvm:kvm_emulate_insn -a -- \
		"$top/examples/unikernel/run.sh" --kvm -n 2 --kernel "$kernel" -- only=$rules \
		>/dev/null 2>"$tmp/err"
	perf script -i "$tmp/data" 2>/dev/null |
		awk '{ all++ } /\(prot64\)/ { n = split($6, a, ":"); print "0x" a[2] }
		     END { print all + 0 > "'"$tmp/all"'" }' >"$tmp/rips"
	rm -f "$tmp/data"
	grep -q '^run.sh: pass' "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
	grep -m1 '^run.sh:' "$tmp/err" | sed 's/^/# /'
	topf=$(addr2line -f -e "$kernel" <"$tmp/rips" | awk 'NR % 2 == 1' | sort | uniq -c |
		sort -rn | head -8 | awk '{ printf("%s%s:%d", (NR > 1 ? "," : ""), $2, $1) }')
	printf 'emulated\trules=%s\tall=%s\tprot64=%s\ttop=%s\n' "$rules" "$(cat "$tmp/all")" \
		"$(wc -l <"$tmp/rips")" "$topf"
done
