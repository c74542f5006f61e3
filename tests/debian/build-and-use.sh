#!/bin/bash
# SPDX-License-Identifier: MIT
#
# build-and-use.sh - build the Debian packages of a copy of the source tree,
# unpack them into a scratch root (nothing is installed on this machine) and
# use what they ship.
#
# Usage: build-and-use.sh SOURCE_ROOT
#
# 1. Copies the working tree (tracked files, and untracked ones that are not
#    ignored: `git ls-files --cached --others --exclude-standard`) to a
#    temporary directory and runs `dpkg-buildpackage -us -uc -b` there, with
#    a clean environment and PATH=/usr/sbin:/usr/bin:/sbin:/bin (what a
#    Debian build sees: Debian's python3, not a pyenv one).  The build itself
#    fails on a file meson installs that no package ships (dh_missing,
#    debhelper compat 13) and on any difference between the symbols the
#    library exports and debian/libtlbpol0.symbols, which debian/rules
#    writes from lib/libtlbpol.map (dpkg-gensymbols -c4).
# 2. Checks what each package holds and declares (files, Depends, the
#    symbols control file, Architecture), then `dpkg -x`s them all into
#    <tmp>/root.
# 3. With only the scratch root's headers and .pc files (PKG_CONFIG_LIBDIR
#    and PKG_CONFIG_SYSROOT_DIR): compiles tests/install/consumer.c, links it
#    against the scratch root's libtlbpol.so (and once against libtlbpol.a)
#    and runs it; compiles tests/freestanding/ft_main.c with
#    `pkg-config --cflags tlbpol-core`, links it -nostdlib -static against
#    the scratch root's libtlbpol-core.a only, and runs it (x86-64 Linux).
# 4. Imports the Python package from the scratch root's dist-packages, once
#    with TLBPOL_LIBRARY and once the way the installed package finds the
#    library, by its soname (LD_LIBRARY_PATH into the scratch root), and
#    runs `python3 -m tlbpol explain`.
# 5. Renders a man(3) page, a man(3type) and the man(7) pages (where
#    shipped) with `man -l`.
# 6. Runs lintian on the .changes and on the source package (dpkg-source -b
#    of the copy, with an orig tarball made of the copy without debian/):
#    fails on any E: tag, lists W: tags.
#
# Exit status: 0 pass, 1 fail, 77 skip (a tool or build dependency missing).
# Set TLBPOL_KEEP_TMP=1 to keep the temporary directory.

set -u

