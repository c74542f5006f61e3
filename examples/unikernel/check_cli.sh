#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_cli.sh RUN_SH [KERNEL] - run.sh's command line, as every libtlbpol
# CLI's (tests/check_cli.sh checks the others):
#   --help                 usage on stdout, exit 0
#   --no-such-option       exit 2
#   --rules ''             exit 2, before anything boots
# and, with KERNEL (needs QEMU; 77 without it):
#   --rules default,-no-such-rule
#                          the kernel refuses it (tlbpol_rules_parse()):
#                          "RESULT: USAGE" on the console, run.sh exits 2
#   only=custom (no rules=) the same: no such rule set in this boot
#   tags=global:1          the same: not an allocator tags= names
set -u

run=$1
kernel=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

bad() {
	echo "FAIL: $*"
	fail=1
}

sh "$run" --help >"$tmp/out" 2>"$tmp/err"
st=$?
[ $st -eq 0 ] || bad "--help: exit $st, want 0"
grep -q '^usage: run.sh' "$tmp/out" || bad "--help: no usage on stdout"
grep -q -- '--rules NAMES' "$tmp/out" || bad "--help: --rules not described"
[ -s "$tmp/err" ] && bad "--help: wrote to stderr: $(cat "$tmp/err")"
[ $fail -eq 0 ] && echo "ok: --help"

sh "$run" --no-such-option >"$tmp/out" 2>&1
st=$?
if [ $st -eq 2 ]; then echo "ok: unknown option, exit 2"; else bad "unknown option: exit $st, want 2"; fi

sh "$run" --rules '' >"$tmp/out" 2>&1
st=$?
if [ $st -eq 2 ]; then echo "ok: --rules '', exit 2"; else bad "--rules '': exit $st, want 2"; fi

# refused WHAT PATTERN ARGS...: the kernel, booted under TCG with ARGS,
# refuses them: "RESULT: USAGE" and PATTERN on the console, run.sh exit 2.
refused() {
	what=$1 pattern=$2
	shift 2
	sh "$run" --tcg -n 2 --timeout 60 --kernel "$kernel" "$@" >"$tmp/out" 2>"$tmp/err"
	st=$?
	if [ $st -eq 77 ]; then
		echo "skip: $(cat "$tmp/err")"
		exit 77
	fi
	if [ $st -eq 2 ] && grep -q '^RESULT: USAGE' "$tmp/out" && grep -q "$pattern" "$tmp/out"; then
		echo "ok: $what refused by the kernel, exit 2"
	else
		cat "$tmp/out" "$tmp/err"
		bad "$what: exit $st, want 2 with RESULT: USAGE"
	fi
}

if [ -n "$kernel" ]; then
	refused '--rules default,-no-such-rule' 'not a rule mask' --rules default,-no-such-rule
	# only=NAME names a rule set of the boot; "custom" exists only with rules=.
	refused 'only=custom without rules=' 'not a rule set of this boot' -- only=custom
	# tags= names an allocator the core accepts.
	refused 'tags=global:1' 'tags=: percpu:N' -- tags=global:1
fi
exit $fail
