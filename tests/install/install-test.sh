#!/bin/bash
# SPDX-License-Identifier: MIT
#
# install-test.sh - install a private build of the source tree and build a
# consumer against the installed files only.
#
# Usage: install-test.sh SOURCE_ROOT CONSUMER_C [EXPECTED_VERSION]
#
# 1. Configures a fresh build of SOURCE_ROOT with --prefix=<tmp>/prefix (so
#    nothing depends on the outer build's prefix or options) and installs it.
# 2. With nothing but the installed headers and the installed tlbpol.pc
#    (PKG_CONFIG_PATH/PKG_CONFIG_LIBDIR point only at the installed
#    pkgconfig directory), compiles CONSUMER_C as C99 and C11 (-Wall -Wextra
#    -Werror -pedantic) and as C++11 and C++17 (-Wall -Wextra -Werror), links
#    each against the installed shared library and runs it with
#    LD_LIBRARY_PATH set to the installed libdir; then links it once against
#    the installed libtlbpol.a (pkg-config --static) and runs it with no
#    LD_LIBRARY_PATH.
# 3. Checks the installed shared library: SONAME libtlbpol.so.0, every
#    dynamic symbol it defines is tlbpol_* (or a version node TLBPOL_x.y)
#    and carries a TLBPOL_* version, every function the installed header
#    declares TLBPOL_API is exported, and nothing else is.
#
# 4. Checks the installed Python package (bindings/python): with only its
#    installed directory on PYTHONPATH (no TLBPOL_LIBRARY, LD_LIBRARY_PATH
#    or PKG_CONFIG_PATH), `python3 -c 'import tlbpol'` works for each
#    python3 (Debian's and the first on PATH), loads the library from the
#    installed libdir, and `python3 -m tlbpol explain` prints decisions with
#    their reasons and citations.
#
# 5. Runs the README's "Install into another prefix" block word for word (between its
#    install-and-link markers) in a copy of the source tree, with HOME in
#    the temporary directory and app.c the consumer, under `sh -eu`.
#
# Exit status: 0 pass, 1 fail, 77 skip (only when a required tool is missing).
# Set TLBPOL_KEEP_TMP=1 to keep the temporary directory.

set -u