if [ $# -ne 1 ]; then
	echo "usage: $0 SOURCE_ROOT" >&2
	exit 1
fi
src=$(cd "$1" && pwd) || exit 1

skip() {
	echo "SKIP: $*"
	exit 77
}
for tool in dpkg-buildpackage dpkg-checkbuilddeps dpkg-deb dpkg-architecture dpkg-source dh \
	dh_python3 lintian git tar xz cc pkg-config man readelf; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip "'$tool' not found (apt-get install dpkg-dev debhelper dh-python lintian man-db)"
done
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 not found"
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || skip "$src is not a git checkout"
[ -f "$src/debian/control" ] || { echo "FAIL: $src/debian/control missing"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlbpol-deb.XXXXXX") || exit 1
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
	if [ "${TLBPOL_KEEP_TMP:-0}" = 1 ]; then
		echo "kept: $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

status=0
fail() {
	echo "FAIL: $*" >&2
	status=1
}
step() {
	echo
	echo "== $* ($SECONDS s)"
}
# The log's last lines, when a step that writes one fails.
show_log() {
	echo "---- last 40 lines of $1" >&2
	tail -n 40 "$1" >&2
	echo "----" >&2
}

# ---------------------------------------------------------------------------
step "copy the working tree"
mkdir -p "$tmp/src" "$tmp/home" "$tmp/root" "$tmp/work"
# Tracked files deleted in the working tree are listed but absent: skipped.
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
	tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$tmp/src" -xf - ||
	{ echo "FAIL: copying $src" >&2; exit 1; }
echo "$(find "$tmp/src" -type f | wc -l) files"

# The environment of a package build: nothing of the caller's (pyenv's
# python3 first on PATH, PYTHONPATH, PKG_CONFIG_PATH, meson's test variables).
build_env() {
	env -i HOME="$tmp/home" PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
		TMPDIR="$tmp" DEB_BUILD_OPTIONS="parallel=$(nproc 2>/dev/null || echo 2)" "$@"
}
if ! deps=$(cd "$tmp/src" && build_env dpkg-checkbuilddeps 2>&1); then
	skip "build dependencies missing: $deps"
fi

# ---------------------------------------------------------------------------
step "dpkg-source -b (3.0 (quilt): the orig tarball is the copy without debian/)"
version=$(cd "$tmp/src" && dpkg-parsechangelog -S Version)
upstream=${version%-*}
(cd "$tmp/src" && find . -path ./debian -prune -o -type f -print0 | LC_ALL=C sort -z |
	tar --null -T - --transform "s,^\.,libtlbpol-$upstream," -cf - | xz -T0) \
	>"$tmp/libtlbpol_$upstream.orig.tar.xz" || { echo "FAIL: making the orig tarball" >&2; exit 1; }
if ! (cd "$tmp" && build_env dpkg-source -b src) >"$tmp/source.log" 2>&1; then
	show_log "$tmp/source.log"
	fail "dpkg-source -b failed"
fi
dsc="$tmp/libtlbpol_$version.dsc"

# ---------------------------------------------------------------------------
step "dpkg-buildpackage -us -uc -b"
if ! (cd "$tmp/src" && build_env dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
	show_log "$tmp/build.log"
	echo "FAIL: dpkg-buildpackage failed (the whole log: TLBPOL_KEEP_TMP=1, $tmp/build.log)" >&2
	exit 1
fi
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
changes="$tmp/libtlbpol_${version}_${arch}.changes"
[ -f "$changes" ] || { echo "FAIL: no $changes" >&2; exit 1; }
grep -E '^ *(dpkg-gensymbols|dh_missing)' "$tmp/build.log" | head -n 5
for d in "$tmp"/*.deb; do echo "${d#"$tmp"/}"; done

# ---------------------------------------------------------------------------
step "package contents and relations"
deb() {
	local a=$arch
	[ "$1" = python3-tlbpol ] && a=all
	echo "$tmp/${1}_${version}_${a}.deb"
}
for p in libtlbpol0 libtlbpol-dev libtlbpol-core-dev python3-tlbpol; do
	[ -f "$(deb $p)" ] || { fail "package $p not built"; continue; }
	dpkg-deb -c "$(deb $p)" | awk '{ print $6 }' | sed 's|^\./||' >"$tmp/$p.files"
done
# has PACKAGE PATH...: each PATH (a grep -x pattern) is in PACKAGE.
has() {
	local p=$1 f
	shift
	for f in "$@"; do
		grep -qx -- "$f" "$tmp/$p.files" 2>/dev/null || fail "$p does not ship $f"
	done
}
# hasnt PACKAGE PATTERN WHY: no path of PACKAGE matches PATTERN.
hasnt() {
	if grep -q -- "$2" "$tmp/$1.files" 2>/dev/null; then
		fail "$1 ships $(grep -- "$2" "$tmp/$1.files" | head -n 1): $3"
	fi
}
L=usr/lib/$ma
has libtlbpol0 "$L/libtlbpol\.so\.0" "$L/libtlbpol\.so\.0\.[0-9.]*"
hasnt libtlbpol0 '\.a$\|/include/\|\.pc$\|/man/\|libtlbpol\.so$' \
	"development files belong in the -dev packages (Debian Policy 8.4)"
has libtlbpol-dev usr/include/tlbpol/tlbpol.h usr/include/tlbpol/version.h \
	"$L/libtlbpol\.so" "$L/libtlbpol\.a" "$L/pkgconfig/tlbpol\.pc" \
	'usr/share/man/man3/tlbpol_decide\.3\.gz'
hasnt libtlbpol-dev 'libtlbpol\.so\.0\|libtlbpol-core' "that belongs to another package"
has libtlbpol-core-dev "$L/libtlbpol-core\.a" "$L/pkgconfig/tlbpol-core\.pc"
hasnt libtlbpol-core-dev '/include/' "the headers are libtlbpol-dev's, which it depends on"
has python3-tlbpol 'usr/lib/python3/dist-packages/tlbpol/__init__\.py' \
	'usr/lib/python3/dist-packages/tlbpol/_ffi\.py'
hasnt python3-tlbpol '__pycache__\|\.pyc$' "byte-code is compiled at install (dh_python3)"
# Every man page the build installed is shipped, in libtlbpol-dev.
for m in "$tmp"/src/debian/tmp/usr/share/man/man*/*; do
	[ -e "$m" ] || continue
	has libtlbpol-dev "${m#"$tmp"/src/debian/tmp/}\(\.gz\)\?"
done
nman=$(grep -c '^usr/share/man/man[0-9][a-z]*/.' "$tmp/libtlbpol-dev.files")
echo "libtlbpol-dev: $nman man pages"

field() { dpkg-deb -f "$(deb "$1")" "$2" 2>/dev/null; }
# rel PACKAGE FIELD REGEX WHY
rel() {
	field "$1" "$2" | grep -Eq -- "$3" || fail "$1 $2 ($(field "$1" "$2")) lacks $3: $4"
}
rel libtlbpol-dev Depends "libtlbpol0 \(= $version\)" "the .so symlink points into it"
rel libtlbpol-dev Depends 'libnuma-dev' "tlbpol.pc Requires.private numa"
rel libtlbpol-dev Depends 'liburcu-dev' "tlbpol.pc Requires.private liburcu-qsbr liburcu-cds"
rel libtlbpol-core-dev Depends "libtlbpol-dev \(= $version\)" "the headers"
rel python3-tlbpol Depends 'libtlbpol0 \(>= ' "ctypes loads libtlbpol.so.0 (no shlibs)"
rel python3-tlbpol Depends 'python3' "dh_python3's python3:Depends"
rel python3-tlbpol Architecture '^all$' "pure Python, the library found by soname"
rel libtlbpol0 Multi-Arch '^same$' "a shared library in the multiarch libdir"
# The symbols control file: each symbol with its version node and release.
dpkg-deb --ctrl-tarfile "$(deb libtlbpol0)" | tar -xOf - ./symbols >"$tmp/symbols" 2>/dev/null ||
	fail "libtlbpol0 has no symbols control file"
for s in 'tlbpol_version@TLBPOL_0\.1 0\.1\.0' 'tlbpol_stats_read@TLBPOL_0\.1 0\.1\.0' \
	'tlbpol_stats_read@TLBPOL_0\.2 0\.2\.0' 'tlbpol_stamp@TLBPOL_0\.2 0\.2\.0'; do
	grep -Eq "^ $s$" "$tmp/symbols" || fail "libtlbpol0's symbols file has no line '$s'"
done
echo "symbols: $(grep -c '^ ' "$tmp/symbols") lines"

# ---------------------------------------------------------------------------
step "unpack into the scratch root (dpkg -x)"
for p in libtlbpol0 libtlbpol-dev libtlbpol-core-dev python3-tlbpol; do
	[ -f "$(deb $p)" ] && dpkg -x "$(deb $p)" "$tmp/root"
done
root=$tmp/root
libdir=$root/$L

# Only the scratch root's .pc files, then the system's (numa, liburcu),
# which PKG_CONFIG_SYSROOT_DIR also prefixes: their -I/-L then name the
# scratch root, where the system's headers are absent but not needed.
export PKG_CONFIG_LIBDIR="$libdir/pkgconfig:/usr/lib/$ma/pkgconfig:/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$root"
unset PKG_CONFIG_PATH TLBPOL_LIBRARY PYTHONPATH LD_LIBRARY_PATH

step "a C program against the scratch root (shared, then static)"
consumer=$src/tests/install/consumer.c
if cflags=$(pkg-config --cflags tlbpol) && libs=$(pkg-config --libs tlbpol); then
	echo "cflags: $cflags"
	echo "libs:   $libs"
	case " $cflags " in
	*" -I$root/usr/include "*) ;;
	*) fail "cflags do not name $root/usr/include" ;;
	esac
	# shellcheck disable=SC2086  # word splitting of pkg-config output intended
	if cc -std=c11 -Wall -Wextra -Werror -o "$tmp/work/consumer" "$consumer" $cflags $libs \
		-Wl,-rpath,"$libdir" 2>"$tmp/work/cc.log"; then
		if out=$("$tmp/work/consumer" 2>&1); then
			echo "$out"
		else
			fail "consumer (shared) failed: $out"
		fi
		ldd "$tmp/work/consumer" | grep -q "libtlbpol\.so\.0 => $libdir/" ||
			fail "consumer did not load $libdir/libtlbpol.so.0: $(ldd "$tmp/work/consumer" | grep tlbpol)"
	else
		fail "consumer does not compile against the scratch root: $(cat "$tmp/work/cc.log")"
	fi
	# The static library, with what tlbpol.pc --static adds for it.
	slibs=$(pkg-config --static --libs tlbpol | sed 's/-ltlbpol\b/-l:libtlbpol.a/')
	# shellcheck disable=SC2086
	if cc -std=c11 -o "$tmp/work/consumer-static" "$consumer" $cflags $slibs \
		2>"$tmp/work/cc.log" && out=$("$tmp/work/consumer-static" 2>&1); then
		! ldd "$tmp/work/consumer-static" | grep -q libtlbpol ||
			fail "consumer-static loads a shared libtlbpol"
		echo "static: $out"
	else
		fail "consumer against libtlbpol.a: $(cat "$tmp/work/cc.log") ${out:-}"
	fi
else
	fail "pkg-config tlbpol fails with the scratch root's tlbpol.pc"
fi

step "a freestanding program against libtlbpol-core.a"
if fcflags=$(pkg-config --cflags tlbpol-core) && flibs=$(pkg-config --libs tlbpol-core); then
	echo "cflags: $fcflags"
	echo "libs:   $flibs"
	case " $fcflags " in
	*" -DTLBPOL_FREESTANDING "*) ;;
	*) fail "tlbpol-core.pc: no -DTLBPOL_FREESTANDING" ;;
	esac
	ccinc=$(cc -print-file-name=include)
	if [ "$(uname -m)" = x86_64 ] && [ "$ma" = x86_64-linux-gnu ]; then
		# ft_main.c brings its own _start and exit syscall, support/mem.c
		# the mem* functions: -nostdlib -static, so a core that needs
		# anything of libc or libgcc fails to link.  -I$src for
		# "support/mem.h" only: <tlbpol/...> comes from the scratch root.
		# shellcheck disable=SC2086
		if cc -std=c11 -ffreestanding -fno-stack-protector -fno-builtin -nostdinc \
			-idirafter "$ccinc" $fcflags -I"$src" -c "$src/tests/freestanding/ft_main.c" \
			-o "$tmp/work/ft_main.o" 2>"$tmp/work/cc.log" &&
			cc -std=c11 -ffreestanding -fno-stack-protector -fno-tree-loop-distribute-patterns \
				-nostdinc -idirafter "$ccinc" -I"$src" $fcflags -c "$src/support/mem.c" \
				-o "$tmp/work/mem.o" 2>>"$tmp/work/cc.log" &&
			cc -nostdlib -static -o "$tmp/work/ft_main" "$tmp/work/ft_main.o" "$tmp/work/mem.o" \
				$flibs 2>>"$tmp/work/cc.log"; then
			"$tmp/work/ft_main"
			rc=$?
			if [ $rc -eq 0 ]; then
				echo "ft_main: exit 0 (static, no libc)"
			else
				fail "ft_main exited $rc (tests/freestanding/ft_main.c, enum ft_fail)"
			fi
			readelf -lW "$tmp/work/ft_main" | grep -q INTERP && fail "ft_main has an interpreter"
		else
			fail "freestanding build against libtlbpol-core.a: $(cat "$tmp/work/cc.log")"
		fi
	else
		echo "not x86-64 Linux: ft_main.c (its own _start) not built"
	fi
