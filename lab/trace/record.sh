#!/bin/sh
# SPDX-License-Identifier: MIT
# Re-record the traces in traces/ from real programs (see FORMAT.md).
#
#   lab/trace/record.sh [build-ninja] [java-jshell] [python-threads] [zero-cow]
#                                   (default: build-ninja java-jshell)
#
# Needs strace, git, meson, ninja, gcc and a JDK with jshell
# (openjdk-17-jdk-headless); zero-cow also perf (linux-perf), as root.
# Works in a fresh directory under /tmp, kept afterwards (its path is
# printed) with the raw strace output.  With
# SAMPLES=1 it also remakes the golden-test pair in samples/ from the
# first 300 lines of each raw recording (build-ninja-300 is converted with
# --v1: the golden test of version 1).  Each trace keeps at most
# MAX_EVENTS events (default 50000, about 1.5 MB).  python-threads remakes
# only the v2 golden-test pairs samples/python-threads{,-memory}.*.
# zero-cow remakes the version 3 sample samples/zero-cow.{strace,faults,
# trace}: lab/validate/zero_cow.c (2 threads, zero-page copies and
# MADV_DONTNEED) recorded with its page faults by record-faults.sh (perf).
#
# strace is run with the options in strace-options (one line), the ones
# the converter needs: -f -ttt -T and the memory, process and blocking
# system calls.  lab/validate reads the same file.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
max=${MAX_EVENTS:-50000}
py=${PYTHON:-python3}
work=$(mktemp -d /tmp/tlbpol-trace.XXXXXX)
strace_cmd="strace $(cat "$here/strace-options")"

machine="Debian $(cat /etc/debian_version 2>/dev/null || echo '?'), Linux $(uname -r) $(uname -m), $(nproc) CPUs"
strace_v=$(strace -V | head -n 1)

convert() {     # name, then -c comment arguments
	name=$1; shift
	"$py" "$here/strace2trace.py" -n "$max" \
		-c "recorded: $when on $machine" \
		"$@" \
		-c "converted: strace2trace.py -n $max $name.strace" \
		-o "$here/traces/$name.trace" "$work/$name.strace"
	if [ "${SAMPLES:-0}" = 1 ]; then
		head -n 300 "$work/$name.strace" > "$here/samples/$name-300.strace"
		v1=
		[ "$name" != build-ninja ] || v1=--v1
		"$py" "$here/strace2trace.py" $v1 -o "$here/samples/$name-300.trace" \
			"$here/samples/$name-300.strace"
	fi
	"$py" "$here/checktrace.py" "$here/traces/$name.trace"
}

build_ninja() {
	# A from-scratch parallel build (ninja -j2) of this project, from a
	# clean export of the committed tree; only the build is traced.
	commit=$(git -C "$root" rev-parse --short HEAD)
	mkdir "$work/src"
	git -C "$root" archive HEAD | tar -x -C "$work/src"
	(cd "$work" && meson setup b src > setup.log)
	cmd="$strace_cmd -o build-ninja.strace ninja -C b -j2"
	when=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	(cd "$work" && $cmd > ninja.log)
	convert build-ninja \
		-c "command: $cmd" \
		-c "program: a from-scratch build of libtlbpol $commit (git archive HEAD > src; meson setup b src, not traced)" \
		-c "tools: $strace_v, ninja $(ninja --version), meson $(meson --version), $(gcc --version | head -n 1)"
}

java_jshell() {
	# jshell: a multithreaded JVM that starts a second JVM (its execution
	# agent) through jspawnhelper, evaluates two snippets, and exits.
	input='int x = 6*7;\nSystem.out.println(x);\n/exit\n'
	cmd="$strace_cmd -o java-jshell.strace jshell -q"
	when=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	# The format is the input itself, run exactly as the header states.
	# shellcheck disable=SC2059
	(cd "$work" && printf "$input" | $cmd > jshell.log 2>&1)
	convert java-jshell \
		-c "command: printf '$input' | $cmd" \
		-c "program: jshell (OpenJDK), two snippets on standard input; it runs a second JVM" \
		-c "tools: $strace_v, $(java -version 2>&1 | sed -n 2p)"
}

python_threads() {
	# The v2 golden-test pairs (samples/ only): CPython (-I -S: no site
	# files read), three threads that each build and drop big lists and
	# sleep, three times.  Recorded twice: with strace-options, and with
	# -e trace=memory only, which has no process events (the converter
	# then infers the address spaces, and says so).  Both recordings are
	# kept whole when under 600 lines.
	prog='import threading, time
def work():
    for _ in range(3):
        big = [list(range(50000)) for _ in range(4)]
        del big
        time.sleep(0.002)
threads = [threading.Thread(target=work) for _ in range(3)]
for t in threads: t.start()
for t in threads: t.join()'
	for variant in python-threads python-threads-memory; do
		if [ $variant = python-threads ]; then
			opts=$(cat "$here/strace-options")
		else
			opts='-f -ttt -T -e trace=memory'
		fi
		# $opts is a list of options: split on purpose.
		# shellcheck disable=SC2086
		(cd "$work" && strace $opts -o $variant.strace \
			/usr/bin/python3 -I -S -c "$prog")
		head -n 600 "$work/$variant.strace" > "$here/samples/$variant.strace"
		"$py" "$here/strace2trace.py" -o "$here/samples/$variant.trace" \
			"$here/samples/$variant.strace"
		"$py" "$here/checktrace.py" "$here/samples/$variant.trace"
	done
}

zero_cow() {
	# The v3 sample: a program whose shootdowns are copy-on-write faults
	# of the zero page, recorded with its page faults (perf).
	cc -O2 -pthread -o "$work/zero_cow" "$root/lab/validate/zero_cow.c"
	(cd "$work" && "$here/record-faults.sh" "$work" zero-cow ./zero_cow -t 2 -p 8 -n 10)
	for ext in strace faults trace; do
		cp "$work/zero-cow.$ext" "$here/samples/zero-cow.$ext"
	done
	"$py" "$here/checktrace.py" "$here/samples/zero-cow.trace"
}

[ $# -gt 0 ] || set -- build-ninja java-jshell
mkdir -p "$here/traces" "$here/samples"
for what in "$@"; do
	case $what in
	build-ninja) build_ninja ;;
	java-jshell) java_jshell ;;
	python-threads) python_threads ;;
	zero-cow) zero_cow ;;
	*) echo "record.sh: unknown trace $what" >&2; exit 2 ;;
	esac
done
echo "raw recordings kept in $work"
