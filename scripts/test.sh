#!/usr/bin/env bash
# README command 2: set up, then run the test suite (offline, CPU). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
