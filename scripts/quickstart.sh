#!/usr/bin/env bash
# README command 1: set up, then run the main job (tiny VLM, SFT on 64 demos, GRPO vs more SFT).
# Extra arguments go to `vlagent quickstart` (e.g. --seeds 0,1,2 or run.out_dir=runs/x).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/vlagent quickstart "$@"
