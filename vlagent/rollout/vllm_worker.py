"""vLLM sampler for the ``vllm`` rollout engine: a standalone module (stdlib, numpy, PIL, torch,
vllm; never vlagent, which the vLLM venv does not have).

Two ways it runs (``rollout/vllm_engine.py`` chooses):
    in-process  on a GPU the trainer imports :class:`Sampler` and calls it directly (same torch)
    worker      on CPU ``.venv-vllm/bin/python vllm_worker.py --model DIR --read-fd R --write-fd W``
                serves requests from the trainer over two pipes: length-prefixed pickles of plain
                dicts, lists, numbers, strings and bytes (never numpy or torch objects, whose
                versions differ between the venvs); logs go to the process's stdout/stderr

Requests (``op``): ``generate`` {requests, params}, ``load_weights`` {path}, ``sleep``,
``wake_up``, ``ping``, ``close``. Answers: {"ok": True, ...} or {"ok": False, "error": text}.
A generate request is {"ids": [P] token ids with image pads expanded, "images": [{"shape":
[H, W, 3], "data": H*W*3 uint8 bytes}] (already at the processor's resized size, in pixels),
"max_tokens": int, "seed": int | None}; params are {"temperature", "greedy", "forbidden": ids
never sampled, "vocab_size": V, "eos": stop ids}. Each answer turn is {"ids", "logprobs"}: the
sampled ids (eos included) and their log-probs under softmax(masked logits / temperature).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import struct
import sys
import traceback
from collections.abc import Iterable
from typing import Any, BinaryIO

_HEADER = struct.Struct("<Q")


def write_msg(stream: BinaryIO, obj: Any) -> None:
    """Write one length-prefixed pickle (protocol 4) and flush."""
    data = pickle.dumps(obj, protocol=4)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_msg(stream: BinaryIO) -> Any:
    """Read one length-prefixed pickle; raises EOFError when the other side closed the pipe."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError("pipe closed")
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("pipe closed mid-message")
    return pickle.loads(data)


def allowed_ids(vocab_size: int, forbidden: Iterable[int]) -> list[int]:
    """Every id in [0, vocab_size) except ``forbidden``."""
    bad = set(forbidden)
    return [i for i in range(vocab_size) if i not in bad]


