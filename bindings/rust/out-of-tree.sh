#!/bin/sh
# SPDX-License-Identifier: MIT
#
# out-of-tree.sh debian|current (--prefix PREFIX | --source SRCDIR --work DIR)
#
# The Rust crates as a user gets them: copied out of the repository (only
# tlbpol-sys/ and tlbpol/, so no path leads back to the sources), used as
# path dependencies by two user crates, against an installed libtlbpol found
# through pkg-config, with one Rust toolchain (toolchain.sh):
#   app-std:   a binary on the default features (the shared library) whose
#              build.rs sets the rpath from DEP_TLBPOL_LIBDIR, as README.md
#              shows; it builds an engine, submits an unmap and prints the
#              decision, run with no LD_LIBRARY_PATH.
#   app-static: the same program on the `static` feature, no build.rs: it
#              must not need libtlbpol.so at all.
#   app-nostd: a #![no_std] library on tlbpol without default features
#              (libtlbpol-core.a through pkg-config tlbpol-core), run from a
#              small std binary; no libtlbpol.so may be needed.
# Then checks that no build script output names the source tree, and runs
# tlbpol-sys's own tests (the layout checks) against the installed header.
#
# --prefix PREFIX: an installed libtlbpol (PREFIX/lib/pkgconfig/tlbpol.pc);
# --source SRCDIR --work DIR: configure SRCDIR in DIR/meson (kept, so a
# second run only relinks) with --prefix=DIR/prefix --libdir=lib
# -Dtests=false and install it there.  Cargo's home, target directory and
# the crates live in a temporary directory, removed at the end; --offline:
# nothing here needs a registry.  Exits 77 when the cargo is not installed.
set -eu

usage="usage: out-of-tree.sh debian|current (--prefix PREFIX | --source SRCDIR --work DIR)"
mode=${1:?$usage}
shift
here=$(cd "$(dirname "$0")" && pwd)
prefix='' src='' work=''
while [ $# -gt 0 ]; do
	case $1 in
	--prefix) prefix=$2; shift 2 ;;
	--source) src=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
case $mode in
debian | current) ;;
*) echo "$usage" >&2; exit 2 ;;
esac
. "$here/toolchain.sh"
select_toolchain "$mode"

if [ -z "$prefix" ]; then
	if [ -z "$src" ] || [ -z "$work" ]; then
		echo "$usage" >&2
		exit 2
	fi
	if ! command -v meson >/dev/null 2>&1; then
		echo "no meson to install libtlbpol with: skipped"
		exit 77
	fi
	mkdir -p "$work"
	work=$(cd "$work" && pwd)
	prefix=$work/prefix
	if [ ! -f "$work/meson/build.ninja" ]; then
		# A setup that failed half-way would make this one fail too.
		rm -rf "$work/meson"
		meson setup "$work/meson" "$src" --prefix="$prefix" --libdir=lib \
			-Dtests=false >"$work/setup.log" 2>&1 ||
			{ cat "$work/setup.log"; exit 1; }
	fi
	rm -rf "$prefix"
	meson install -C "$work/meson" >"$work/install.log" 2>&1 ||
		{ cat "$work/install.log"; exit 1; }
fi
prefix=$(cd "$prefix" && pwd)
for f in lib/pkgconfig/tlbpol.pc lib/pkgconfig/tlbpol-core.pc include/tlbpol/tlbpol.h; do
	if [ ! -f "$prefix/$f" ]; then
		echo "FAIL: $prefix has no $f" >&2
		exit 1
	fi
done
if ! command -v pkg-config >/dev/null 2>&1; then
	echo "no pkg-config: skipped"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlbpol-rust-oot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# Only the two crates: the build scripts must not need anything else of
# the repository.
mkdir "$tmp/crates"
for c in tlbpol-sys tlbpol; do
	tar -C "$here" --exclude=target -cf - "$c" | tar -C "$tmp/crates" -xf -
done

# The user's environment: the prefix through pkg-config only.
unset TLBPOL_SRC_DIR TLBPOL_LIB_DIR TLBPOL_INCLUDE_DIR LD_LIBRARY_PATH CARGO_TARGET_DIR || true
PKG_CONFIG_PATH=$prefix/lib/pkgconfig
CARGO_HOME=$tmp/cargo-home
CARGO_INCREMENTAL=0
CARGO_PROFILE_DEV_DEBUG=0
export PKG_CONFIG_PATH CARGO_HOME CARGO_INCREMENTAL CARGO_PROFILE_DEV_DEBUG
# rustup's proxies find their toolchains through RUSTUP_HOME, which
# defaults to one next to CARGO_HOME's default.
if [ -z "${RUSTUP_HOME:-}" ] && [ -d "$HOME/.rustup" ]; then
	RUSTUP_HOME=$HOME/.rustup
	export RUSTUP_HOME
fi

mkdir -p "$tmp/app-std/src" "$tmp/app-static/src" "$tmp/app-nostd/src/bin"
cat >"$tmp/app-std/Cargo.toml" <<'EOF'
[package]
name = "app-std"
version = "0.1.0"
edition = "2021"

[dependencies]
tlbpol = { path = "../crates/tlbpol" }
# Only for DEP_TLBPOL_LIBDIR in build.rs (cargo gives a links crate's
# metadata to the build scripts of its direct dependents).
tlbpol-sys = { path = "../crates/tlbpol-sys", default-features = false }