if [ $# -lt 2 ]; then
	echo "usage: $0 SOURCE_ROOT CONSUMER_C [EXPECTED_VERSION]" >&2
	exit 1
fi
src=$(cd "$1" && pwd) || exit 1
consumer=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
want_version=${3:-}

for tool in meson ninja gcc g++ pkg-config nm readelf find grep sed sort comm tr mktemp; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: required tool '$tool' not found"
		exit 77
	fi
done

status=0
fail() {
	echo "FAIL: $*" >&2
	status=1
}
die() {
	echo "FAIL: $*" >&2
	status=1
	exit 1
}
step() {
	echo "--- $*"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlbpol-install.XXXXXX") || die "mktemp"
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
	if [ -n "${TLBPOL_KEEP_TMP:-}" ] || [ "$status" -ne 0 ]; then
		echo "(temporary files kept in $tmp)"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

prefix=$tmp/prefix
log=$tmp/build.log

# ---------------------------------------------------------------------------
step "configure, build and install a private build of $src into $prefix"
# -Dtests=false: the private build need not build or register the tests.
unset DESTDIR
if ! meson setup "$tmp/build" "$src" --prefix="$prefix" -Dtests=false \
	--buildtype=debugoptimized >"$log" 2>&1 ||
	! meson compile -C "$tmp/build" >>"$log" 2>&1 ||
	! meson install -C "$tmp/build" --no-rebuild >>"$log" 2>&1; then
	status=1
	cat "$log" >&2
	die "private build/install failed"
fi

# Where did the libdir end up (lib, lib64, lib/<multiarch>)?  Found from the
# installed .pc rather than assumed.
pcfile=$(find "$prefix" -name tlbpol.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pcfile" ] || { status=1; find "$prefix" >&2; die "no pkgconfig/tlbpol.pc installed"; }
pcdir=$(dirname "$pcfile")
libdir=$(dirname "$pcdir")
incdir=$prefix/include
echo "installed: pc=$pcfile libdir=$libdir"

for f in "$incdir/tlbpol/tlbpol.h" "$incdir/tlbpol/version.h" \
	"$libdir/libtlbpol.so" "$libdir/libtlbpol.so.0" "$libdir/libtlbpol.a"; do
	[ -e "$f" ] || fail "not installed: ${f#"$prefix"/}"
done
[ "$status" -eq 0 ] || die "missing installed files"

# ---------------------------------------------------------------------------
step "pkg-config on the installed tlbpol.pc only"
# The installed tlbpol.pc first; the system's .pc files only for what it
# Requires.private (libnuma, liburcu): no other tlbpol.pc can be found,
# since the installed directory comes first.
sys_pc=$(pkg-config --variable pc_path pkg-config 2>/dev/null || true)
export PKG_CONFIG_PATH=$pcdir
export PKG_CONFIG_LIBDIR=$pcdir${sys_pc:+:$sys_pc}
unset PKG_CONFIG_SYSROOT_DIR
pc_cflags=$(pkg-config --cflags tlbpol) || die "pkg-config --cflags tlbpol failed"
pc_libs=$(pkg-config --libs tlbpol) || die "pkg-config --libs tlbpol failed"
pc_static_libs=$(pkg-config --static --libs tlbpol) || die "pkg-config --static --libs tlbpol failed"
pc_version=$(pkg-config --modversion tlbpol) || die "pkg-config --modversion tlbpol failed"
echo "cflags: $pc_cflags"
echo "libs:   $pc_libs"
echo "static: $pc_static_libs"
if [ -n "$want_version" ] && [ "$pc_version" != "$want_version" ]; then
	fail "tlbpol.pc says version '$pc_version', the project is '$want_version'"
fi
case " $pc_libs " in
*" -L$libdir "*) ;;
*) fail "pkg-config --libs does not point at the installed libdir $libdir" ;;
esac

# The header must come from the prefix (gcc -M lists what was included).
# shellcheck disable=SC2086 # pkg-config output is a list of words
deps=$(echo '#include <tlbpol/tlbpol.h>' | gcc -M -x c - $pc_cflags 2>&1) ||
	die "including <tlbpol/tlbpol.h> with the installed cflags failed: $deps"
case "$deps" in
*"$incdir/tlbpol/tlbpol.h"*) ;;
*) fail "<tlbpol/tlbpol.h> did not resolve to $incdir/tlbpol/tlbpol.h: $deps" ;;
esac
case "$deps" in
*"$incdir/tlbpol/version.h"*) ;;
*) fail "<tlbpol/version.h> did not resolve to $incdir/tlbpol/version.h: $deps" ;;
esac

# ---------------------------------------------------------------------------
# build NAME COMPILER FLAGS... : build $tmp/NAME from the consumer.
build() {
	local name=$1 compiler=$2
	shift 2
	echo "$compiler $* -o $name"
	"$compiler" "$@" -o "$tmp/$name" >"$tmp/$name.log" 2>&1
	local rc=$?
	if [ $rc -ne 0 ]; then
		cat "$tmp/$name.log" >&2
		fail "$name: compile/link failed"
	fi
	return $rc
}

# run NAME [ENV...]: run $tmp/NAME and expect exit status 0.
run() {
	local name=$1
	shift
	if ! env "$@" "$tmp/$name"; then
		fail "$name: consumer failed"
		return 1
	fi
}

step "consumer as C and C++, linked against the installed shared library"
# shellcheck disable=SC2086
{
	cwarn="-Wall -Wextra -Werror -pedantic"
	build c99 gcc -std=c99 $cwarn -x c "$consumer" $pc_cflags $pc_libs &&
		run c99 LD_LIBRARY_PATH="$libdir"
	build c11 gcc -std=c11 $cwarn -x c "$consumer" $pc_cflags $pc_libs &&
		run c11 LD_LIBRARY_PATH="$libdir"
	build cxx11 g++ -std=c++11 -Wall -Wextra -Werror -x c++ "$consumer" $pc_cflags -x none $pc_libs &&
		run cxx11 LD_LIBRARY_PATH="$libdir"
	build cxx17 g++ -std=c++17 -Wall -Wextra -Werror -pedantic -x c++ "$consumer" $pc_cflags -x none $pc_libs &&
		run cxx17 LD_LIBRARY_PATH="$libdir"
}
# The dynamic consumers must really depend on the installed soname.
if [ -e "$tmp/c11" ]; then
	readelf -d "$tmp/c11" | grep -q 'NEEDED.*\[libtlbpol\.so\.0\]' ||
		fail "c11 consumer does not have NEEDED libtlbpol.so.0"
	# And resolve it from the prefix when run with LD_LIBRARY_PATH.
	if command -v ldd >/dev/null 2>&1; then
		where=$(LD_LIBRARY_PATH="$libdir" ldd "$tmp/c11" | grep 'libtlbpol\.so\.0')
		case "$where" in
		*"$libdir/libtlbpol.so.0"*) echo "resolved: $where" ;;
		*) fail "libtlbpol.so.0 not resolved from $libdir: $where" ;;
		esac
	fi
