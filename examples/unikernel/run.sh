#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run.sh - boot the libtlbpol test kernel in QEMU and print its table.
#
# `run.sh --help` prints the options and the exit status (usage() below).
# Options are read by util-linux getopt (Debian: essential, always there).
set -u

usage() {
	cat <<'EOF'
usage: run.sh [-n CPUS] [--tcg | --kvm] [--rules NAMES] [--planted]
              [--kernel FILE] [--machine microvm|q35|pc] [--timeout SECONDS]
              [--log FILE] [-- KERNEL ARGS...]

Boots the libtlbpol test kernel in QEMU: six workloads under the naive,
linux and default rule masks, a stale-TLB check on the hardware, one table.

  -n, --cpus CPUS  vCPUs (-smp), default 4
  --tcg, --kvm     accelerator; default KVM when /dev/kvm can be opened, else
                   TCG.  TCG is the correctness oracle (a skipped flush really
                   leaves a stale translation in its software TLB); KVM
                   measures cost.
  --rules NAMES    also run this rule mask, as a fourth row "custom" after
                   naive, linux and default (the kernel argument rules=NAMES).
                   The names are every libtlbpol CLI's, read by
                   tlbpol_rules_parse(): the sets default, linux, none (or
                   naive) and all, rule names such as lazy-unmap, and '-' to
                   remove: "default,-lazy-unmap", "linux+receiver-merge".
                   An unknown name: exit 2.
  --planted        boot kernel-planted.elf (the last CPU drops its flushes)
                   and succeed only if the kernel reports stale TLB reads
  --kernel FILE    image to boot (default: build/kernel.elf, built if missing)
  --machine M      QEMU machine: microvm (default), q35 or pc
  --timeout S      give up after S seconds (default 240 under TCG, 900 KVM)
  --log FILE       keep the serial output in FILE too
  -h, --help       print this and exit
  KERNEL ARGS      key=value: rounds= iters= ring= reclaim= dgpages= tick=
                   cpus= planted= ipidelay= pvflush= rules= stamplook=
                   reuse= reusewin= only= swap= warm= idle=hlt
                   tags=percpu:N|global:BITS|off pcid=;
                   defaults depend on the accelerator (README.md)

Exit status: 0 pass (with --planted: the stale reads were caught);
1 stale TLB reads (without --planted) or none caught (with it);
2 a bad option or a kernel argument the kernel refused (an unknown rule
name), or the kernel reported a failure or a failed claim, crashed, hung
or reset; 77 skipped (no qemu-system-x86_64, not an x86-64 build host, or
--kvm without a usable /dev/kvm).
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
cpus=4
accel=auto
planted=0
kernel=
machine=microvm
tmo=
log=
rules=

# util-linux getopt: `getopt -T` exits 4 where long options are understood.
getopt -T >/dev/null 2>&1
if [ $? -ne 4 ]; then
	echo "run.sh: needs util-linux getopt (Debian: apt-get install util-linux)" >&2
	exit 2
fi
opts=$(getopt -n run.sh -o hn: \
	--long help,cpus:,tcg,kvm,rules:,planted,kernel:,machine:,timeout:,log: -- "$@") || {
	echo "run.sh: try 'run.sh --help'" >&2
	exit 2
}
eval set -- "$opts"
while :; do
	case $1 in
	-n|--cpus) cpus=$2; shift 2 ;;
	--tcg) accel=tcg; shift ;;
	--kvm) accel=kvm; shift ;;
	--rules)
		case $2 in
		''|*' '*) echo "run.sh: --rules '$2': give a list of names without spaces, e.g. default,-lazy-unmap" >&2; exit 2 ;;
		esac
		rules=$2; shift 2 ;;
	--planted) planted=1; shift ;;
	--kernel) kernel=$2; shift 2 ;;
	--machine) machine=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	*) echo "run.sh: getopt returned $1" >&2; exit 2 ;;
	esac
done
args=$*

qemu=${QEMU:-qemu-system-x86_64}
if ! command -v "$qemu" >/dev/null 2>&1; then
	echo "run.sh: $qemu not found: install QEMU (Debian: apt-get install qemu-system-x86); skipping" >&2
	exit 77
fi

if [ -z "$kernel" ]; then
	if [ $planted = 1 ]; then kernel=$here/build/kernel-planted.elf; else kernel=$here/build/kernel.elf; fi
	if [ ! -f "$kernel" ]; then
		"$here/build.sh" "$here/build" || exit $?
	fi
fi
[ -f "$kernel" ] || { echo "run.sh: no kernel $kernel" >&2; exit 2; }

# KVM when /dev/kvm is a character device that opens read-write (it may
# exist without being usable).  Test -c first: a bare `3<>/dev/kvm` on a
# machine without it creates /dev/kvm as an empty regular file, which then
# "opens" and sends every later run to a KVM that is not there.
kvm_usable() { [ -c /dev/kvm ] && ( exec 3<>/dev/kvm ) 2>/dev/null; }
if [ $accel = auto ]; then
	if kvm_usable; then accel=kvm; else accel=tcg; fi
