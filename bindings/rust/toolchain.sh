# SPDX-License-Identifier: MIT
#
# Sourced by run-tests.sh and out-of-tree.sh: picks the cargo of one Rust
# toolchain, or exits 77 (meson's "skipped") when it is not installed.
#   select_toolchain debian   /usr/bin/cargo with /usr/bin/rustc (Debian 12's
#                             Rust 1.63, the oldest this binding supports)
#   select_toolchain current  the cargo on PATH (or in ~/.cargo/bin), if it
#                             is another one
# Sets $cargo, exports RUSTC/RUSTDOC/PATH to match, and sets $clippy to
# "yes" when this toolchain has clippy: cargo_clippy ARGS... runs it.

# shellcheck disable=SC2034 # clippy is read by the scripts that source this
select_toolchain() {
	clippy=no
	case $1 in
	debian)
		cargo=/usr/bin/cargo
		if [ ! -x "$cargo" ] || [ ! -x /usr/bin/rustc ]; then
			echo "no Debian cargo/rustc in /usr/bin: skipped"
			exit 77
		fi
		# Debian's cargo would otherwise run the first rustc on PATH, which
		# may be a newer one (rustup's).
		RUSTC=/usr/bin/rustc
		RUSTDOC=/usr/bin/rustdoc
		export RUSTC RUSTDOC
		# `cargo clippy` runs the first cargo-clippy on PATH, which may be
		# rustup's (another compiler's): only Debian's own (package
		# rust-clippy) counts, found first on PATH for that one command.
		if [ -x /usr/bin/cargo-clippy ] && [ -x /usr/bin/clippy-driver ]; then
			clippy=yes
		fi
		;;
	current)
		# The first cargo on PATH, or rustup's, that is not Debian's.
		_debian=$(readlink -f /usr/bin/cargo 2>/dev/null || echo /usr/bin/cargo)
		cargo=
		for _c in "$(command -v cargo || true)" "${CARGO_HOME:-$HOME/.cargo}/bin/cargo"; do
			if [ -n "$_c" ] && [ -x "$_c" ] && [ "$(readlink -f "$_c")" != "$_debian" ]; then
				cargo=$_c
				break
			fi
		done
		if [ -z "$cargo" ]; then
			echo "no cargo besides /usr/bin/cargo: skipped"
			exit 77
		fi
		# rustup's proxies pick the toolchain; a RUSTC from the caller
		# would pair this cargo with another compiler.
		unset RUSTC RUSTDOC || true
		PATH=$(dirname "$cargo"):$PATH
		export PATH
		if "$cargo" clippy --version >/dev/null 2>&1; then
			clippy=yes
		fi
		;;
	*)
		echo "unknown toolchain '$1' (debian|current)" >&2
		exit 2
		;;
	esac
}

cargo_clippy() {
	if [ "$cargo" = /usr/bin/cargo ]; then
		PATH=/usr/bin:$PATH "$cargo" clippy "$@"
	else
		"$cargo" clippy "$@"
	fi
}
