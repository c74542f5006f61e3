#!/usr/bin/env bash
# Measured results that write themselves.
#
#   scripts/results.sh record [NAME|TOPIC...]  run measurements (default: all)
#                                              and keep their raw output in
#                                              lab/results/data/TOPIC/NAME.txt
#   scripts/results.sh render                  docs/results.md and README.md's
#                                              headline table from those files
#   scripts/results.sh check                   exit 1 unless both are up to date
#   scripts/results.sh list                    the measurements and their commands
#
# $TLBPOL_BUILD: the build directory record uses (default build/, configured
# and built here if missing).  The machine should be otherwise idle: every
# file records the steal time and load of its run, and docs/results.md
# prints them beside the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-/usr/bin/python3}
builddir=${TLBPOL_BUILD:-build}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
record)
	[ -f "$builddir/build.ninja" ] || meson setup "$builddir" >/dev/null
	ninja -C "$builddir" >/dev/null
	exec "$py" lab/results/record.py --build "$builddir" "$@"
	;;
render) exec "$py" lab/results/render.py "$@" ;;
check) exec "$py" lab/results/render.py --check "$@" ;;
list) exec "$py" lab/results/record.py --build "$builddir" --list ;;
*)
	sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