[workspace]
EOF
# build.rs as README.md has it.
sed -n '/^<!-- user-build-rs -->$/,/^```$/p' "$here/README.md" | sed '1,2d;$d' >"$tmp/app-std/build.rs"
if ! grep -q DEP_TLBPOL_LIBDIR "$tmp/app-std/build.rs"; then
	echo "FAIL: README.md has no build.rs after <!-- user-build-rs -->" >&2
	exit 1
fi
cat >"$tmp/app-std/src/main.rs" <<'EOF'
use tlbpol::*;

struct Quiet;
impl Host for Quiet {
    fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {}
    fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
}

fn main() -> Result<()> {
    let eng = Engine::new(&Config::new(2, Arch::X86_64), Quiet)?;
    let space = eng.open_as(1)?;
    let mut cpu = eng.take_cpus()?.next().unwrap();
    cpu.switch(Some(&space))?;
    let ev = Event::new(EventKind::Unmap).va(0x7f00_0000_0000).old_pte(Pte::PRESENT | Pte::ACCESSED);
    let d = cpu.submit(&space, &ev)?;
    println!("libtlbpol {}: {}", version(), d);
    Ok(())
}
EOF

cp "$tmp/app-std/src/main.rs" "$tmp/app-static/src/"
cat >"$tmp/app-static/Cargo.toml" <<'EOF'
[package]
name = "app-static"
version = "0.1.0"
edition = "2021"

[dependencies]
tlbpol = { path = "../crates/tlbpol", features = ["static"] }

[workspace]
EOF

cat >"$tmp/app-nostd/Cargo.toml" <<'EOF'
[package]
name = "app-nostd"
version = "0.1.0"
edition = "2021"

[dependencies]
tlbpol = { path = "../crates/tlbpol", default-features = false }

[workspace]
EOF
cat >"$tmp/app-nostd/src/lib.rs" <<'EOF'
//! A kernel's use: no std, the engine in static memory.
#![no_std]
use core::ptr::addr_of_mut;
use tlbpol::*;

struct Quiet;
impl Host for Quiet {
    fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {}
    fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
}
static HOST: Quiet = Quiet;
const NEED: usize = engine_mem_size(1, 4, 64, 32, 0);
static mut MEM: EngineMem<NEED> = EngineMem::new();

/// The decision on an unmap, as (action, reason) names.
pub fn unmap_decision() -> Result<(&'static str, &'static str)> {
    let cfg = Config::new(1, Arch::X86_64).max_as(4).batch_pages(64).flush_ceiling(32);
    // SAFETY: the only reference to MEM; unmap_decision() runs once.
    let mem = unsafe { &mut *addr_of_mut!(MEM) };
    let eng = Engine::init(&cfg, &HOST, mem.bytes())?;
    let space = eng.open_as(1)?;
    let ev = Event::new(EventKind::Unmap).va(0x40_0000).old_pte(Pte::PRESENT | Pte::ACCESSED);
    let d = eng.decide(&space, 0, &ev)?;
    Ok((d.action.name(), d.reason.name()))
}
EOF
cat >"$tmp/app-nostd/src/bin/run.rs" <<'EOF'
fn main() {
    let (action, reason) = app_nostd::unmap_decision().expect("no_std engine");
    println!("no_std core: {} ({})", action, reason);
}
EOF

echo "== $("$cargo" --version), $(${RUSTC:-rustc} --version); libtlbpol in $prefix"
fail=0
for app in app-std app-static app-nostd; do
	echo "== $app"
	(cd "$tmp/$app" && "$cargo" build --offline --target-dir "$tmp/target-$app")
	case $app in
	app-nostd) exe=$tmp/target-$app/debug/run ;;
	*) exe=$tmp/target-$app/debug/$app ;;
	esac
	if ! out=$(env -u LD_LIBRARY_PATH "$exe" 2>&1); then
		echo "FAIL: $app did not run without LD_LIBRARY_PATH:" >&2
		echo "$out" >&2
		fail=1
		continue
	fi
	echo "$out"
	needed=$(readelf -d "$exe" 2>/dev/null | grep NEEDED || true)
	case $app:$needed in
	app-std:*libtlbpol.so*) ;;
	app-std:*) echo "FAIL: app-std does not use libtlbpol.so" >&2; fail=1 ;;
	app-static:*libtlbpol* | app-nostd:*libtlbpol*)
		echo "FAIL: the $app build needs the shared library" >&2
		fail=1
		;;
	esac
	if ! echo "$out" | grep -q "(unmap)"; then
		echo "FAIL: $app printed no decision on the unmap" >&2
		fail=1
	fi
	# The build scripts said what they read: nothing of a source tree.
	if grep -l -e 'meson\.build' -e 'version\.h\.in' -e 'lib/core' \
		"$tmp/target-$app"/debug/build/tlbpol-sys-*/output; then
		echo "FAIL: tlbpol-sys's build script read a source tree (files above)" >&2
		fail=1
	fi
done

# tlbpol-sys's own tests on the copy: the layout and signature checks
# against the installed tlbpol.h and version.h, both feature sets.
for features in "" --no-default-features; do
	echo "== tlbpol-sys's tests, installed header ${features:-(hosted)}"
	(cd "$tmp/crates/tlbpol-sys" &&
		"$cargo" test --offline --target-dir "$tmp/target-sys" $features) || fail=1
done
exit $fail
