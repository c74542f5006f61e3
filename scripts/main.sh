#!/usr/bin/env bash
# The main job: install what is missing, build, and show what the engine
# decides for the seed scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
./build/examples/decide
