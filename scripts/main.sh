#!/usr/bin/env bash
# The main job: install what is missing, build, and run tlbpol-sim: the seed
# workloads replayed on a modelled 64-CPU, 4-socket machine under every
# policy, side by side (arguments are passed to tlbpol-sim).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
./build/lab/sim/tlbpol-sim "$@"