elif [ $accel = kvm ] && ! kvm_usable; then
	echo "run.sh: --kvm, but /dev/kvm cannot be opened; skipping" >&2
	exit 77
fi
if [ $accel = kvm ]; then
	# -cpu host would pass IA32_ARCH_CAPABILITIES, which a nested KVM may
	# refuse to set ("failed to set MSR 0x10a"); the kernel needs none of it.
	cpu_model=${UK_KVM_CPU:-host,-arch-capabilities}
	accel_opt="-accel kvm"
	# The defaults first: an argument given later takes its place.
	args="rounds=10 iters=32${args:+ $args}"
	[ -n "$tmo" ] || tmo=900
	# /dev/kvm without VMX or SVM in the CPU flags is a software
	# hypervisor (kvm-pvm, for nested hosts: the guest kernel runs
	# deprivileged under shadow page tables).  Its privileged
	# instructions and page-table writes trap, so cycle counts measure
	# the hypervisor more than the guest: say which one ran.
	if [ -d /sys/module/kvm_pvm ] && ! grep -qw -e vmx -e svm /proc/cpuinfo; then
		accel_note=", KVM is kvm-pvm (no VMX/SVM: shadow paging)"
	fi
else
	# Multi-threaded TCG: one host thread per vCPU, so vCPUs really run
	# (and miss flushes) concurrently.  qemu64 has no x2APIC: xAPIC MMIO.
	# Not -cpu max: TCG implements neither PCID nor INVPCID (QEMU's
	# target/i386/cpu.c lists both as missing from TCG's features; QEMU
	# 7.2 here: "TCG doesn't support requested feature"), so max would
	# add nothing the kernel uses.
	cpu_model=qemu64
	accel_opt="-accel tcg,thread=multi"
	# Waiting vCPUs sleep (hlt) instead of spinning: with more vCPUs than
	# host cores, spinning ones only slow down the ones doing the work.
	idle=idle=hlt
	# TCG translates guest code the first time it runs: an unmeasured
	# round of each mask first, so that the masks are timed warm alike.
	case " $args " in *" warm="*) ;; *) args="warm=1${args:+ $args}" ;; esac
	[ -n "$tmo" ] || tmo=240
fi

case $machine in
# microvm: no PCI, no firmware to speak of, boots PVH in milliseconds; it has
# an ISA serial port and ACPI (the MADT lists the CPUs).
microvm) mopt="-M microvm,x-option-roms=off,rtc=off" ;;
*) mopt="-M $machine" ;;
esac

# cpus=N: the kernel's fallback when the machine has no ACPI MADT.  rules=
# last, so that --rules wins over a rules= among the kernel arguments.
args="$args cpus=$cpus ${idle:-}${rules:+ rules=$rules}"
echo "run.sh: $machine, $accel ($cpu_model)${accel_note:-}, $cpus vCPUs, $(basename "$kernel"), args \"$args\"" >&2

# The kernel exits through isa-debug-exit: QEMU's status is (code << 1) | 1.
# -no-reboot turns a triple fault into an exit with status 0; timeout ends a
# hang (status 124).  Either way the run failed.
out=${log:-$(mktemp)}
st=$(mktemp)
# POSIX sh has no PIPESTATUS: the status goes through a file.
# shellcheck disable=SC2086
{
	timeout "$tmo" "$qemu" $mopt $accel_opt -cpu "$cpu_model" -smp "$cpus" -m 128M \
		-display none -monitor none -serial stdio -no-reboot -nodefaults \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$kernel" -append "$args" </dev/null
	echo $? >"$st"
} | tee "$out"
qs=$(cat "$st")
rm -f "$st"
[ -n "$log" ] || rm -f "$out"

case $qs in
1) what=pass ;;        # EXIT_PASS
3) what=stale ;;       # EXIT_STALE: stale TLB reads seen
5) what=fail ;;        # EXIT_FAIL: anomalies, leaked frames
7) what=panic ;;       # EXIT_PANIC: exception, boot failure
9) what=claim ;;       # EXIT_CLAIM: clean run, a claim did not hold
11) what=usage ;;      # EXIT_USAGE: a kernel argument refused (rules=)
0) what=reset ;;       # triple fault or reboot (-no-reboot)
124) what=timeout ;;
*) what="qemu exit status $qs" ;;
esac

if [ "$what" = usage ]; then
	echo "run.sh: the kernel refused its arguments (\"$args\"): see its lines above; 'run.sh --help'" >&2
	exit 2
fi
if [ $planted = 1 ]; then
	case $what in
	stale) echo "run.sh: planted bug caught: the kernel reported stale TLB reads" >&2; exit 0 ;;
	pass|claim) echo "run.sh: planted bug NOT caught (no stale reads reported)" >&2; exit 1 ;;
	*) echo "run.sh: planted run failed: $what" >&2; exit 2 ;;
	esac
fi
case $what in
pass) echo "run.sh: pass" >&2; exit 0 ;;
stale) echo "run.sh: STALE TLB reads reported" >&2; exit 1 ;;
*) echo "run.sh: failed: $what" >&2; exit 2 ;;
esac
