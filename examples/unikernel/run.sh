#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run.sh - boot the libtlbpol test kernel in QEMU and print its table.
#
# usage: run.sh [-n CPUS] [--tcg | --kvm] [--planted] [--kernel FILE]
#               [--machine microvm|q35|pc] [--timeout SECONDS] [--log FILE]
#               [-- KERNEL ARGS...]
#
#   -n CPUS      vCPUs (-smp), default 4
#   --tcg/--kvm  accelerator; default KVM when /dev/kvm can be opened, else TCG.
#                TCG is the correctness oracle (a skipped flush really leaves
#                a stale translation in its software TLB); KVM measures cost.
#   --planted    boot kernel-planted.elf (the last CPU drops its flushes) and
#                succeed only if the kernel reports stale TLB reads
#   --kernel F   image to boot (default: build/kernel.elf, built if missing)
#   KERNEL ARGS  key=value: rounds= iters= ring= reclaim= dgpages= tick=
#                cpus= planted= idle=hlt; defaults depend on the accelerator
#
# Exit status: 0 pass (with --planted: the stale reads were caught),
# 1 stale TLB reads (without --planted) or none caught (with it),
# 2 the kernel reported a failure, a failed claim, crashed, hung or reset,
# 77 skipped (no qemu-system-x86_64, or not an x86-64 build host).
set -u

here=$(cd "$(dirname "$0")" && pwd)
cpus=4
accel=auto
planted=0
kernel=
machine=microvm
tmo=
log=

while [ $# -gt 0 ]; do
	case $1 in
	-n) cpus=$2; shift 2 ;;
	--tcg) accel=tcg; shift ;;
	--kvm) accel=kvm; shift ;;
	--planted) planted=1; shift ;;
	--kernel) kernel=$2; shift 2 ;;
	--machine) machine=$2; shift 2 ;;
	--timeout) tmo=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '3,27p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
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

# KVM when /dev/kvm opens read-write (it may exist without being usable).
if [ $accel = auto ]; then
	if ( exec 3<>/dev/kvm ) 2>/dev/null; then accel=kvm; else accel=tcg; fi
elif [ $accel = kvm ] && ! ( exec 3<>/dev/kvm ) 2>/dev/null; then
	echo "run.sh: --kvm, but /dev/kvm cannot be opened; skipping" >&2
	exit 77
fi
if [ $accel = kvm ]; then
	# -cpu host would pass IA32_ARCH_CAPABILITIES, which a nested KVM may
	# refuse to set ("failed to set MSR 0x10a"); the kernel needs none of it.
	cpu_model=${UK_KVM_CPU:-host,-arch-capabilities}
	accel_opt="-accel kvm"
	[ -n "$args" ] || args="rounds=10 iters=32"
	[ -n "$tmo" ] || tmo=900
else
	# Multi-threaded TCG: one host thread per vCPU, so vCPUs really run
	# (and miss flushes) concurrently.  qemu64 has no x2APIC: xAPIC MMIO.
	cpu_model=qemu64
	accel_opt="-accel tcg,thread=multi"
	# Waiting vCPUs sleep (hlt) instead of spinning: with more vCPUs than
	# host cores, spinning ones only slow down the ones doing the work.
	idle=idle=hlt
	[ -n "$tmo" ] || tmo=240
fi

case $machine in
# microvm: no PCI, no firmware to speak of, boots PVH in milliseconds; it has
# an ISA serial port and ACPI (the MADT lists the CPUs).
microvm) mopt="-M microvm,x-option-roms=off,rtc=off" ;;
*) mopt="-M $machine" ;;
esac

# cpus=N: the kernel's fallback when the machine has no ACPI MADT.
args="$args cpus=$cpus ${idle:-}"
echo "run.sh: $machine, $accel ($cpu_model), $cpus vCPUs, $(basename "$kernel"), args \"$args\"" >&2

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
9) what=claim ;;       # EXIT_CLAIM: clean run, an IPI claim did not hold
0) what=reset ;;       # triple fault or reboot (-no-reboot)
124) what=timeout ;;
*) what="qemu exit status $qs" ;;
esac

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
