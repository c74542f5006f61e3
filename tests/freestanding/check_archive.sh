#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_archive.sh OBJDUMP NM CPU ARCHIVE - is the kernel core archive
# linkable into a kernel as is?
#  1. No FP/SIMD instruction: no operand names an FP or vector register
#     (x86-64: %xmm/%ymm/%zmm/%mm/%st; aarch64: b/h/s/d/q/v registers;
#     riscv64: f-registers, and no F/D instruction), since a kernel saves
#     only general registers when an interrupt lands in the core.
#  2. Nothing from outside: every symbol the archive's objects use is
#     defined by one of them (no libc, no libgcc, no __stack_chk_*).  memcpy,
#     memmove, memset and memcmp would be allowed (every kernel has them, and
#     a compiler may call them for freestanding code), and are reported.
# Prints what it found; exits 1 on a violation.
set -eu
objdump=$1 nm=$2 cpu=$3 ar=$4

# Branch and address operands print their target as a bare hex number and
# <symbol+off> ("b.ne b8 <layout+0xb8>"): drop them, or b8 looks like a
# register.
dis=$("$objdump" -d --no-show-raw-insn "$ar" | sed -E 's/[0-9a-f]+ <[^>]*>//g')
insns=$(printf '%s\n' "$dis" | grep -cE '^ *[0-9a-f]+:' || true)
case $cpu in
x86_64)  fp='%(xmm|ymm|zmm)[0-9]+|%mm[0-7]|%st(\(|\b)' ;;
aarch64) fp='[[:space:],{]([bhsdqv]([0-9]|[12][0-9]|3[01]))(\.|,|$|[[:space:]]|\[|})' ;;
riscv64) fp='[[:space:],(]f(t|s|a)?[0-9]+([,)]|$)|^ *[0-9a-f]+:[[:space:]]+f([a-df-z]|e[a-mo-z])[a-z.]*[[:space:]]' ;;
*) echo "check_archive: unknown cpu $cpu" >&2; exit 2 ;;
esac
bad=$(printf '%s\n' "$dis" | grep -E '^ *[0-9a-f]+:' | grep -E "$fp" || true)
if [ -n "$bad" ]; then
	echo "FP/SIMD instructions in $ar:"
	printf '%s\n' "$bad" | head -n 20
	echo "($(printf '%s\n' "$bad" | wc -l) in all)"
	exit 1
fi
echo "$insns instructions, none FP/SIMD ($cpu)"

defined=$("$nm" -g --defined-only "$ar" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u)
used=$("$nm" -u "$ar" 2>/dev/null | awk 'NF >= 2 && $1 == "U" { print $2 }' | sort -u)
outside=$(printf '%s\n' "$used" | grep -vxF "$(printf '%s\n' "$defined")" | grep -v '^$' || true)
allowed=$(printf '%s\n' "$outside" | grep -xE 'memcpy|memmove|memset|memcmp' || true)
other=$(printf '%s\n' "$outside" | grep -vxE 'memcpy|memmove|memset|memcmp' | grep -v '^$' || true)
if [ -n "$other" ]; then
	echo "symbols from outside the archive:"
	printf '%s\n' "$other"
	exit 1
fi
if [ -n "$allowed" ]; then
	echo "uses the compiler's freestanding helpers: $(printf '%s ' $allowed)"
fi
echo "every symbol it uses is its own"
