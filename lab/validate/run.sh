#!/bin/sh
# SPDX-License-Identifier: MIT
# Validate tlbpol-sim against the real kernel: run real programs, count the
# kernel's TLB shootdowns, record them under strace, replay the traces with
# tlbpol-sim, print predicted against measured.  See README.md here.
#
#   lab/validate/run.sh                 measure and record into a new directory
#                                         under /tmp, replay, print the table
#   lab/validate/run.sh --update        the same, and rewrite data/ (counts,
#                                         traces, raw recordings)
#   lab/validate/run.sh --replay-only   run nothing: replay data/'s traces and
#                                         compare with data/'s counts
#   lab/validate/run.sh --reconvert     convert data/raw/ again with the current
#                                         converter, replay (--update: into data/)
#
# Other options go to validate.py: --only NAME,NAME  --build DIR  --sim PATH
# --converter tree|PATH (it must pass its --self-test)  --no-perf  --no-attrib
# --quiet-wait S  --check  --work DIR.  The simulator: --sim, else
# $TLBPOL_SIM, else --build/$TLBPOL_BUILD (default build/)/lab/sim/tlbpol-sim.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
mode=measure
args=
for a in "$@"; do
	case $a in
	--replay-only) mode=replay ;;
	--reconvert) mode=reconvert ;;
	*) args="$args $(printf "'%s'" "$(printf %s "$a" | sed "s/'/'\\\\''/g")")" ;;
	esac
done
eval "set -- $args"
exec "$py" "$here/validate.py" "$mode" "$@"
