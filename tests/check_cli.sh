#!/bin/sh
# SPDX-License-Identifier: MIT
# check_cli.sh NAME=PROGRAM [ARG ...] ...: every command-line tool answers
# --help on standard output with status 0, takes `--rules default` (the one
# spelling of the default mask, read by tlbpol_rules_parse()) for a short
# run, and refuses an unknown rule name with status 2.
# Each tool is given as name=path, then the arguments of its short run,
# up to the next name=path.
set -u
fail=0
run() { # name path args...
	name=$1 prog=$2
	shift 2
	if ! "$prog" --help >/dev/null 2>&1; then
		echo "FAIL: $name --help did not exit 0"; fail=1
	elif [ -z "$("$prog" --help 2>/dev/null)" ]; then
		echo "FAIL: $name --help printed nothing on stdout"; fail=1
	fi
	if ! "$prog" "$@" --rules default >/dev/null 2>&1; then
		echo "FAIL: $name $* --rules default did not exit 0"; fail=1
	fi
	"$prog" "$@" --rules no-such-rule >/dev/null 2>&1
	rc=$?
	if [ "$rc" -ne 2 ]; then
		echo "FAIL: $name --rules no-such-rule exited $rc, not 2"; fail=1
	fi
	[ "$fail" -eq 0 ] && echo "ok: $name"
}
name= prog= args=
for a in "$@"; do
	case "$a" in
	*=/*)
		if [ -n "$name" ]; then
			# shellcheck disable=SC2086
			run "$name" "$prog" $args
		fi
		name=${a%%=*} prog=${a#*=} args= ;;
	*) args="$args $a" ;;
	esac
done
# shellcheck disable=SC2086
[ -n "$name" ] && run "$name" "$prog" $args
exit $fail
