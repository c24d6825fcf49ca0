#!/usr/bin/env bash
# README command 2: set up, then run the test suite (offline, CPU). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Idle OpenMP threads sleep instead of spinning (torch slows 10-30x on shared cores otherwise).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
status=0
.venv/bin/python -m pytest "$@" || status=$?
if [ "${VLAGENT_SIDE_SUITES:-1}" != 0 ] && [ "$status" = 0 ]; then
  scripts/test_suites.sh || status=$?
fi
exit "$status"
