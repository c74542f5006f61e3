#!/bin/sh
# SPDX-License-Identifier: MIT
#
# build.sh [OUTDIR] - build the libtlbpol test kernel for QEMU (PVH boot).
#
# Compiles the freestanding core (../../lib/core/*.c) with the flags of the
# top-level -Dfreestanding=true build plus what ring-0 code needs, compiles
# the kernel, and links both with linker.ld (no libc, no libgcc):
#   OUTDIR/kernel.elf          the test kernel
#   OUTDIR/kernel-planted.elf  the same with the planted bug (the last CPU
#                              drops every flush): the stale check must fire
# OUTDIR defaults to examples/unikernel/build.  CC and LD may be overridden.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$here/build}
CC=${CC:-gcc}
LD=${LD:-ld}

case $(uname -m) in
x86_64) ;;
*) echo "build.sh: needs an x86-64 host compiler" >&2; exit 77 ;;
esac

mkdir -p "$out/gen/tlbpol" "$out/obj/core" "$out/obj/kernel" "$out/obj/planted"

# <tlbpol/version.h>: meson generates it from version.h.in; do the same.
version=$(sed -n "s/^ *version *: *'\([0-9][0-9.]*\)'.*/\1/p" "$top/meson.build" | head -n 1)
[ -n "$version" ] || { echo "build.sh: no version in $top/meson.build" >&2; exit 1; }
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}; patch=${rest#*.}
sed -e "s/@MAJOR@/$major/" -e "s/@MINOR@/$minor/" -e "s/@PATCH@/$patch/" \
    -e "s/@VERSION@/$version/" "$top/include/tlbpol/version.h.in" > "$out/gen/tlbpol/version.h.tmp"
if ! cmp -s "$out/gen/tlbpol/version.h.tmp" "$out/gen/tlbpol/version.h" 2>/dev/null; then
	mv "$out/gen/tlbpol/version.h.tmp" "$out/gen/tlbpol/version.h"
else
	rm -f "$out/gen/tlbpol/version.h.tmp"
fi

cc_include=$($CC -print-file-name=include)
# The freestanding build's flags (meson.build: -ffreestanding -nostdlib
# -nostdinc -idirafter <gcc include>, -fno-tree-loop-distribute-patterns,
# -fno-stack-protector), plus, for ring 0:
#  -mno-red-zone        interrupts push onto the interrupted code's stack
#  -mgeneral-regs-only  interrupt stubs save only general registers, and the
#                       core runs inside the shootdown interrupt
#  -fno-pie -mcmodel=small  linked at 1 MiB, identity-mapped (linker.ld)
common="-std=c11 -O2 -g -Wall -Wextra -ffreestanding -nostdlib -nostdinc -idirafter $cc_include
 -fno-stack-protector -fno-tree-loop-distribute-patterns -fno-pie -fno-pic -mcmodel=small
 -mno-red-zone -mgeneral-regs-only -fno-asynchronous-unwind-tables -fno-omit-frame-pointer
 -I$top/include -I$out/gen"
core_flags="$common -fvisibility=hidden -DTLBPOL_BUILDING -falign-functions=64"
kernel_flags="$common -I$here"

objs_core=
for src in "$top"/lib/core/*.c; do
	o="$out/obj/core/$(basename "$src" .c).o"
	# shellcheck disable=SC2086
	$CC $core_flags -c "$src" -o "$o"
	objs_core="$objs_core $o"
done

build_kernel() { # objdir extra-flags
	objs=
	for src in "$here"/boot.S "$here"/*.c; do
		o="$1/$(basename "$src").o"
		# shellcheck disable=SC2086
		$CC $kernel_flags $2 -c "$src" -o "$o"
		objs="$objs $o"
	done
	echo "$objs"
}

k_objs=$(build_kernel "$out/obj/kernel" "")
p_objs=$(build_kernel "$out/obj/planted" "-DUK_PLANTED_BUG")
# shellcheck disable=SC2086
$LD -nostdlib -static -T "$here/linker.ld" -z max-page-size=0x1000 -z noexecstack \
	-o "$out/kernel.elf" $k_objs $objs_core
# shellcheck disable=SC2086
$LD -nostdlib -static -T "$here/linker.ld" -z max-page-size=0x1000 -z noexecstack \
	-o "$out/kernel-planted.elf" $p_objs $objs_core
echo "built $out/kernel.elf and $out/kernel-planted.elf"
