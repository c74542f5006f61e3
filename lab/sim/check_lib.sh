# SPDX-License-Identifier: MIT
# check_lib.sh: what lab/sim's check_*.sh scripts share; sourced, never run.
# say MESSAGE: report a failure and remember it (the script exits $fail).
# col CSV NAME POLICY: the column NAME of POLICY's row of tlbpol-sim --csv.
fail=0
say() {
	echo "FAIL: $*"
	fail=1
}
col() {
	printf '%s\n' "$1" | awk -F, -v n="$2" -v p="$3" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) c = i; next }
		$2 == p { print $c }'
}