else
	fail "pkg-config tlbpol-core fails with the scratch root's tlbpol-core.pc"
fi

# ---------------------------------------------------------------------------
step "the Python package from the scratch root"
site=$root/usr/lib/python3/dist-packages
py() {
	(cd "$tmp/work" && env PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$@")
}
if out=$(TLBPOL_LIBRARY="$libdir/libtlbpol.so.0" py -c \
	'import tlbpol; print(tlbpol.__file__, tlbpol.lib_path(), tlbpol.version())' 2>&1); then
	echo "TLBPOL_LIBRARY: $out"
	case "$out" in "$site/tlbpol/__init__.py $libdir/libtlbpol.so.0 "*) ;;
	*) fail "python3: not the scratch root's package and library: $out" ;; esac
else
	fail "python3 -c 'import tlbpol' (TLBPOL_LIBRARY): $out"
fi
# Architecture: all: the same files on every architecture, so none may name
# this one's multiarch libdir (meson's _paths.py does; debian/rules ships
# the source tree's, which records no libdir).
if named=$(grep -rl -- "$ma" "$site" 2>/dev/null); then
	fail "python3-tlbpol (Architecture: all) names $ma in: ${named//$root\//}"
fi
# As installed, with no libdir recorded and no tlbpol.pc to ask (an empty
# PKG_CONFIG_LIBDIR: a system with libtlbpol0 but not libtlbpol-dev), the
# package loads the soname, which the dynamic loader resolves (here through
# LD_LIBRARY_PATH; on a system with libtlbpol0, through ld.so.cache).
mkdir -p "$tmp/work/no-pc"
maps='import tlbpol; print(tlbpol.lib_path())
print(sorted({l.split()[-1] for l in open("/proc/self/maps") if "libtlbpol.so" in l}))'
if out=$(LD_LIBRARY_PATH="$libdir" PKG_CONFIG_LIBDIR="$tmp/work/no-pc" py -c "$maps" 2>&1); then
	echo "soname: $(echo "$out" | tr '\n' ' ')"
	[ "$out" = "libtlbpol.so.0
['$(readlink -f "$libdir/libtlbpol.so.0")']" ] ||
		fail "python3: not the scratch root's library by its soname: $out"
else
	fail "python3: the library not found by its soname: $out"
fi
if out=$(LD_LIBRARY_PATH="$libdir" py -m tlbpol explain --arch arm64 --kind protect \
	--old rw --new r 2>&1); then
	echo "$out" | grep -Eq '^default +shootdown +now +downgrade$' ||
		fail "python3 -m tlbpol explain: no default/downgrade row: $out"
else
	fail "python3 -m tlbpol explain: $out"
fi

# ---------------------------------------------------------------------------
step "man pages render (man -l)"
# A function's page, a type's (3type, where shipped) and the overview(s).
pages=$(find "$root/usr/share/man" -name tlbpol_decide.3.gz
	find "$root/usr/share/man" -name '*.3type*' | LC_ALL=C sort | head -n 1
	find "$root/usr/share/man" -path '*/man7/*' -type f)
[ -n "$pages" ] || fail "no man page to render in $root/usr/share/man"
for m in $pages; do
	if out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$m" 2>"$tmp/work/man.err") &&
		echo "$out" | grep -q '^NAME'; then
		echo "${m#"$root"/}: $(echo "$out" | wc -l) lines"
		[ -s "$tmp/work/man.err" ] && echo "  man warnings: $(head -n 3 "$tmp/work/man.err")"
	else
		fail "man -l ${m#"$root"/} does not render: $(head -n 3 "$tmp/work/man.err")"
	fi
done

# ---------------------------------------------------------------------------
step "lintian"
# Overrides, each with its reason, are in debian/*.lintian-overrides.
lintian --info "$changes" >"$tmp/lintian.log" 2>&1
[ -f "$dsc" ] && lintian --info "$dsc" >>"$tmp/lintian.log" 2>&1
grep -v '^N:\|running with root privileges' "$tmp/lintian.log" | sort -u
if grep -q '^E:' "$tmp/lintian.log"; then
	fail "lintian reports errors (above)"
elif ! grep -q '^[EW]:' "$tmp/lintian.log"; then
	echo "lintian: no error, no warning"
fi

echo
echo "== done in $SECONDS s"
[ $status -eq 0 ] && echo "PASS" || echo "FAILED"
exit $status
