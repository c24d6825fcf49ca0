"""LoRA through PEFT on the language model; the vision tower frozen or fully trainable.

Checkpoints of a LoRA run hold only the adapter (plus the vision tower when it trains) and the
processor; ``final/`` holds the merged model, a normal checkpoint that ``load_policy`` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlagent.algo_config import LoRAConfig

# Language-model linear layers live under ``language_model``; the vision tower is ``visual``.
_LM_SCOPE = "language_model"


def lora_target_regex(names: list[str]) -> str:
    """A PEFT ``target_modules`` regex matching ``names`` inside the language model only."""
    alt = "|".join(names)
    return rf".*{_LM_SCOPE}.*\.({alt})$"


def wrap_lora(model: Any, cfg: LoRAConfig) -> Any:
    """Wrap ``model`` with fresh LoRA adapters (base weights frozen).

    Returns:
        A ``peft.PeftModel``; with ``cfg.train_vision`` the whole vision tower also trains.
    """
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=cfg.r,
        lora_alpha=cfg.alpha,
        lora_dropout=cfg.dropout,
        target_modules=lora_target_regex(list(cfg.target_modules)),
        modules_to_save=["visual"] if cfg.train_vision else None,
        bias="none",
    )
    return get_peft_model(model, config)


def load_lora(model: Any, path: str | Path) -> Any:
    """Attach the adapter saved in ``path`` to ``model``, trainable (for resuming)."""
    from peft import PeftModel

    return PeftModel.from_pretrained(model, str(path), is_trainable=True)


def merge_lora(model: Any) -> Any:
    """The plain transformers model with adapters merged into the weights (in place)."""
    return model.merge_and_unload()


def trainable_parameters(model: Any) -> tuple[int, int]:
    """(trainable, total) parameter counts."""
    total = sum(p.numel() for p in model.parameters())
    train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return train, total
