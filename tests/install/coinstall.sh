#!/bin/bash
# SPDX-License-Identifier: MIT
#
# coinstall.sh SOURCE_ROOT - the hosted library and the kernel core archive
# installed into one prefix serve both kinds of user.
#
# 1. Installs the hosted build, then a -Dfreestanding=true -Dcode_model=kernel
#    build, into the same prefix (the order a distribution or a user doing
#    both would take; the second install must not take anything from the
#    first: before, its <tlbpol/version.h> hid tlbpol_engine_new()).
# 2. Builds and runs a hosted program with `pkg-config tlbpol` (the shared
#    library, tlbpol_engine_new()).
# 3. Compiles a kernel object with `pkg-config --cflags tlbpol-core` (and
#    ring-0 flags), links it with the installed libtlbpol-core.a in a
#    partial link (ld -r) and checks that nothing of libtlbpol is left
#    undefined (only mem*, which a kernel provides).
# 4. With those flags and no -Werror, a call of a hosted-only function does
#    not compile, with gcc and (where installed) clang.
# 5. Where Debian's riscv64 cross gcc is installed: configuring the cross
#    archive prints no meson WARNING, and its installed copy has no debug
#    sections (the build tree's keeps them).
#
# Exit: 0 pass, 1 fail, 77 skip (meson, ninja, gcc or pkg-config missing).
set -u
src=$(cd "${1:?usage: coinstall.sh SOURCE_ROOT}" && pwd) || exit 1
for tool in meson ninja gcc pkg-config nm ld; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
status=0
fail() { echo "FAIL: $*" >&2; status=1; }
run() { "$@" > "$tmp/log" 2>&1 || { cat "$tmp/log"; echo "FAIL: $*" >&2; exit 1; }; }

# 1. Two installs, one prefix.
run meson setup "$tmp/b-hosted" "$src" --prefix="$prefix" --libdir=lib -Dtests=false
run meson install -C "$tmp/b-hosted"
run meson setup "$tmp/b-kernel" "$src" --prefix="$prefix" --libdir=lib -Dtests=false \
	-Dfreestanding=true -Dcode_model=kernel
run meson install -C "$tmp/b-kernel"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
for pc in tlbpol tlbpol-core; do
	pkg-config --exists "$pc" || fail "no $pc.pc in the prefix"
done
[ -f "$prefix/lib/libtlbpol.so.0" ] && [ -f "$prefix/lib/libtlbpol-core.a" ] ||
	fail "the prefix lacks libtlbpol.so.0 or libtlbpol-core.a"
echo "installed into one prefix: $(cd "$prefix" && find . -type f -name '*tlbpol*' ! -path './share/man/*' | sort | tr '\n' ' ')"

# 2. A hosted program.
cat > "$tmp/hosted.c" <<'C'
#include <stdio.h>
#include <tlbpol/tlbpol.h>

static void flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx; (void)cpu; (void)f;
}

static void send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	(void)ctx; (void)from; (void)t;
}

int main(void)
{
	static const struct tlbpol_ops ops = {
		.size = sizeof(ops), .flush_local = flush_local, .send_ipi = send_ipi,
	};
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng;
	int ret;

	tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.ops = &ops;
	ret = tlbpol_engine_new(&cfg, &eng);
	if (ret)
		return 1;
	printf("hosted: libtlbpol %s, engine built\n", tlbpol_version());
	tlbpol_engine_free(eng);
	return 0;
}
C
# shellcheck disable=SC2046 # pkg-config prints words
if gcc -std=c11 -Wall -Wextra -Werror -o "$tmp/hosted" "$tmp/hosted.c" \
	$(pkg-config --cflags --libs tlbpol) -Wl,-rpath,"$prefix/lib" > "$tmp/log" 2>&1; then
	"$tmp/hosted" || fail "the hosted program failed"
else
	cat "$tmp/log"; fail "the hosted program does not build against the shared prefix"
fi

