#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-tests.sh debian|current: the cargo tests of the Rust binding with one
# Rust toolchain, as meson's 'bindings' suite runs them (bindings/rust/meson.build).
#   debian:  /usr/bin/cargo with /usr/bin/rustc (Debian 12's Rust 1.63, the
#            oldest this binding supports)
#   current: the cargo on PATH (or in ~/.cargo/bin), if it is another one
# Each runs the tests twice: with the shared library (TLBPOL_LIB_DIR, which
# meson points at its build directory) and without default features, which
# builds the crate no_std and links the freestanding core compiled from
# lib/core; then cargo doc, and cargo clippy where that toolchain has it,
# both with warnings as errors.  Exits 77 (meson's "skipped") when that
# cargo is not installed (toolchain.sh).
# CARGO_TARGET_DIR should be set (meson: under its build directory), so
# that nothing is written into the source tree.
set -eu

mode=${1:?usage: run-tests.sh debian|current}
here=$(cd "$(dirname "$0")" && pwd)

case $mode in
debian | current) ;;
*)
	echo "usage: run-tests.sh debian|current" >&2
	exit 2
	;;
esac
. "$here/toolchain.sh"
select_toolchain "$mode"

if [ -n "${CARGO_TARGET_DIR:-}" ]; then
	# One target directory per toolchain: their artifacts do not mix.
	CARGO_TARGET_DIR=$CARGO_TARGET_DIR/$mode
	export CARGO_TARGET_DIR
fi

# Builds from scratch: no incremental state to write, no debug info to
# link; the tests do not need either.
CARGO_INCREMENTAL=0
CARGO_PROFILE_DEV_DEBUG=0
export CARGO_INCREMENTAL CARGO_PROFILE_DEV_DEBUG

cd "$here"
echo "== $("$cargo" --version), $(${RUSTC:-rustc} --version)"
echo "== hosted: the shared library (TLBPOL_LIB_DIR=${TLBPOL_LIB_DIR:-unset})"
"$cargo" test --offline --locked
echo "== no_std: the freestanding core built from lib/core"
"$cargo" test --offline --locked -p tlbpol -p tlbpol-sys --no-default-features

# Warnings are errors in the documentation (broken intra-doc links, in
# particular to items of the other feature set) and, where this toolchain
# has clippy, in the lints (the build scripts included).
echo "== cargo doc, both feature sets"
RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings"
export RUSTDOCFLAGS
"$cargo" doc --offline --locked --no-deps
"$cargo" doc --offline --locked --no-deps -p tlbpol -p tlbpol-sys --no-default-features
if [ "$clippy" = yes ]; then
	echo "== cargo clippy, both feature sets"
	cargo_clippy --offline --locked --all-targets -- -D warnings
	cargo_clippy --offline --locked --all-targets -p tlbpol -p tlbpol-sys --no-default-features -- -D warnings
else
	echo "== no clippy for this toolchain (Debian: package rust-clippy): not run"
fi