fi

step "consumer linked against the installed static library (pkg-config --static)"
# -Wl,-Bstatic makes -ltlbpol pick libtlbpol.a although libtlbpol.so is
# next to it; libc stays dynamic.
# shellcheck disable=SC2086
if build static gcc -std=c11 -Wall -Wextra -Werror -pedantic "$consumer" $pc_cflags \
	-Wl,-Bstatic $pc_static_libs -Wl,-Bdynamic; then
	if readelf -d "$tmp/static" | grep -q 'libtlbpol'; then
		fail "static consumer still depends on a shared libtlbpol"
	fi
	run static -u LD_LIBRARY_PATH
fi

# ---------------------------------------------------------------------------
step "installed shared library: SONAME and exported symbols"
so=$libdir/libtlbpol.so
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != "libtlbpol.so.0" ]; then
	fail "SONAME is '$soname', expected libtlbpol.so.0"
else
	echo "SONAME: $soname"
fi

nm -D --defined-only "$so" >"$tmp/nm.txt" || die "nm -D failed on $so"
: >"$tmp/exported"
while read -r _addr type sym; do
	[ -n "${sym:-}" ] || { sym=$type; type=$_addr; }
	name=${sym%%@*}
	case "$name" in
	TLBPOL_[0-9]*.[0-9]*)
		[ "$type" = "A" ] && continue # a version node itself
		;;
	esac
	case "$name" in
	tlbpol_*) ;;
	*)
		fail "exported symbol without the tlbpol_ prefix: $sym"
		continue
		;;
	esac
	case "$sym" in
	*@@TLBPOL_*|*@TLBPOL_*) ;;
	*) fail "exported symbol without a TLBPOL_* version: $sym" ;;
	esac
	echo "$name" >>"$tmp/exported"
done <"$tmp/nm.txt"
sort -u -o "$tmp/exported" "$tmp/exported"
echo "exported: $(wc -l <"$tmp/exported") tlbpol_* symbols"

# The functions the installed header declares TLBPOL_API: preprocess it with
# TLBPOL_API defined to a marker (comments gone, macros resolved), then take
# the identifier before the first '(' of each marked declaration.
# shellcheck disable=SC2086
gcc -E -P -x c -D'TLBPOL_API=__tlbpol_api_marker__' $pc_cflags "$incdir/tlbpol/tlbpol.h" \
	>"$tmp/header.i" 2>"$tmp/header.err" || { cat "$tmp/header.err" >&2; die "cannot preprocess the installed header"; }
tr '\n' ' ' <"$tmp/header.i" | grep -o '__tlbpol_api_marker__[^;]*;' |
	sed -e 's/^__tlbpol_api_marker__//' -e 's/(.*//' -e 's/[*[:space:]]*$//' -e 's/.*[^A-Za-z0-9_]//' |
	sort -u >"$tmp/declared"
ndecl=$(wc -l <"$tmp/declared")
echo "declared: $ndecl TLBPOL_API functions in the installed header"
[ "$ndecl" -gt 0 ] || fail "found no TLBPOL_API declaration in the installed header"
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
[ -z "$missing" ] || fail "declared TLBPOL_API but not exported: $(echo "$missing" | tr '\n' ' ')"
[ -z "$extra" ] || fail "exported but not declared TLBPOL_API in the header: $(echo "$extra" | tr '\n' ' ')"

