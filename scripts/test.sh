#!/usr/bin/env bash
# Every test: install what is missing, build, run the suite; again under
# ASan+UBSan (less the packaging and Python tests, which load the library
# into uninstrumented programs, the QEMU boots, and the policy comparison
# `versus`); the concurrent tests under TSan; and the kernel core
# archive (freestanding build) with its link and disassembly tests, for x86-64 in two
# code models and, cross-compiled, for arm64 and riscv64.  Prints one "N passed, N failed" line at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh

passed=0
failed=0
skipped=0

# run_suite DIR [meson test args...]: build DIR, run its tests, add up results.
run_suite() {
	local dir=$1
	shift
	ninja -C "$dir" >/dev/null
	local rc=0
	meson test -C "$dir" --print-errorlogs "$@" || rc=$?
	local counts
	counts=$(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
)
	read -r p f s <<<"$counts"
	passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); fi
}

setup() { # setup DIR [meson options...]
	local dir=$1
	shift
	if [ -f "$dir/meson-private/coredata.dat" ] &&
		meson setup --reconfigure "$dir" "$@" >/dev/null 2>&1; then
		return
	fi
	rm -rf "$dir"
	meson setup "$dir" "$@" >/dev/null
}

echo "== plain build"
setup build
run_suite build

echo "== ASan + UBSan"
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 run_suite build-asan --no-suite packaging --no-suite bindings --no-suite unikernel --no-suite unikernel-kvm --no-suite versus

echo "== TSan (concurrent tests)"
setup build-tsan -Db_sanitize=thread -Db_lundef=false
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" run_suite build-tsan --suite concurrency

echo "== freestanding core"
setup build-freestanding -Dfreestanding=true
run_suite build-freestanding
setup build-freestanding-kernel -Dfreestanding=true -Dcode_model=kernel
run_suite build-freestanding-kernel

# The kernel core archive for arm64 and riscv64 (cross/*.ini): built, and
# disassembled by its check.
for arch in aarch64 riscv64; do
	echo "== kernel core archive, $arch"
	setup "build-cross-$arch" --cross-file "cross/$arch-none-elf.ini" -Dfreestanding=true
	run_suite "build-cross-$arch"
done

echo
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
