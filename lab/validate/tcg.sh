#!/bin/sh
# SPDX-License-Identifier: MIT
# A real Linux kernel that flushes remote TLBs by IPI, on any machine:
# Debian 12's own kernel booted under QEMU's software emulation (TCG) with
# 2 vCPUs, running tlb_flush2 and ipi_rtt, the two measurements of
# lab/validate that the host kernel cannot give where it flushes by
# hypercall (a PVM or Hyper-V guest: its "TLB" row stays 0).
#
#   lab/validate/tcg.sh [--runs N] [--seconds S] [--work DIR] [--out FILE]
#
# Prints, and with --out writes, key=value lines: one per ipi_rtt run
# ("ipi_rtt mode=g|m ...": -d -g, the round trip and what the receiver
# loses; -d -m, both CPUs shooting at each other) and one per tlb_flush2
# run ("tf2 mode=1t|2t|2t-apart ops_per_s=... ops=... tlb=..."), tlb being
# the guest's TLB row across the run; then per run the 2T/1T throughput
# ratio and interrupts per operation, and the round trips' medians.
# lab/validate/data/tcg.txt is one such run (docs/results.md).
#
# The kernel and busybox are Debian's packages, fetched with apt-get
# download into --work (default /tmp/tlbpol-tcg) and not installed.  Under
# TCG the guest kernel's code is real (Linux 6.1's arch/x86/mm/tlb.c, its
# IPIs counted in its own /proc/interrupts) but its timing is QEMU's, not a
# CPU's: an IPI is a vCPU thread kicking another out of its translation
# loop, a page fault thousands of translated instructions.  Compare the
# model with it through this machine's own profile, never with hardware.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
runs=3
secs=3
work=/tmp/tlbpol-tcg
out=
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "tcg.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
done
case $runs$secs in *[!0-9]*|'') echo "tcg.sh: --runs and --seconds take whole numbers" >&2; exit 2 ;; esac
for p in qemu-system-x86_64 cpio gzip apt-get dpkg-deb "${CC:-cc}"; do
	command -v "$p" >/dev/null || { echo "tcg.sh: needs $p (scripts/deps.sh installs qemu and cpio)" >&2; exit 77; }
done
mkdir -p "$work"
cd "$work"

# Debian's kernel image: linux-image-amd64 is a meta-package naming it.
fetch() { # PACKAGE -> the .deb's path
	ls "$1"_*.deb 2>/dev/null | head -1 | grep . && return 0
	# As root, apt's sandbox user cannot write here: download as root.
	set -- "$1" -qq -o APT::Sandbox::User=root
	apt-get download "$@" >&2 || { apt-get update -qq >&2 && apt-get download "$@" >&2; }
	ls "$1"_*.deb | head -1
}
if [ ! -f kernel/vmlinuz ]; then
	meta=$(fetch linux-image-amd64)
	img=$(dpkg-deb -f "$meta" Depends | sed -n 's/.*\(linux-image-[0-9][^ ,]*\).*/\1/p')
	[ -n "$img" ] || { echo "tcg.sh: $meta names no kernel image" >&2; exit 1; }
	rm -rf kx && dpkg-deb -x "$(fetch "$img")" kx
	mkdir -p kernel && cp kx/boot/vmlinuz-* kernel/vmlinuz && rm -rf kx
fi
if [ ! -f busybox ]; then
	rm -rf bx && dpkg-deb -x "$(fetch busybox-static)" bx && cp bx/bin/busybox busybox && rm -rf bx
fi

