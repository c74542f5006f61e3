#!/bin/sh
# SPDX-License-Identifier: MIT
# Record a program under strace with its page faults, and convert it to a
# version 3 trace (FORMAT.md "Page faults"):
#
#   lab/trace/record-faults.sh DIR NAME COMMAND [ARGS...]
#
# writes DIR/NAME.strace (strace with strace-options), DIR/NAME.faults
# (the faults: perf script text) and DIR/NAME.trace (strace2trace.py
# --faults; version 2 when faults could not be recorded).  The faults are
# the tracepoints exceptions:page_fault_user and page_fault_kernel
# (address, error code, ip) of `perf record` run around strace; the
# converter keeps those of the threads strace traced (so not strace's
# own).  perf needs root, or perf_event_paranoid at most 1 with access to
# tracefs.
#
# Clocks: strace -ttt prints CLOCK_REALTIME; the perf here (6.1) refuses
# `-k CLOCK_REALTIME` ("wrong clockid (0)"), so perf stamps with
# CLOCK_MONOTONIC and the offset between the two clocks is written at the
# top of the faults file: perf's own "reference time" header (both clocks
# read together at the start of the recording), else one read here just
# before.  Monotonic time does not jump, and the recording is short, so
# one offset maps the whole of it.
#
# Where perf or the tracepoints are missing, it says so and records
# without faults.
set -eu
[ $# -ge 3 ] || { echo "usage: record-faults.sh DIR NAME COMMAND [ARGS...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
dir=$1
name=$2
shift 2
out=$dir/$name
events='-e exceptions:page_fault_user -e exceptions:page_fault_kernel'
# $events and the strace options are lists of options: split on purpose.
# shellcheck disable=SC2086
if ! command -v perf > /dev/null 2>&1; then
	why="perf is not installed (Debian: linux-perf)"
elif ! err=$(perf record -q -k CLOCK_MONOTONIC $events -o "$out.perf" -- true 2>&1); then
	why="perf cannot record exceptions:page_fault_user here: $(printf '%s' "$err" | head -n 1)"
else
	why=
fi
rm -f "$out.perf" "$out.perf.old"
opts=$(cat "$here/strace-options")
if [ -n "$why" ]; then
	echo "record-faults: $why; recording without page faults (copy-on-write shootdowns will not be in the trace)" >&2
	# shellcheck disable=SC2086
	strace $opts -o "$out.strace" "$@"
	"$py" "$here/strace2trace.py" -o "$out.trace" "$out.strace"
	exit 0
fi
offset=$("$py" -c 'import time; print(time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
# shellcheck disable=SC2086
perf record -q -k CLOCK_MONOTONIC -m 16M $events -o "$out.perf" -- strace $opts -o "$out.strace" "$@"
ref=$(perf report -i "$out.perf" --header-only 2>/dev/null | grep '^# reference time:' || true)
if [ -n "$ref" ]; then
	# "# reference time: DATE = S.US (TOD) = S.NS (monotonic)"
	offset=$(printf '%s\n' "$ref" | "$py" -c '
import re, sys
m = re.search(r"= (\d+)\.(\d+) \(TOD\) = (\d+)\.(\d+) \(monotonic\)", sys.stdin.read())
ns = lambda s, f: int(s) * 10**9 + int(f[:9].ljust(9, "0"))
print(ns(m.group(1), m.group(2)) - ns(m.group(3), m.group(4)))')
fi
{
	echo "# tlbpol-faults v1 realtime-minus-monotonic-ns $offset"
	perf script -i "$out.perf" --ns -F tid,time,event,trace 2>/dev/null
} > "$out.faults"
lost=$(perf report -i "$out.perf" --stats 2>/dev/null | awk '/LOST/ { n += $NF } END { print n + 0 }')
[ "$lost" = 0 ] || echo "record-faults: perf lost $lost events: the faults file misses some" >&2
"$py" "$here/strace2trace.py" --faults "$out.faults" -o "$out.trace" "$out.strace"
rm -f "$out.perf.old"
echo "record-faults: $out.strace $out.faults $out.trace"
