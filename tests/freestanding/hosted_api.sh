#!/bin/sh
# SPDX-License-Identifier: MIT
#
# hosted_api.sh CC [CFLAGS...] - with TLBPOL_FREESTANDING (CFLAGS carry
# -DTLBPOL_FREESTANDING, as tlbpol-core.pc's Cflags do), a call of a
# hosted-only function does not compile -- with the compiler's own default
# diagnostics, no -Werror: the header marks those functions unavailable --
# and a call of a core one does.  CFLAGS: the include directories and
# -DTLBPOL_FREESTANDING.
set -eu
cc=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat > "$dir/core.c" <<'C'
#include <tlbpol/tlbpol.h>
int f(struct tlbpol_engine **e, void *mem, size_t len, const struct tlbpol_config *cfg);
int f(struct tlbpol_engine **e, void *mem, size_t len, const struct tlbpol_config *cfg)
{
	return tlbpol_engine_init(e, mem, len, cfg);
}
C
# -c, not -fsyntax-only: gcc's "error" attribute, the fallback where
# "unavailable" is unknown, fails only when the call is compiled.
"$cc" -std=c11 -ffreestanding -c -o "$dir/core.o" "$@" \
	"$dir/core.c" || { echo "a core call does not compile"; exit 1; }

for fn in "tlbpol_engine_new(cfg, e)" "tlbpol_engine_set_rules(*e, 0)" "(tlbpol_quiescent(), 0)" \
	  "tlbpol_as_lookup(*e, 1) != 0"; do
	cat > "$dir/hosted.c" <<C
#include <tlbpol/tlbpol.h>
int f(struct tlbpol_engine **e, const struct tlbpol_config *cfg);
int f(struct tlbpol_engine **e, const struct tlbpol_config *cfg)
{
	(void)cfg;
	return $fn;
}
C
	if "$cc" -std=c11 -ffreestanding -c -o "$dir/hosted.o" "$@" \
		"$dir/hosted.c" > "$dir/log" 2>&1; then
		echo "compiles, but must not: $fn"
		exit 1
	fi
	name=${fn%%(*}; name=${name#(}
	grep -q "$name" "$dir/log" && grep -q "hosted build only" "$dir/log" ||
		{ cat "$dir/log"; echo "fails, but not because $name is hosted-only"; exit 1; }
	echo "does not compile: $fn"
done
