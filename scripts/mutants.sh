#!/usr/bin/env bash
# The mutation pass (not a test; about 20 minutes on 2 cores): plant each
# one-line mutant of lab/mutants/mutants.txt into a copy of the tree,
# rebuild, and run every checker; print which caught each.  Arguments go to
# lab/mutants/run.py (--only NAME,..., --checkers NAME,..., --list,
# --markdown FILE, --seed S).  Needs what scripts/test.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
exec python3 lab/mutants/run.py "$@"
