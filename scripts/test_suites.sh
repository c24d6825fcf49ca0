#!/usr/bin/env bash
# Standard embodied suites that pin another mujoco than ours run in a side virtualenv, so the main
# .venv keeps mujoco 4: Meta-World 3.1.1 needs mujoco 3.3.0 (docs/EMBODIED_SUITES.md). Runs our
# Meta-World env tests and our own scene's tests there. Called by scripts/test.sh; set
# VLAGENT_SIDE_SUITES=0 to skip. An install that cannot reach the package registry is reported
# and skipped; a failing test fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SIDE=${VLAGENT_METAWORLD_VENV:-.venv-metaworld}
PINS="metaworld==3.1.1 mujoco==3.3.0 packaging gymnasium numpy pillow pytest"
if [ ! -x "$SIDE/bin/python" ] || ! "$SIDE/bin/python" -c "import metaworld" 2>/dev/null; then
  echo "[suites] creating $SIDE with $PINS"
  "$PY" -m venv "$SIDE"
  if ! "$SIDE/bin/python" -m pip install -q $PINS; then
    echo "[suites] could not install $PINS (no package registry?): Meta-World tests skipped"
    exit 0
  fi
fi
echo "[suites] Meta-World tests (mujoco $("$SIDE/bin/python" -c 'import mujoco; print(mujoco.__version__)'))"
PYTHONPATH=. MUJOCO_GL=${MUJOCO_GL:-egl} "$SIDE/bin/python" -m pytest -q -p no:cacheprovider \
  tests/embodied/test_metaworld_env.py tests/sim/test_robot_scene.py