# 3. A kernel object.
core_cflags=$(pkg-config --cflags tlbpol-core)
case $core_cflags in *-DTLBPOL_FREESTANDING*-mcmodel=kernel*) ;;
*) fail "tlbpol-core.pc's Cflags lack the freestanding define or the code model: $core_cflags" ;;
esac
cat > "$tmp/kern.c" <<'C'
#include <tlbpol/tlbpol.h>
int kern_tlb_init(void *mem, size_t len, const struct tlbpol_config *cfg,
		  struct tlbpol_engine **out);
int kern_tlb_init(void *mem, size_t len, const struct tlbpol_config *cfg,
		  struct tlbpol_engine **out)
{
	return tlbpol_engine_init(out, mem, len, cfg);
}
C
ring0="-ffreestanding -nostdlib -fno-stack-protector -mno-red-zone -mgeneral-regs-only"
# shellcheck disable=SC2086
if gcc -std=c11 -Wall -Wextra -Werror $ring0 $core_cflags -c -o "$tmp/kern.o" "$tmp/kern.c" \
	> "$tmp/log" 2>&1; then
	# shellcheck disable=SC2046
	ld -r -o "$tmp/kern-all.o" "$tmp/kern.o" $(pkg-config --libs tlbpol-core) ||
		fail "the partial link with libtlbpol-core.a failed"
	undef=$(nm -u "$tmp/kern-all.o" | awk '{print $2}' | grep -v '^mem\(set\|cpy\|move\|cmp\)$')
	[ -z "$undef" ] || fail "the kernel object still needs: $undef"
	nm "$tmp/kern-all.o" | grep -q ' T tlbpol_engine_init$' ||
		fail "the partial link did not take the core from the archive"
	echo "kernel object: linked with libtlbpol-core.a, needs only mem*"
else
	cat "$tmp/log"; fail "the kernel object does not compile with tlbpol-core.pc's Cflags"
fi

# 4. A hosted-only call in kernel code: an error, no -Werror needed.
for cc in gcc clang; do
	command -v "$cc" >/dev/null 2>&1 || { echo "no $cc: not checked with it"; continue; }
	sed 's/return tlbpol_engine_init(out, mem, len, cfg);/(void)mem; (void)len; return tlbpol_engine_new(cfg, out);/' \
		"$tmp/kern.c" > "$tmp/bad.c"
	# shellcheck disable=SC2086
	if "$cc" -std=c11 $core_cflags -c -o "$tmp/bad.o" "$tmp/bad.c" > "$tmp/log" 2>&1; then
		fail "$cc compiles tlbpol_engine_new() in kernel code"
	elif ! grep -q "hosted build only" "$tmp/log"; then
		cat "$tmp/log"; fail "$cc rejects the call, but not as hosted-only"
	else
		echo "$cc: tlbpol_engine_new() in kernel code is a compile error"
	fi
done

# 5. The riscv64 cross archive: no meson warning, installed stripped.
if command -v riscv64-linux-gnu-gcc >/dev/null 2>&1 && command -v riscv64-linux-gnu-objdump >/dev/null 2>&1; then
	run meson setup "$tmp/rv" "$src" --cross-file "$src/cross/riscv64-none-elf.ini" \
		-Dfreestanding=true --prefix="$tmp/rvprefix" --libdir=lib
	if grep -i "warning" "$tmp/log"; then
		fail "configuring the riscv64 archive prints a warning"
	fi
	run meson install -C "$tmp/rv"
	built=$(riscv64-linux-gnu-objdump -h "$tmp/rv/libtlbpol-core.a" | grep -c '\.debug_info')
	inst=$(riscv64-linux-gnu-objdump -h "$tmp/rvprefix/lib/libtlbpol-core.a" | grep -c '\.debug_')
	[ "$built" -gt 0 ] || fail "the build tree's riscv64 archive has no debug info to keep"
	[ "$inst" -eq 0 ] || fail "the installed riscv64 archive keeps $inst debug sections"
	echo "riscv64 archive: $(stat -c %s "$tmp/rv/libtlbpol-core.a") bytes built," \
		"$(stat -c %s "$tmp/rvprefix/lib/libtlbpol-core.a") installed (no debug sections)"
else
	echo "no riscv64-linux-gnu-gcc: the cross archive is not checked"
fi
[ $status -eq 0 ] && echo "PASS: one prefix holds the hosted library and the kernel archive"
exit $status
