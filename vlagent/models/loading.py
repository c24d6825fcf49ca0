"""Load a Qwen-VL policy and its processor from a local folder or a hub id.

This is the path real checkpoints take (``Qwen/Qwen2.5-VL-3B-Instruct``, a fine-tuned folder, a
tiny model from ``build-tiny-model``): transformers' Auto classes, with the family read from the
checkpoint's ``config.json``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vlagent.errors import ModelError
from vlagent.models.tiny import FAMILIES, Family

if TYPE_CHECKING:
    from vlagent.models.grammar import TokenGrammar

DType = Literal["auto", "float32", "bfloat16", "float16"]
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclasses.dataclass
class Policy:
    """A loaded policy: the model, its processor, and facts the codec needs.

    Attributes:
        model: a transformers ``*ForConditionalGeneration`` model.
        processor: the matching Qwen-VL processor (tokenizer + image processor + chat template).
        family: the Qwen-VL family, which fixes the coordinate convention of answers.
        source: the folder or hub id it was loaded from.
        grammar: constrained decoding (``codec/action_grammar.py``): the sampler draws only
            replies this automaton accepts and the learner scores tokens under the same
            restricted distribution; set by a world whose replies have one
            (``robot.constrained``); None: the whole vocabulary (less the forbidden ids).
    """

    model: Any
    processor: Any
    family: Family
    source: str
    grammar: TokenGrammar | None = None

    @property
    def tokenizer(self) -> Any:
        return self.processor.tokenizer

    @property
    def patch_factor(self) -> int:
        """Side in pixels of one merged visual token (patch size × merge size)."""
        ip = self.processor.image_processor
        return int(ip.patch_size) * int(ip.merge_size)


def quiet_transformers() -> None:
    """Silence transformers' per-call progress bars and advisory warnings in training and eval loops."""
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def family_of(model_type: str) -> Family:
    """Map a config ``model_type`` to a supported family, or raise a ``ModelError``."""
    if model_type in FAMILIES:
        return model_type  # type: ignore[return-value]
    raise ModelError(
        f"model_type {model_type!r} is not a supported Qwen-VL family; supported: {', '.join(FAMILIES)}"
    )


def _check_source(source: str) -> tuple[str, bool]:
    """Return (source, is_local) after checking a local folder looks like a checkpoint."""
    path = Path(source).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"checkpoint {source!r} is a file; expected a checkpoint folder")
        config = path / "config.json"
        if not config.is_file():
            raise ModelError(
                f"checkpoint folder {str(path)!r} has no config.json; expected a Hugging Face "
                "checkpoint (build one with `vlagent build-tiny-model DIR`)"
            )
        return str(path), True
    looks_local = source.startswith((".", "/", "~")) or not _HUB_ID.match(source)
    if looks_local:
        raise ModelError(
            f"checkpoint folder {source!r} does not exist; pass an existing folder or a hub id "
            "like 'Qwen/Qwen2.5-VL-3B-Instruct'"
        )
    return source, False


def read_family(source: str) -> Family:
    """Read the family from a local checkpoint folder's config.json."""
    source, is_local = _check_source(source)
    if not is_local:
        from transformers import AutoConfig

        return family_of(AutoConfig.from_pretrained(source).model_type)
    cfg = json.loads((Path(source) / "config.json").read_text())
    if "model_type" not in cfg:
        raise ModelError(f"{source}/config.json has no 'model_type'; expected one of {FAMILIES}")
    return family_of(cfg["model_type"])


def load_policy(
    source: str | Path,
    *,
    dtype: DType = "float32",
    device: str = "cpu",
    attn_implementation: str | None = None,
    local_files_only: bool | None = None,
    fuse_patch_embed: bool = True,
) -> Policy:
    """Load a Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoint and its processor.

    Args:
        source: a local checkpoint folder or a hub id.
        dtype: parameter dtype; "auto" keeps the checkpoint's.
        device: torch device for the model ("cpu", "cuda", "cuda:1").
        attn_implementation: e.g. "sdpa", "flash_attention_2"; None lets transformers choose.
        local_files_only: forbid network access; defaults to True for local folders.
        fuse_patch_embed: compute the vision patch-embedding Conv3d as an equal matmul
            (``vlagent/models/patch_embed.py``); parameter names and shapes are unchanged.

    Returns:
        A ``Policy``.

    Raises:
        ModelError: the folder is missing or not a checkpoint, or the family is unsupported.
    """
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    source, is_local = _check_source(str(source))
    family = read_family(source)
    offline = is_local if local_files_only is None else local_files_only
    torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
    kwargs: dict[str, Any] = {"dtype": torch_dtype, "local_files_only": offline}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    try:
        model = AutoModelForImageTextToText.from_pretrained(source, **kwargs)
        processor = AutoProcessor.from_pretrained(source, local_files_only=offline)
    except OSError as exc:
        raise ModelError(f"could not load checkpoint {source!r}: {exc}") from exc
    if fuse_patch_embed:
        from vlagent.models.patch_embed import fuse_patch_embed as fuse

        fuse(model)
    model.to(device)
    # Left padding lets a batch of prompts end at the same column for generation.
    processor.tokenizer.padding_side = "left"
    return Policy(model=model, processor=processor, family=family, source=source)
