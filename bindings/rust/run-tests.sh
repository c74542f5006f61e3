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
# lib/core.  Exits 77 (meson's "skipped") when that cargo is not installed.
# CARGO_TARGET_DIR should be set (meson: under its build directory), so
# that nothing is written into the source tree.
set -eu

mode=${1:?usage: run-tests.sh debian|current}
here=$(cd "$(dirname "$0")" && pwd)

case $mode in
debian)
	cargo=/usr/bin/cargo
	if [ ! -x "$cargo" ] || [ ! -x /usr/bin/rustc ]; then
		echo "no Debian cargo/rustc in /usr/bin: skipped"
		exit 77
	fi
	# Debian's cargo would otherwise run the first rustc on PATH, which may
	# be a newer one (rustup's).
	RUSTC=/usr/bin/rustc
	RUSTDOC=/usr/bin/rustdoc
	export RUSTC RUSTDOC
	;;
current)
	# The first cargo on PATH, or rustup's, that is not Debian's.
	debian=$(readlink -f /usr/bin/cargo 2>/dev/null || echo /usr/bin/cargo)
	cargo=
	for c in "$(command -v cargo || true)" "${CARGO_HOME:-$HOME/.cargo}/bin/cargo"; do
		if [ -n "$c" ] && [ -x "$c" ] && [ "$(readlink -f "$c")" != "$debian" ]; then
			cargo=$c
			break
		fi
	done
	if [ -z "$cargo" ]; then
		echo "no cargo besides /usr/bin/cargo: skipped"
		exit 77
	fi
	# rustup's proxies pick the toolchain; a RUSTC from the caller would
	# pair this cargo with another compiler.
	unset RUSTC RUSTDOC || true
	PATH=$(dirname "$cargo"):$PATH
	export PATH
	;;
*)
	echo "usage: run-tests.sh debian|current" >&2
	exit 2
	;;
esac

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