# ---------------------------------------------------------------------------
step "the installed Python package: import tlbpol, python3 -m tlbpol explain"
pyinit=$(find "$prefix" -path '*/tlbpol/__init__.py' | head -n 1)
if [ -z "$pyinit" ]; then
	fail "the Python package tlbpol was not installed under $prefix"
else
	pysite=$(dirname "$(dirname "$pyinit")")
	echo "package: ${pysite#"$prefix"/}/tlbpol"
	for f in __main__.py _paths.py py.typed; do
		[ -e "$pysite/tlbpol/$f" ] || fail "not installed: tlbpol/$f"
	done
	pythons=""
	for py in /usr/bin/python3 "$(command -v python3 || true)"; do
		[ -n "$py" ] && [ -x "$py" ] || continue
		real=$(readlink -f "$py")
		case " $pythons " in *" $real "*) continue ;; esac
		pythons="$pythons $real"
		# Run from $tmp, so that nothing of the source tree is importable.
		pyenv() {
			(cd "$tmp" && env -u TLBPOL_LIBRARY -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH \
				-u PKG_CONFIG_LIBDIR PYTHONPATH="$pysite" PYTHONDONTWRITEBYTECODE=1 "$@")
		}
		if ! pyenv "$py" -c 'import tlbpol'; then
			fail "$py -c 'import tlbpol' failed after install"
			continue
		fi
		where=$(pyenv "$py" -c 'import tlbpol; print(tlbpol.lib_path()); print(tlbpol.version())') ||
			{ fail "$py: tlbpol cannot load the installed library"; continue; }
		echo "$py: $(echo "$where" | tr '\n' ' ')"
		case "$where" in
		"$libdir/libtlbpol.so.0"*) ;;
		*) fail "$py: tlbpol loaded $where, not the library in $libdir" ;;
		esac
		if out=$(pyenv "$py" -m tlbpol explain --arch arm64 --kind protect --old rw --new r 2>&1); then
			echo "$out" | grep -Eq '^default +shootdown +now +downgrade$' ||
				fail "$py -m tlbpol explain: no default/downgrade row: $out"
			[ "$(echo "$out" | grep -c 'cite: ')" -eq 3 ] ||
				fail "$py -m tlbpol explain: not one citation per row: $out"
		else
			fail "$py -m tlbpol explain failed: $out"
		fi
	done
fi

# ---------------------------------------------------------------------------
step "the README's install-into-another-prefix block, word for word"
readme=$src/README.md
sed -n '/<!-- install-and-link: begin -->/,/<!-- install-and-link: end -->/p' "$readme" |
	sed -e '1,/^```sh$/d' -e '/^```$/,$d' >"$tmp/readme-install.sh"
if [ ! -s "$tmp/readme-install.sh" ]; then
	fail "no install-and-link block in $readme"
else
	mkdir -p "$tmp/readme/home" "$tmp/readme/src"
	# A copy of the tree (the user's checkout), without build directories.
	(cd "$src" && git ls-files -z 2>/dev/null | xargs -0 cp --parents -t "$tmp/readme/src") ||
		(cd "$src" && tar --exclude='./build*' -cf - . | tar -xf - -C "$tmp/readme/src")
	cp "$consumer" "$tmp/readme/src/app.c"
	if (cd "$tmp/readme/src" && env -u PKG_CONFIG_PATH -u PKG_CONFIG_LIBDIR -u LD_LIBRARY_PATH \
		HOME="$tmp/readme/home" sh -eu "$tmp/readme-install.sh") >"$tmp/readme.log" 2>&1; then
		echo "ran $(grep -cv '^ *#' "$tmp/readme-install.sh") lines of README.md: ok"
		# The rpath, not an environment variable, found the library.
		readelf -d "$tmp/readme/src/app" | grep -qE 'R(UN)?PATH.*home/opt/tlbpol/lib' ||
			fail "the README's shared consumer has no rpath to the prefix"
		readelf -d "$tmp/readme/src/app-static" | grep -q 'libtlbpol' &&
			fail "the README's static consumer still needs a shared libtlbpol"
	else
		cat "$tmp/readme.log" >&2
		fail "the README's install-into-another-prefix block failed"
	fi
fi

# ---------------------------------------------------------------------------
if [ "$status" -eq 0 ]; then
	echo "PASS: install test"
fi
exit "$status"
