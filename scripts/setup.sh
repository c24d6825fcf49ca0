#!/usr/bin/env bash
# Create (or reuse) .venv and install vlagent with its test tools. Idempotent: a second run
# only checks that the install is complete. Used by scripts/quickstart.sh and scripts/test.sh.
#
# torch and torchvision are pinned together (pyproject.toml). On a machine without an NVIDIA
# GPU we first try PyTorch's CPU-only wheels (~1 GB instead of a multi-GB CUDA stack); if that
# index is unreachable, pip takes the same versions from PyPI, which are CUDA builds that also
# run on the CPU -- this script says so before it happens. GPU users: see README "GPU install".
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VLAGENT_VENV:-.venv}
TORCH_PIN="torch==2.14.1 torchvision==0.29.1"
CPU_INDEX=${VLAGENT_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtualenv $VENV with $($PY --version)"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi
PIP="$VENV/bin/python -m pip"

reachable() {  # is a URL answering within 5 s?
  "$VENV/bin/python" - "$1" <<'PYEOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=5)
PYEOF
}

if ! "$VENV/bin/python" -c "import torch, torchvision" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    echo "[setup] NVIDIA GPU found: installing $TORCH_PIN (CUDA build from the registry)"
    $PIP install -q $TORCH_PIN
  elif reachable "$CPU_INDEX/"; then
    echo "[setup] no GPU: installing CPU-only $TORCH_PIN from $CPU_INDEX"
    $PIP install -q --index-url "$CPU_INDEX" $TORCH_PIN
  else
    echo "[setup] note: no GPU here and $CPU_INDEX is unreachable, so $TORCH_PIN comes from"
    echo "[setup]       the package registry: a CUDA build (several GB) that also runs on the CPU."
    $PIP install -q $TORCH_PIN
  fi
  "$VENV/bin/python" -c "import torch; print('[setup] torch', torch.__version__, '| CUDA build:', torch.version.cuda or 'no (CPU only)')"
fi

# dev = test tools; android = android-env, whose fake simulator the test suite drives;
# data = datasets + pyarrow (Parquet and `datasets` folders); track = wandb (offline in tests);
# robot = mujoco (sim/robot scenes; offscreen rendering via MUJOCO_GL=egl, or osmesa);
# web = miniwob + selenium (MiniWoB++ env; the HTML report's browser test); desktop = mss +
# python-xlib (screenshots and window lists of the local X desktop, gui/osworld); dist = ray
# (env workers, vlagent/rollout/ray_envs.py; its tests run a local Ray).
EXTRAS=${VLAGENT_EXTRAS:-dev,android,data,track,robot,web,desktop,dist}
if ! "$VENV/bin/python" -c "import vlagent, pytest, hypothesis" 2>/dev/null \
   || [ pyproject.toml -nt "$VENV/.vlagent-installed" ]; then
  echo "[setup] installing vlagent (editable) with extras [$EXTRAS]"
  $PIP install -q -e ".[$EXTRAS]"
  touch "$VENV/.vlagent-installed"
fi
# Debian packages for the browser and desktop tests (skipped cleanly without them): Chromium +
# chromedriver (MiniWoB++, the HTML report), and the local desktop (Xvfb, openbox, xdotool,
# wmctrl, xterm / xedit / xcalc, bubblewrap). Installed when this runs as root with apt-get
# (CI) and something is missing; VLAGENT_APT=0 skips it. Never fatal.
APT_PKGS="chromium chromium-driver xvfb xterm xdotool x11-utils bubblewrap openbox wmctrl x11-apps"
need_apt=0
for bin in chromedriver Xvfb xdotool bwrap openbox wmctrl xterm xedit xcalc xdpyinfo; do
  command -v "$bin" >/dev/null 2>&1 || need_apt=1
done
if [ "${VLAGENT_APT:-1}" != 0 ] && [ "$need_apt" = 1 ] \
   && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "[setup] installing $APT_PKGS (apt) for the browser and desktop tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $APT_PKGS \
    >/dev/null) || echo "[setup] note: apt could not install them; those tests will skip"
fi
echo "[setup] ready: $("$VENV/bin/python" -c 'import torch, transformers; print("torch", torch.__version__, "| transformers", transformers.__version__)')"
