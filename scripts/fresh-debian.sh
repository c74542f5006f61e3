#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# fresh-debian.sh [DIR] - a newcomer on a clean Debian 12: follow only the
# README's Install section, and use the library from C, a kernel object,
# Python and Rust, then build and install the Debian packages.  Prints a
# transcript (each command after "$ ", then its output).
#
# DIR: a Debian 12 root made by `debootstrap --variant=minbase bookworm DIR`
# (made here when DIR does not exist: needs debootstrap and Debian's
# mirror; default /srv/tlbpol-fresh).  The source tree's tracked files are
# copied to DIR/root/libtlbpol; nothing else of this machine is used.  As
# root; a command, not a test: it downloads packages (a few minutes).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/srv/tlbpol-fresh}
[ "$(id -u)" -eq 0 ] || { echo "fresh-debian.sh: run as root" >&2; exit 1; }
if [ ! -d "$root" ]; then
	command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
	debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
fi
cleanup() {
	for m in dev/pts dev sys proc; do
		mountpoint -q "$root/$m" && umount "$root/$m" || true
	done
}
trap cleanup EXIT
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp /etc/resolv.conf "$root/etc/resolv.conf"
rm -rf "$root/root/libtlbpol"
mkdir -p "$root/root/libtlbpol"
git -C "$src" ls-files -z | (cd "$src" && xargs -0 cp --parents -t "$root/root/libtlbpol")
echo "# $(cat "$root/etc/debian_version") in $root; source: $(git -C "$src" describe --always --dirty)"

# The README's blocks, word for word.
block() { sed -n "/<!-- $1: begin -->/,/<!-- $1: end -->/p" "$src/README.md" | sed '1,2d;$d' | sed '$d'; }
readme_install=$(block fresh-install)
# The Rust program: the one bindings/rust/out-of-tree.sh builds and runs.
rust_main=$(sed -n '/^cat >"$tmp\/app-std\/src\/main.rs" <<.EOF.$/,/^EOF$/p' \
	"$src/bindings/rust/out-of-tree.sh" | sed '1d;$d')
[ -n "$rust_main" ] || { echo "no app-std main.rs in bindings/rust/out-of-tree.sh" >&2; exit 1; }
[ -n "$readme_install" ] || { echo "no fresh-install block in README.md" >&2; exit 1; }

chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	DEBIAN_FRONTEND=noninteractive TERM=dumb /bin/bash -s <<EOF
set -eo pipefail
PS4='\$ '
cd /root/libtlbpol
echo "## Install, as the README says"
set -x
$readme_install
set +x

echo "## C"
set -x
cp tests/install/consumer.c app.c
cc -o app app.c \$(pkg-config --cflags --libs tlbpol)
./app | tail -3
man tlbpol | head -12
apropos tlbpol | head -5
apropos tlbpol | wc -l
man 3type tlbpol_event | sed -n '1,8p'
set +x

echo "## A kernel object"
cat > kern.c <<'C'
#include <tlbpol/tlbpol.h>
int kern_tlb_init(void *mem, size_t len, const struct tlbpol_config *cfg, struct tlbpol_engine **out)
{
	return tlbpol_engine_init(out, mem, len, cfg);
}
C
set -x
cc -ffreestanding -mno-red-zone -mgeneral-regs-only \$(pkg-config --cflags tlbpol-core) -c kern.c
ld -r -o kern-all.o kern.o \$(pkg-config --libs tlbpol-core)
nm -u kern-all.o
set +x

echo "## Python"
set -x
python3 -c 'import tlbpol; print(tlbpol.version(), tlbpol.EventKind.RECLAIM)'
python3 -m tlbpol explain --arch x86_64 --kind protect --old rw --new r | head -4
set +x

echo "## Rust"
set -x
apt-get install -y -qq cargo > /dev/null
cargo new -q --vcs none /root/app-rs
echo 'tlbpol = { path = "/root/libtlbpol/bindings/rust/tlbpol" }' >> /root/app-rs/Cargo.toml
set +x
cat > /root/app-rs/src/main.rs <<'RS'
$rust_main
RS
set -x
cd /root/app-rs && cargo run -q --offline && cd /root/libtlbpol
set +x

echo "## Debian packages"
set -x
apt-get install -y -qq dpkg-dev debhelper dh-python > /dev/null
dpkg-buildpackage -us -uc -b > /root/dpkg-buildpackage.log 2>&1 || { tail -30 /root/dpkg-buildpackage.log; exit 1; }
ls ../*.deb
apt-get install -y -qq ../libtlbpol0_*.deb ../libtlbpol-dev_*.deb ../libtlbpol-core-dev_*.deb ../python3-tlbpol_*.deb > /dev/null
dpkg -l 'libtlbpol*' 'python3-tlbpol' | tail -4
cc -o app-deb app.c \$(pkg-config --cflags --libs tlbpol) && ldd app-deb | grep tlbpol
set +x
echo "## done"
EOF
