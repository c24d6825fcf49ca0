#!/usr/bin/env bash
# One prepared check for a machine with NVIDIA GPUs (at most 10 minutes: the part limits).
#
#   bash scripts/gpu_check.sh            # from the repository root; results in $OUT
#
# Parts (each timed, its exit code recorded; one failing part does not stop the others):
#   env        nvidia-smi and torch's view of CUDA
#   pytest_gpu pytest -m gpu (tests that need a CUDA GPU)
#   fsdp_gloo  the CPU FSDP test (2 processes, gloo) on this machine
#   grpo_bf16  a tiny model saved to disk, 3 GRPO steps in bfloat16 on cuda (hf generate engine)
#   fsdp_cuda  the FSDP2 exactness check on GPUs: torchrun, nccl, 2 GPUs (1 if only one)
#   grpo_fsdp  `torchrun ... vlagent.cli train --config grpo` on those GPUs: 3 steps, bf16 mixed
#              precision (float32 master weights), a checkpoint with dcp/
#   bench      vlagent bench grpo-vs-trl --preset smoke on cuda
# Output: $OUT (default bench/results/gpu/) holds gpu_check.json (per part: seconds, rc, log
# file), the logs, the GRPO run's metrics.jsonl and the benchmark / FSDP JSON.
# The script installs nothing when .venv exists; otherwise it makes one (needs network).
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="${OUT:-bench/results/gpu}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/vlagent_gpu.XXXXXX")"
RESULTS="$OUT/parts.tsv"
: >"$RESULTS"

if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
  .venv/bin/pip install -q -e '.[gpu]' || .venv/bin/pip install -q -e .
fi
PY="$PWD/.venv/bin/python"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}"

# part NAME LIMIT_S CMD...: run CMD with a time limit, log to $OUT/NAME.log, record rc and time.
part() {
  local name="$1" limit="$2"
  shift 2
  local start end rc
  start=$(date +%s%N)
  if timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1; then rc=0; else rc=$?; fi
  end=$(date +%s%N)
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(awk "BEGIN {print ($end - $start) / 1e9}")" >>"$RESULTS"
  echo "[$name] rc=$rc ($(tail -n 1 "$OUT/$name.log" 2>/dev/null | cut -c1-120))"
}

NGPU=$("$PY" -c 'import torch; print(min(torch.cuda.device_count(), 2))' 2>/dev/null || echo 0)
if [[ "$NGPU" -lt 1 ]]; then NGPU=1; fi

env_info() {
  nvidia-smi || true
  "$PY" -c 'import torch, transformers; print(torch.__version__, transformers.__version__,
torch.cuda.is_available(), torch.cuda.device_count(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no cuda")'
}

grpo_bf16() {
  "$PY" -m vlagent.cli build-tiny-model "$WORK/tiny" --family qwen3_vl
  "$PY" -m vlagent.cli train --config grpo \
    model.path="$WORK/tiny" model.build_tiny=false \
    model.dtype=bfloat16 model.device=cuda \
    grpo.steps=3 grpo.prompts_per_step=2 grpo.group_size=4 grpo.max_new_tokens=16 \
    eval.every=0 eval.monitor_screens=0 eval.rollout_pictures=0 \
    run.out_dir="$WORK/grpo_bf16" run.progress=false run.samples_every=0 run.checkpoint_every=3
  cp "$WORK/grpo_bf16/metrics.jsonl" "$OUT/grpo_bf16_metrics.jsonl"
}

fsdp_cuda() {
  if [[ ! -d "$WORK/tiny" ]]; then
    "$PY" -m vlagent.cli build-tiny-model "$WORK/tiny" --family qwen3_vl
  fi
  mkdir -p "$WORK/fsdp"
  VLAGENT_FSDP_DEVICE=cuda "$PY" -m torch.distributed.run --standalone \
    --nproc-per-node "$NGPU" tests/vlagent/train/_fsdp_gloo_worker.py "$WORK/tiny" "$WORK/fsdp"
  cp "$WORK/fsdp/update.json" "$OUT/fsdp_cuda_${NGPU}gpu.json"
  cat "$OUT/fsdp_cuda_${NGPU}gpu.json"
}

grpo_fsdp() {
  if [[ ! -d "$WORK/tiny" ]]; then
    "$PY" -m vlagent.cli build-tiny-model "$WORK/tiny" --family qwen3_vl
  fi
  "$PY" -m torch.distributed.run --standalone --nproc-per-node "$NGPU" -m vlagent.cli train \
    --config grpo model.path="$WORK/tiny" model.build_tiny=false \
    model.dtype=bfloat16 model.device=cuda \
    grpo.steps=3 grpo.prompts_per_step=2 grpo.group_size=4 grpo.max_new_tokens=16 \
    eval.every=0 eval.monitor_screens=0 eval.rollout_pictures=0 \
    run.out_dir="$WORK/grpo_fsdp" run.progress=false run.samples_every=0 run.checkpoint_every=3
  cp "$WORK/grpo_fsdp/metrics.jsonl" "$OUT/grpo_fsdp_${NGPU}gpu_metrics.jsonl"
  ls "$WORK/grpo_fsdp/checkpoints/grpo/step_000003/dcp"
}

# functions run under `timeout` through a child bash: export them and what they read
export PY WORK OUT NGPU
export -f env_info grpo_bf16 fsdp_cuda grpo_fsdp
# limits add up to 600 s
part env 20 bash -c env_info
part pytest_gpu 100 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests
part fsdp_gloo 80 "$PY" -m pytest -q -p no:cacheprovider tests/vlagent/train/test_fsdp_gloo.py
part grpo_bf16 100 bash -c grpo_bf16
part fsdp_cuda 80 bash -c fsdp_cuda
part grpo_fsdp 100 bash -c grpo_fsdp
part bench 120 "$PY" -m vlagent.cli bench grpo-vs-trl --preset smoke --device cuda \
  --label gpu_smoke --out "$OUT/grpo_vs_trl_smoke.json" --work-dir "$WORK/bench"

"$PY" - "$RESULTS" "$OUT/gpu_check.json" <<'EOF'
import json, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
parts = {n: {"rc": int(rc), "seconds": round(float(s), 1), "log": f"{n}.log"} for n, rc, s in rows}
with open(sys.argv[2], "w") as f:
    json.dump({"parts": parts, "ok": all(p["rc"] == 0 for p in parts.values())}, f, indent=1)
print(json.dumps(parts, indent=1))
EOF
rm -rf "$WORK"
