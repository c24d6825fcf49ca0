"""What goes into an exported model folder besides the weights: generation config, model card,
and the optional upload to the Hugging Face Hub.

The exported ``final/`` folder is a plain ``save_pretrained`` folder (config.json naming the
transformers architecture, model.safetensors with the release key layout, generation_config.json,
processor_config.json, tokenizer files, chat_template.jinja) plus ``README.md``; nothing in it
needs vlagent to load.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from pathlib import Path
from typing import Any

from vlagent.rollout.engine import eos_ids

log = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

COORDINATES = {
    "qwen2_vl": "integers in [0, 1000) of the image width / height",
    "qwen2_5_vl": "absolute pixels of the image as resized by the processor",
    "qwen3_vl": "integers in [0, 1000) of the image width / height",
}
"""How each family writes screen coordinates in its answers."""


def generation_config(policy: Any) -> Any:
    """A copy of the policy's generation config with the eos ids the rollouts stop at (the
    tokenizer's eos and the config's own) and a pad id (the tokenizer's, else the first eos)."""
    gen = copy.deepcopy(policy.model.generation_config)
    eos = eos_ids(policy)
    gen.eos_token_id = eos[0] if len(eos) == 1 else eos
    pad = policy.tokenizer.pad_token_id
    gen.pad_token_id = int(pad) if pad is not None else eos[0]
    return gen


def last_val_metrics(metrics_path: Path, phase: str) -> tuple[int, dict[str, float]] | None:
    """The latest ``val/*`` scalars of ``phase`` in ``metrics.jsonl`` as (step, values)."""
    if not metrics_path.is_file():
        return None
    found = None
    for line in metrics_path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("phase") != phase:
            continue
        val = {k: v for k, v in rec.items() if k.startswith("val/") and v is not None}
        if val:
            found = (int(rec["step"]), val)
    return found


def _base_model_meta(path: str) -> str:
    """``base_model:`` front matter for a hub id; local folders are not named there."""
    if Path(path).expanduser().exists() or not _HUB_ID.match(path):
        return ""
    return f"base_model: {path}\n"


def model_card(
    cfg: Any,
    family: str,
    phase: str,
    step: int,
    stop_reason: str,
    train_seconds: float,
    val: tuple[int, dict[str, float]] | None,
) -> str:
    """The ``README.md`` of an exported model: what it is, how it was trained, its last
    validation numbers, and how to load it with transformers or vLLM.

    Args:
        cfg: the run's ``TrainConfig``.
        family: the policy's Qwen-VL family.
        val: (step, {val/name: value}) of the last validation, or None.
    """
    algo = f" ({cfg.algo})" if cfg.recipe == "grpo" else ""
    base = cfg.model.path
    rows = [
        ("base model", f"`{base}`"),
        ("family", family),
        ("answer coordinates", COORDINATES.get(family, "see the family's docs")),
        ("recipe", f"{cfg.recipe}{algo}, phase `{phase}`"),
        ("world", f"{cfg.world} (task source: {cfg.task.source})"),
        ("steps", f"{step} (stopped by: {stop_reason})"),
        ("training time", f"{train_seconds:.1f} s"),
        ("LoRA", "merged into the weights" if cfg.model.lora.enabled else "no (full fine-tune)"),
        ("seed", str(cfg.run.seed)),
    ]
    table = "| | |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    if val is None:
        evaluation = "No validation ran during training (`eval.every` = 0).\n"
    else:
        vstep, values = val
        evaluation = f"Greedy validation at step {vstep}:\n\n| metric | value |\n|---|---|\n"
        evaluation += "".join(f"| {k[4:]} | {v:.4g} |\n" for k, v in sorted(values.items()))
    return (
        "---\n"
        "library_name: transformers\n"
        "pipeline_tag: image-text-to-text\n"
        f"{_base_model_meta(base)}"
        f"tags: [vlagent, {cfg.recipe}, {cfg.world}, {family}]\n"
        "---\n\n"
        f"# {Path(cfg.run.out_dir).resolve().name}\n\n"
        f"A {family} vision-language policy trained with vlagent.\n\n"
        f"{table}\n"
        "## Evaluation\n\n"
        f"{evaluation}\n"
        "## Use\n\n"
        "A plain transformers folder; the prompt format is the bundled chat template.\n\n"
        "```python\n"
        "from transformers import AutoModelForImageTextToText, AutoProcessor\n\n"
        'model = AutoModelForImageTextToText.from_pretrained("<this folder>")\n'
        'processor = AutoProcessor.from_pretrained("<this folder>")\n'
        "```\n\n"
        "Serve with vLLM: `vllm serve <this folder>`. The full training config is in the run\n"
        "folder's `config.yaml`.\n"
    )


def push_folder(folder: Path, repo_id: str, private: bool = True) -> str | None:
    """Upload ``folder`` to the hub model repo ``repo_id`` (created if missing).

    Returns:
        The commit URL, or None when the upload failed; a failure (no network, no token, no
        rights) is logged as a warning naming the repo and the local folder, never raised, so
        a finished run is never lost to it.
    """
    try:
        from huggingface_hub import HfApi

        api = HfApi()
        api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        info = api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type="model",
            commit_message="Upload model trained with vlagent",
        )
    except Exception as exc:  # network, auth and hub errors come in many types
        log.warning(
            "push_to_hub: uploading %s to the hub repo %r failed (%s: %s). The run is complete "
            "and the model stays in %s; upload it later with `hf upload %s %s`.",
            folder,
            repo_id,
            type(exc).__name__,
            exc,
            folder,
            repo_id,
            folder,
        )
        return None
    url = str(getattr(info, "commit_url", info))
    log.info("pushed %s to the hub repo %s (%s)", folder, repo_id, url)
    return url
