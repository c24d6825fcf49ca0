"""The ``vllm`` rollout engine: vLLM samples the turns, the trainer keeps training.

Where it runs (``mode``):
    inprocess  vLLM importable and a CUDA device: ``vllm_worker.Sampler`` colocated in the
               trainer's process (same torch); weights pushed as ``(name, tensor)`` items;
               ``sleep`` / ``wake_up`` free and restore its GPU memory between phases
    worker     otherwise: ``vllm_worker.py`` run by the vLLM venv's python (``python``, made by
               ``scripts/setup_vllm.sh``), talking over two pipes (plain lists, image bytes);
               weights pushed as a safetensors folder the worker reloads
Nothing here imports vllm at module import.

Requests: each segment's context (prompt + continuation) with every run of image placeholders
collapsed to one placeholder (vLLM expands it again from the image's grid), and each image as the
uint8 pixels the processor resized it to, recovered exactly from the segment's ``pixel_values``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from vlagent.batching import output_vocab_size, policy_forbidden_ids
from vlagent.rollout.engine import eos_ids
from vlagent.rollout.engine_request import EngineError, Turn, check_request
from vlagent.rollout.trajectory import Segment
from vlagent.rollout.vllm_worker import read_msg, write_msg

WORKER = Path(__file__).with_name("vllm_worker.py")
SETUP_HINT = "make it with `bash scripts/setup_vllm.sh` (docs/SCALING.md, vLLM engine)"


def image_pixels(pixel_values: torch.Tensor, grid: Sequence[int], ip: Any) -> torch.Tensor:
    """Undo the Qwen-VL image processor's patching and normalization.

    Args:
        pixel_values: [t*h*w, C*tp*ps*ps] one image's patch rows; grid: (t, h, w) in patches.
        ip: the processor's image processor (patch_size, temporal_patch_size, merge_size,
            image_mean, image_std).

    Returns:
        [H, W, 3] uint8, the resized image in pixels (H = h * patch_size).
    """
    t, h, w = (int(v) for v in grid)
    ps, tp, m = int(ip.patch_size), int(ip.temporal_patch_size), int(ip.merge_size)
    x = pixel_values.float().reshape(t, h // m, w // m, m, m, 3, tp, ps, ps)
    x = x.permute(0, 6, 5, 1, 3, 7, 2, 4, 8).reshape(t * tp, 3, h * ps, w * ps)[0]
    mean = torch.tensor(ip.image_mean, dtype=torch.float32).view(3, 1, 1)
    std = torch.tensor(ip.image_std, dtype=torch.float32).view(3, 1, 1)
    img = (x * std + mean) * 255.0
    return img.round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).contiguous()


def _collapse(ids: list[int], mm: list[int]) -> list[int]:
    """Keep the first id of each run of image placeholders (``mm`` = 1)."""
    return [t for j, t in enumerate(ids) if not (mm[j] and j > 0 and mm[j - 1])]


def build_requests(
    policy: Any, segments: Sequence[Segment], max_new: Sequence[int], seed: int | None
) -> list[dict[str, Any]]:
    """Plain-data vLLM requests, one per segment (see module docstring)."""
    ip = policy.processor.image_processor
    out = []
    for i, s in enumerate(segments):
        ids = s.prompt.input_ids.tolist() + list(s.ids)
        mm = s.prompt.mm_token_type_ids.tolist() + list(s.mm)
        p = s.prompt
        grids = p.image_grid_thw.tolist()
        sizes = [int(g[0] * g[1] * g[2]) for g in grids]
        chunks = list(torch.split(p.pixel_values, sizes)) if sizes else []
        pairs = list(zip(chunks, grids, strict=True)) + [(pv, g) for pv, g in s.images]
        images = []
        for pv, grid in pairs:
            px = image_pixels(pv, grid, ip).numpy()
            images.append({"shape": list(px.shape), "data": px.tobytes()})
        out.append(
            {
                "ids": _collapse(ids, mm),
                "images": images,
                "max_tokens": int(max_new[i]),
                "seed": None if seed is None else int(seed) + i,
            }
        )
    return out


def weight_items(model: Any) -> list[tuple[str, torch.Tensor]]:
    """(checkpoint name, tensor) of every weight; LoRA adapters merged into their base."""
    peft = hasattr(model, "merge_adapter") and hasattr(model, "get_base_model")
    if peft:
        model.merge_adapter()
    try:
        base = model.get_base_model() if peft else model
        items = []
        for name, t in base.state_dict().items():
            if "lora_" in name:
                continue
            items.append((name.replace(".base_layer.", "."), t.detach().clone()))
    finally:
        if peft:
            model.unmerge_adapter()
    return items


def _model_dtype(model: Any) -> str:
    return str(next(model.parameters()).dtype).removeprefix("torch.")


class VLLMEngine:
    """vLLM behind the :class:`~vlagent.rollout.engines.RolloutEngine` contract.

    Args:
        policy: the loaded ``Policy`` whose weights vLLM starts from (saved to a temp folder).
        python: the vLLM venv's interpreter (worker mode); relative paths resolve against the
            current directory, then the repository root.
        mode: "auto" (in-process when vllm imports and CUDA is available, else worker),
            "inprocess" or "worker".
        kv_cache_gb: CPU KV cache; gpu_memory_utilization: vLLM's share of the GPU.
        max_model_len: context limit (None: the checkpoint's).
        startup_timeout: seconds to wait for the worker's first answer.
        request_timeout: seconds to wait for any later answer.
    """

    name = "vllm"

    def __init__(
        self,
        policy: Any,
        *,
        python: str = ".venv-vllm/bin/python",
        mode: str = "auto",
        kv_cache_gb: float = 1.0,
        gpu_memory_utilization: float = 0.3,
        max_model_len: int | None = None,
        startup_timeout: float = 900.0,
        request_timeout: float = 1800.0,
    ) -> None:
        if mode not in ("auto", "inprocess", "worker"):
            raise EngineError(f"vllm engine mode {mode!r}: use auto, inprocess or worker")
        if mode == "auto":
            has_vllm = importlib.util.find_spec("vllm") is not None
            mode = "inprocess" if has_vllm and torch.cuda.is_available() else "worker"
        self.mode = mode
        self.policy = policy
        self.version = 0
        self.request_timeout = request_timeout
        self.forbidden = list(policy_forbidden_ids(policy))
        self.eos = eos_ids(policy)
        self.vocab_size = output_vocab_size(policy.model) or len(policy.tokenizer)
        self._proc: subprocess.Popen | None = None
        self._sampler: Any = None
        self._dir = Path(tempfile.mkdtemp(prefix="vlagent_vllm_"))
        opts = {
            "dtype": _model_dtype(policy.model),
            "kv_cache_gb": kv_cache_gb,
            "gpu_memory_utilization": gpu_memory_utilization,
            "max_model_len": max_model_len,
            "sleep_mode": mode == "inprocess",
        }
        python_path = _resolve_python(python) if mode == "worker" else None
        try:
            model_dir = self._save(policy, "model")
            policy.processor.save_pretrained(model_dir)
            if mode == "inprocess":
                from vlagent.rollout.vllm_worker import Sampler

                self._sampler = Sampler(str(model_dir), **opts)
            else:
                self._start_worker(python_path, model_dir, opts, startup_timeout)
        except BaseException:
            self.close()
            raise

    # -- worker process -------------------------------------------------------------------
    def _start_worker(
        self, python: Path | None, model_dir: Path, opts: dict, timeout: float
    ) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self._log_path = self._dir / "worker.log"
        # -P: the worker's folder (vlagent/rollout) must not shadow modules of the vLLM venv.
        argv = [str(python), "-P", str(WORKER), "--model", str(model_dir)]
        argv += ["--read-fd", str(to_child_r), "--write-fd", str(from_child_w)]
        argv += ["--options", json.dumps(opts)]
        with open(self._log_path, "wb") as log:
            self._proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(to_child_r, from_child_w), env=_worker_env(),
            )  # fmt: skip
        os.close(to_child_r)
        os.close(from_child_w)
        self._wr = os.fdopen(to_child_w, "wb")
        self._rd = os.fdopen(from_child_r, "rb")
        answer = self._receive(timeout, "starting")
        if not answer.get("ok"):
            raise EngineError(f"vLLM worker failed to start: {answer.get('error')}\n{self._tail()}")

    def _tail(self, lines: int = 30) -> str:
        path = getattr(self, "_log_path", None)
        if path is None or not path.exists():
            return ""
        text = path.read_text(errors="replace").splitlines()[-lines:]
        return f"worker log {path} (last {len(text)} lines):\n" + "\n".join(text)

    def _receive(self, timeout: float, what: str) -> dict:
        ready, _, _ = select.select([self._rd], [], [], timeout)
        if not ready:
            raise EngineError(f"vLLM worker gave no answer within {timeout:.0f} s ({what})")
        try:
            return read_msg(self._rd)
        except EOFError:
            code = self._proc.wait(timeout=30) if self._proc else None
            raise EngineError(
                f"vLLM worker died while {what} (exit code {code})\n{self._tail()}"
            ) from None

    def _call(self, msg: dict) -> dict:
        if self._proc is None:
            raise EngineError("vLLM engine is closed")
        op = msg.get("op")
        try:
            write_msg(self._wr, msg)
        except (BrokenPipeError, OSError):
            code = self._proc.poll()
            raise EngineError(f"vLLM worker died (exit code {code})\n{self._tail()}") from None
        answer = self._receive(self.request_timeout, f"serving {op!r}")
        if not answer.get("ok"):
            raise EngineError(f"vLLM worker rejected {op!r}: {answer.get('error')}")
        return answer

    # -- the contract ---------------------------------------------------------------------
    def sample_turns(
        self,
        segments: Sequence[Segment],
        max_new: Sequence[int],
        *,
        temperature: float = 1.0,
        greedy: bool = False,
        seed: int | None = None,
    ) -> list[Turn]:
        check_request(segments, max_new, temperature, greedy, self.vocab_size)
        requests = build_requests(self.policy, segments, max_new, seed)
        params = {
            "temperature": float(temperature),
            "greedy": bool(greedy),
            "forbidden": self.forbidden,
            "vocab_size": self.vocab_size,
            "eos": self.eos,
        }
        if self._sampler is not None:
            turns = self._sampler.generate(requests, params)
        else:
            turns = self._call({"op": "generate", "requests": requests, "params": params})["turns"]
        eos = set(self.eos)
        out = []
        for t, allow in zip(turns, max_new, strict=True):
            ids, lps = list(t["ids"])[:allow], list(t["logprobs"])[:allow]
            out.append((ids, lps, bool(ids) and ids[-1] in eos))
        return out

    def push_weights(self, policy: Any, version: int) -> None:
        """Load ``policy``'s current weights into vLLM and drop its encoder and prefix caches."""
        self.policy = policy
        if self._sampler is not None:
            self._sampler.load_weights(items=weight_items(policy.model))
        else:
            path = self._save(policy, f"weights_{int(version)}")
            try:
                self._call({"op": "load_weights", "path": str(path)})
            finally:
                shutil.rmtree(path, ignore_errors=True)
        self.version = int(version)

    def _save(self, policy: Any, name: str) -> Path:
        """Write the weights as a safetensors checkpoint folder (temp name, then renamed).

        Tied embeddings are written untied (``lm_head.weight`` explicit, tie flags off): vLLM's
        in-place reload refills the embedding but not a tied LM head, which would keep the old
        rows.
        """
        import copy

        from safetensors.torch import save_file

        final = self._dir / name
        tmp = self._dir / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        model = policy.model
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        config = copy.deepcopy(base.config)
        for c in (config, getattr(config, "text_config", None)):
            if c is not None and hasattr(c, "tie_word_embeddings"):
                c.tie_word_embeddings = False
        config.save_pretrained(tmp)
        gen = getattr(base, "generation_config", None)
        if gen is not None:
            gen.save_pretrained(tmp)
        tensors = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in weight_items(model)}
        save_file(tensors, str(tmp / "model.safetensors"))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        return final

    def sleep(self) -> None:
        if self._sampler is not None:
            self._sampler.sleep()

    def wake_up(self) -> None:
        if self._sampler is not None:
            self._sampler.wake_up()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                write_msg(self._wr, {"op": "close"})
                proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(timeout=30)
            for f in (self._wr, self._rd):
                with contextlib.suppress(OSError):  # a dead worker: nothing left to flush
                    f.close()
        self._sampler = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def __del__(self) -> None:  # a forgotten close() must not leave a worker behind
        with contextlib.suppress(Exception):
            self.close()


def _resolve_python(python: str) -> Path:
    """The vLLM venv's interpreter, or an :class:`EngineError` naming the setup script."""
    cand = Path(python).expanduser()
    tries = [cand] if cand.is_absolute() else [Path.cwd() / cand, _repo_root() / cand]
    for p in tries:
        if p.is_file() and os.access(p, os.X_OK):
            return p
    raise EngineError(
        f"the vllm engine's python {python!r} does not exist (looked at "
        f"{', '.join(str(t) for t in tries)}); {SETUP_HINT}, or set grpo.vllm_python"
    )


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _worker_env() -> dict[str, str]:
    """The trainer's environment without its venv (the worker runs another interpreter)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env["VLAGENT_TRAINER_PYTHON"] = sys.executable
    return env
