#!/usr/bin/env bash
# The long soak (not a test): build, then run the oracle-checked stress
# harness (tests/oracle) on 2, 4 and 8 CPUs, for x86, ARM64 and the generic
# profile, with and without ASID retention, with a switch-heavy mix, LAZY_OK
# work in small batches and long compute spells, each over every rule mask of
# `--rules all`: at least 10 million events in all.
# Then the hardware tags (the engine's allocators, tlbpol_switch_tag()) with
# more address spaces than tags, at 2, 4, 8 and 72 CPUs: per-CPU slots
# (x86 PCIDs); global generations (arm64 ASIDs) of 3 bits, rolling over
# at 2 and 4 CPUs (at 8 and 72 the pool must hold more tags than CPUs, more
# than the oracle's 14 address spaces use: transitions, no rollover); slots
# beside global tags under a split broadcast (INVLPGB), CPUs moved onto
# them from interrupts (ops->load_tag), walkers beside; global generations
# again with stretched transition windows (--window: a rollover, a new tag
# for the address space a CPU is leaving and its tables freed, all before
# that CPU's CR3 write).
#
# Prints every configuration's summary line and a grand total; exits 1 if
# the oracle found anything.
#
# Usage: scripts/stress.sh [EVENTS [SEED]]
#   EVENTS  events in all (default 10000000); SEED a number (default random).
#   $STRESS_BUILDDIR  build directory (default build).
set -euo pipefail
cd "$(dirname "$0")/.."

events=${1:-10000000}
seed=${2:-$(( (RANDOM << 15) | RANDOM ))}
builddir=${STRESS_BUILDDIR:-build}

[ -f "$builddir/build.ninja" ] || meson setup "$builddir" >/dev/null
if ! ninja -C "$builddir" tests/oracle/stress >/dev/null; then
	echo "stress.sh: cannot build tests/oracle/stress (is subdir('oracle') in tests/meson.build?)" >&2
	exit 2
fi
exe=$builddir/tests/oracle/stress

cpus_list=(2 4 8)
arch_list=(x86 arm64 generic)
# The normal mix without and with ASID retention, the switch-heavy mix with
# retention (CPUs coming back to address spaces others changed), LAZY_OK work
# in batches of 8 pages, and compute spells (the stall watchdog's ground),
# also with waits served only by the interrupts relax takes (WAIT_IRQS); the
# whole CPU-state matrix; quiet and idle CPUs (bounded frees and stamps);
# ticks and other waiting calls with interrupts off, with WAIT_IRQS and
# without; tasks that ask for their stamp on another CPU; vCPUs held
# preempted.
variant_list=("--profile normal" "--profile normal --retain" "--profile switch --retain"
	      "--profile lazy --retain --batch 8" "--profile compute --ipi-delay 20"
	      "--profile compute --wait-irqs" "--profile states --retain --wait-limit 1024"
	      "--profile quiet" "--retain --wait-irqs --irqs-off 50" "--irqs-off 50"
	      "--migrate 50" "--profile preempted")
tag_cpus_list=(2 4 8 72)
tag_variant_list=("--arch x86 --tags percpu --as 12 --profile switch"
		  "--arch arm64 --tags global --as 12 --split --bcast-cost 300"
		  "--arch x86 --tags percpu --as 12 --tag-global 4 --tag-global-cpus 2 --split
		   --bcast-cost 300 --profile compute --tag-irq-load --walkers --walker-sync"
		  "--arch arm64 --tags global --as 12 --split --bcast-cost 300 --window 200")
masks=35 # configurations in --rules all
runs=$(( ${#cpus_list[@]} * ${#arch_list[@]} * ${#variant_list[@]} +
	 ${#tag_cpus_list[@]} * ${#tag_variant_list[@]} ))
per_config=$(( (events + runs * masks - 1) / (runs * masks) ))

echo "stress.sh: $runs runs x $masks rule masks x $per_config events, seed $seed"
start=$(date +%s)
sum_events=0
sum_viol=0
failed=0
# One run: --cpus $1, then the options in $2 (several, split on blanks).
run() {
	local rc=0 out tot ev vi
	# shellcheck disable=SC2086 # $2 is several options
	out=$(TLBPOL_STRESS_SCALE=1 "$exe" --cpus "$1" --events "$per_config" --rules all \
		--seed "$seed" $2) || rc=$?
	echo "$out"
	tot=$(grep '^total:' <<<"$out" || true)
	ev=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$tot")
	vi=$(sed -n 's/.* violations=\([0-9]*\).*/\1/p' <<<"$tot")
	sum_events=$(( sum_events + ${ev:-0} ))
	sum_viol=$(( sum_viol + ${vi:-0} ))
	if [ "$rc" -ne 0 ]; then
		echo "stress.sh: exit $rc: --cpus $1" $2
		failed=$(( failed + 1 ))
	fi
}
for cpus in "${cpus_list[@]}"; do
	for arch in "${arch_list[@]}"; do
		for variant in "${variant_list[@]}"; do
			run "$cpus" "--arch $arch $variant"
		done
	done
done
for cpus in "${tag_cpus_list[@]}"; do
	for variant in "${tag_variant_list[@]}"; do
		# A global pool holds more tags than CPUs (the allocator says
		# so): 3 bits where that is enough, else the fewest that are.
		bits=3
		while [ $(( (1 << bits) - 1 )) -le "$cpus" ]; do bits=$((bits + 1)); done
		case $variant in
		*"--tags global"*) variant="$variant --tag-bits $bits" ;;
		esac
		run "$cpus" "$variant"
	done
done
echo "grand total: runs=$runs events=$sum_events violations=$sum_viol failed_runs=$failed" \
	"seed=$seed time=$(( $(date +%s) - start ))s"
[ "$failed" -eq 0 ]
