#!/bin/sh
# SPDX-License-Identifier: MIT
#
# build.sh [OUTDIR [CORE_ARCHIVE]] - build the libtlbpol test kernel for
# QEMU (PVH boot).
#
# Links the kernel core archive, libtlbpol-core.a, as any kernel would: the
# one given (meson passes the one it built), or one built here with
# `meson setup -Dfreestanding=true` in OUTDIR/core.  Compiles the kernel and
# links both with linker.ld (no libc, no libgcc):
#   OUTDIR/kernel.elf          the test kernel
#   OUTDIR/kernel-planted.elf  the same with the planted bug (the last CPU
#                              drops every flush): the stale check must fire
# OUTDIR defaults to examples/unikernel/build.  CC and LD may be overridden.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$here/build}
core_a=${2:-}
CC=${CC:-gcc}
LD=${LD:-ld}

case $(uname -m) in
x86_64) ;;
*) echo "build.sh: needs an x86-64 host compiler" >&2; exit 77 ;;
esac

mkdir -p "$out/gen/tlbpol" "$out/obj/kernel" "$out/obj/planted"

# <tlbpol/version.h>: meson generates it from version.h.in; do the same.
version=$(sed -n "s/^ *version *: *'\([0-9][0-9.]*\)'.*/\1/p" "$top/meson.build" | head -n 1)
[ -n "$version" ] || { echo "build.sh: no version in $top/meson.build" >&2; exit 1; }
major=${version%%.*}; rest=${version#*.}; minor=${rest%%.*}; patch=${rest#*.}
sed -e "s/@MAJOR@/$major/" -e "s/@MINOR@/$minor/" -e "s/@PATCH@/$patch/" \
    -e "s/@VERSION@/$version/" \
    -e "s|@FREESTANDING@|#define TLBPOL_FREESTANDING 1 /* the kernel core archive */|" \
    "$top/include/tlbpol/version.h.in" > "$out/gen/tlbpol/version.h.tmp"
if ! cmp -s "$out/gen/tlbpol/version.h.tmp" "$out/gen/tlbpol/version.h" 2>/dev/null; then
	mv "$out/gen/tlbpol/version.h.tmp" "$out/gen/tlbpol/version.h"
else
	rm -f "$out/gen/tlbpol/version.h.tmp"
fi

if [ -z "$core_a" ]; then
	[ -f "$out/core/build.ninja" ] ||
		meson setup "$out/core" "$top" -Dfreestanding=true >/dev/null
	ninja -C "$out/core" >/dev/null
	core_a=$out/core/libtlbpol-core.a
fi
[ -f "$core_a" ] || { echo "build.sh: no core archive $core_a" >&2; exit 1; }

cc_include=$($CC -print-file-name=include)
# The kernel's own flags: those the core archive is built with (meson.build:
# -ffreestanding -nostdlib -nostdinc, no FP/SIMD, no red zone, no stack
# protector), and:
#  -fno-pie -mcmodel=small  linked at 1 MiB, identity-mapped (linker.ld);
#                       the core archive's PC-relative code links there too
common="-std=c11 -O2 -g -Wall -Wextra -ffreestanding -nostdlib -nostdinc -idirafter $cc_include
 -fno-stack-protector -fno-tree-loop-distribute-patterns -fno-pie -fno-pic -mcmodel=small
 -mno-red-zone -mgeneral-regs-only -fno-asynchronous-unwind-tables -fno-omit-frame-pointer
 -I$top/include -I$out/gen"
kernel_flags="$common -I$here"

build_kernel() { # objdir extra-flags
	objs=
	for src in "$here"/boot.S "$here"/*.c "$top"/support/mem.c; do
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
	-o "$out/kernel.elf" $k_objs "$core_a"
# shellcheck disable=SC2086
$LD -nostdlib -static -T "$here/linker.ld" -z max-page-size=0x1000 -z noexecstack \
	-o "$out/kernel-planted.elf" $p_objs "$core_a"
echo "built $out/kernel.elf and $out/kernel-planted.elf"