class Sampler:
    """One ``vllm.LLM`` with the rollout engine's sampling semantics.

    Args:
        model_dir: a Hugging Face checkpoint folder (weights, config, processor).
        dtype: "float32" | "bfloat16" | "float16".
        kv_cache_gb: KV-cache size on CPU (``VLLM_CPU_KVCACHE_SPACE``); ignored on GPU.
        gpu_memory_utilization: fraction of GPU memory vLLM may take (colocated with training).
        max_model_len: context limit (None: the checkpoint's).
        sleep_mode: enable ``sleep`` / ``wake_up`` (GPU only).
        max_images: images per prompt vLLM accepts.
        seed: vLLM's global seed.
    """

    def __init__(
        self,
        model_dir: str,
        *,
        dtype: str = "float32",
        kv_cache_gb: float = 1.0,
        gpu_memory_utilization: float = 0.3,
        max_model_len: int | None = None,
        sleep_mode: bool = False,
        max_images: int = 8,
        seed: int = 0,
    ) -> None:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(max(1, round(kv_cache_gb))))
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        # One process: weights reload from an iterator and the engine's caches reset in place.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        from vllm import LLM

        kwargs: dict[str, Any] = {
            "model": model_dir,
            "dtype": dtype,
            "seed": seed,
            "logprobs_mode": "processed_logprobs",
            "enable_prefix_caching": True,
            "limit_mm_per_prompt": {"image": max_images, "video": 0},
            "skip_tokenizer_init": False,
            "mm_device_do_normalize": False,
        }
        import torch

        if torch.cuda.is_available():
            kwargs.update(
                gpu_memory_utilization=gpu_memory_utilization, enable_sleep_mode=sleep_mode
            )
        else:
            kwargs["enforce_eager"] = True
        if max_model_len:
            kwargs["max_model_len"] = int(max_model_len)
        self.llm = LLM(**kwargs)
        self._allowed: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        self.asleep = False

    def _allowed_for(self, vocab_size: int, forbidden: list[int]) -> list[int]:
        key = (int(vocab_size), tuple(forbidden))
        if key not in self._allowed:
            self._allowed[key] = allowed_ids(vocab_size, forbidden)
        return self._allowed[key]

    def generate(self, requests: list[dict[str, Any]], params: dict[str, Any]) -> list[dict]:
        """Sample each request; returns per request {"ids": [...], "logprobs": [...]}."""
        import numpy as np
        from PIL import Image
        from vllm import SamplingParams

        allowed = None
        if params.get("forbidden"):
            allowed = self._allowed_for(params["vocab_size"], list(params["forbidden"]))
        prompts, sps = [], []
        for r in requests:
            prompt: dict[str, Any] = {"prompt_token_ids": [int(i) for i in r["ids"]]}
            images = [
                Image.fromarray(np.frombuffer(im["data"], dtype=np.uint8).reshape(im["shape"]))
                for im in r.get("images", [])
            ]
            if images:
                prompt["multi_modal_data"] = {"image": images}
            prompts.append(prompt)
            sps.append(
                SamplingParams(
                    n=1,
                    temperature=0.0 if params["greedy"] else float(params["temperature"]),
                    top_k=0,
                    top_p=1.0,
                    min_p=0.0,
                    repetition_penalty=1.0,
                    presence_penalty=0.0,
                    frequency_penalty=0.0,
                    max_tokens=int(r["max_tokens"]),
                    stop_token_ids=list(params["eos"]),
                    logprobs=0,
                    seed=r.get("seed"),
                    allowed_token_ids=allowed,
                    detokenize=False,
                )
            )
        outs = self.llm.generate(prompts, sps, use_tqdm=False)
        turns = []
        for out in outs:
            comp = out.outputs[0]
            ids = [int(t) for t in comp.token_ids]
            lps = [float(step[t].logprob) for step, t in zip(comp.logprobs, ids, strict=True)]
            turns.append({"ids": ids, "logprobs": lps})
        return turns

    def load_weights(
        self,
        *,
        path: str | None = None,
        items: Iterable[tuple[str, Any]] | None = None,
    ) -> None:
        """Replace the weights (from a safetensors folder ``path`` or ``(name, tensor)`` items,
        checkpoint names) and drop every cache computed with the old ones."""
        if items is None:
            from safetensors.torch import load_file

            if path is None:
                raise ValueError("load_weights needs a path or items")
            files = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
            if not files:
                raise FileNotFoundError(f"no *.safetensors file in {path}")
            items = [kv for f in files for kv in load_file(os.path.join(path, f)).items()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": list(items)})
        self.reset_caches()

    def reset_caches(self) -> None:
        """Forget encoder outputs and KV prefixes (both depend on the weights)."""
        self.llm.llm_engine.reset_encoder_cache()
        self.llm.reset_prefix_cache()

    def sleep(self) -> None:
        """GPU: offload weights, drop the KV cache (level 1)."""
        if not self.asleep:
            self.llm.sleep(level=1)
            self.asleep = True

    def wake_up(self) -> None:
        if self.asleep:
            self.llm.wake_up()
            self.asleep = False


def _serve(sampler: Sampler, rd: BinaryIO, wr: BinaryIO) -> None:
    handlers = {
        "generate": lambda m: {"turns": sampler.generate(m["requests"], m["params"])},
        "load_weights": lambda m: sampler.load_weights(path=m["path"]) or {},
        "reset_caches": lambda m: sampler.reset_caches() or {},
        "sleep": lambda m: {},  # CPU: nothing to free between phases
        "wake_up": lambda m: {},
        "ping": lambda m: {"pid": os.getpid()},
    }
    while True:
        try:
            msg = read_msg(rd)
        except EOFError:
            return
        op = msg.get("op") if isinstance(msg, dict) else None
        if op == "close":
            write_msg(wr, {"ok": True})
            return
        if op not in handlers:
            write_msg(wr, {"ok": False, "error": f"unknown op {op!r}; known: {sorted(handlers)}"})
            continue
        try:
            answer = handlers[op](msg)
        except Exception as exc:  # the trainer gets the message; the worker keeps serving
            traceback.print_exc()
            write_msg(wr, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
            continue
        write_msg(wr, {"ok": True, **answer})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="checkpoint folder")
    parser.add_argument("--read-fd", type=int, required=True)
    parser.add_argument("--write-fd", type=int, required=True)
    parser.add_argument("--options", default="{}", help="JSON keyword arguments of Sampler")
    args = parser.parse_args(argv)
    rd = os.fdopen(args.read_fd, "rb")
    wr = os.fdopen(args.write_fd, "wb")
    try:
        sampler = Sampler(args.model, **json.loads(args.options))
    except Exception as exc:
        traceback.print_exc()
        write_msg(wr, {"ok": False, "error": f"vLLM did not start: {type(exc).__name__}: {exc}"})
        return 1
    write_msg(wr, {"ok": True, "ready": True, "pid": os.getpid()})
    _serve(sampler, rd, wr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
