#!/usr/bin/env bash
# Install what the build and the tests need, if missing (Debian, as root).
set -euo pipefail

pkgs=(meson ninja-build pkg-config gcc g++ libc6-dev libcmocka-dev libnuma-dev
      liburcu-dev python3 binutils
      cpio         # lab/validate/tcg.sh: the guest's initramfs
      rustc cargo rust-clippy  # bindings/rust: Debian 12's Rust (1.63), the oldest the crates support; clippy
      python3-mypy # bindings/python: its test type-checks the package (--strict)
      python3-pip python3-setuptools python3-wheel python3-build  # bindings/python: pip and wheel installs
      groff-base man-db  # the man pages: rendered with groff -ww, indexed by mandb
      clang        # a hosted-only call in kernel code fails with clang as with gcc
      dpkg-dev debhelper dh-python lintian xz-utils  # debian/: the packages built, installed, used
      gcc-aarch64-linux-gnu gcc-riscv64-linux-gnu)  # the kernel core archive, cross
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: run as root (or install: ${missing[*]})" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# QEMU boots examples/unikernel in the tests; where it cannot be installed,
# those tests are not registered and the rest runs.
if ! command -v qemu-system-x86_64 >/dev/null && [ "$(id -u)" -eq 0 ]; then
	echo "deps: installing qemu-system-x86 (for examples/unikernel)" >&2
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends qemu-system-x86; } \
		>/dev/null 2>&1 || echo "deps: qemu-system-x86 could not be installed; unikernel tests will be skipped" >&2
fi