# The guest's programs, static: it has no libc.
rm -rf root && mkdir -p root/bin root/proc root/sys root/dev
cp busybox root/bin/
"${CC:-cc}" -O2 -static -pthread -o root/bin/tlb_flush2 "$here/tlb_flush2.c"
"${CC:-cc}" -O2 -static -pthread -o root/bin/ipi_rtt "$here/ipi_rtt.c"
cat > root/init <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys
# The TLB row, summed over CPUs.
tlb() { awk '/TLB:/{s=0; for(i=2;i<=NF;i++) if (\$i ~ /^[0-9]+\$/) s+=\$i; print s}' /proc/interrupts; }
echo "tcg kernel=\$(uname -r) cpus=\$(nproc) cpu=\$(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1 | tr ' ' _)"
i=0
while [ \$i -lt $runs ]; do
	echo "tcg ipi_rtt mode=g run=\$i \$(ipi_rtt -d -g)"
	echo "tcg ipi_rtt mode=m run=\$i \$(ipi_rtt -d -m)"
	for m in 1t 2t 2t-apart; do
		case \$m in 1t) a="-t 1" ;; 2t) a="-t 2" ;; *) a="-a -t 2" ;; esac
		b=\$(tlb); o=\$(tlb_flush2 \$a -s $secs); e=\$(tlb)
		echo "tcg tf2 mode=\$m run=\$i \$o tlb=\$((e - b))"
	done
	i=\$((i + 1))
done
echo "tcg done"
poweroff -f
EOF
chmod +x root/init
(cd root && find . | cpio -o -H newc 2>/dev/null | gzip) > initrd.gz

# Multi-threaded TCG: each vCPU a host thread, so the two really run at
# once; qemu64 (no x2APIC, no kvm-clock, no paravirtual flush): the guest
# sends its shootdowns as xAPIC IPIs, native_flush_tlb_multi().
tmo=$((120 + runs * (9 * secs + 120)))
log=$work/console.log
timeout "$tmo" qemu-system-x86_64 -accel tcg,thread=multi -smp 2 -m 1024 -cpu qemu64 \
	-kernel kernel/vmlinuz -initrd initrd.gz -append "console=ttyS0 quiet panic=-1" \
	-nographic -no-reboot -monitor none -serial stdio -display none </dev/null >"$log" 2>&1 || true
grep -q '^tcg done' "$log" || { echo "tcg.sh: the guest did not finish (timeout ${tmo}s); $log" >&2; exit 1; }
res=$(tr -d '\r' < "$log" | sed -n 's/^tcg //p' | grep -v '^done')
# Run by run: 2T/1T throughput and TLB-row interrupts per operation;
# medians of the round trips.
sum=$(printf '%s\n' "$res" | awk '
	function val(k,  i, a) { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } }
	function med(v, n,  i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t } return v[int((n + 1) / 2)] }
	$1 == "tf2" { r = val("run"); m = val("mode"); ops[m, r] = val("ops_per_s"); ipo[m, r] = val("tlb") / val("ops"); runs = r + 1 }
	$1 == "ipi_rtt" && val("mode") == "g" { g[++ng] = val("rtt_ns"); rv[ng] = val("recv_ns") }
	$1 == "ipi_rtt" && val("mode") == "m" { mm[++nm] = val("rtt_ns") }
	END {
		for (r = 0; r < runs; r++) {
			printf "summary run=%d ratio_2t_1t=%.2f ratio_apart_1t=%.2f ipis_per_op_2t=%.3f ipis_per_op_1t=%.5f\n",
				r, ops["2t", r] / ops["1t", r], ops["2t-apart", r] / ops["1t", r], ipo["2t", r], ipo["1t", r]
		}
		printf "summary ipi_rtt_median rtt_ns=%d recv_ns=%d mutual_rtt_ns=%d\n", med(g, ng), med(rv, ng), med(mm, nm)
	}')
res=$(printf '%s\n%s\n' "$res" "$sum")
hdr="# lab/validate/tcg.sh --runs $runs --seconds $secs, $(date -u +%Y-%m-%dT%H:%M:%SZ); host: $(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs, $(uname -r), $(qemu-system-x86_64 --version | head -1)"
printf '%s\n%s\n' "$hdr" "$res"
[ -z "$out" ] || printf '%s\n%s\n' "$hdr" "$res" > "$out"
