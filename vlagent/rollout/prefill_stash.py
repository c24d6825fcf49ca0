"""Reuse the rollout's prompt prefill in the update: one vision + prefill forward per step, not two.

With group prefix sharing (``rollout/prefix.py``) a GRPO step still runs each screenshot through
the vision tower and prefills its prompt twice: once to sample (no grad) and once in the training
forward (with grad). When the update is the first optimizer step on the batch it just sampled,
both run the same function with the same weights. While a :class:`PrefillStash` is active
(``with stash_prefills(model):`` around one step's sampling and update), the sampler runs its
prefill with grad and keeps, per prompt, the keys/values of every layer and the logits of the
last prompt position, still attached to that forward's graph; the training forward reads them
instead of prefilling again.

Exact, or not used:
    * a lookup is served only while every trainable parameter's version counter equals its value
      at sampling (no optimizer step in between: later minibatches and epochs prefill afresh),
      under grad mode (reference and recomputed log-probs prefill as before), for the same model;
    * sampling runs in eval mode and training in train mode, so models with active dropout never
      get a stash (:func:`has_dropout`).

Gradients: each micro-batch's backward stops at leaf copies of the stashed tensors, where it
accumulates; :meth:`PrefillStash.backward` then sends those gradients through the prefill's
graph once, before the optimizer step. By linearity that is the gradient of one prefill per
micro-batch, with one vision + prefill backward instead of one per micro-batch.

Prompts from different sampling calls may have different widths: the update left-pads their
cached keys/values with zeros under a zero attention mask (positions come from the mask's
cumulative sum, so they do not move).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

import torch
import torch.nn.functional as F

_ACTIVE: ContextVar[PrefillStash | None] = ContextVar("vlagent_prefill_stash", default=None)


@dataclasses.dataclass
class _Entry:
    """One prompt's prefill, attached to the sampling forward's graph.

    Attributes:
        prompt: the ``Prompt`` object (identity is the key; rows built from the rollout share it).
        kv: per layer (keys, values), each [1, kv_heads, P, head_dim].
        first: [V] logits of the last prompt position (they predict completion token 0).
        delta: [1] M-RoPE offset of the prompt.
        attention: [P] the prompt's attention mask (left padding 0) in its sampling batch.
        leaves: detached copies the update reads (kv flattened, then ``first``), made on first use.
    """

    prompt: object
    kv: list[tuple[torch.Tensor, torch.Tensor]]
    first: torch.Tensor
    delta: torch.Tensor
    attention: torch.Tensor
    leaves: list[torch.Tensor] | None = None

    def attached(self) -> list[torch.Tensor]:
        return [t for pair in self.kv for t in pair] + [self.first]


def has_dropout(model: torch.nn.Module) -> bool:
    """Whether training mode would drop anything: a dropout module with p > 0, or a config
    field named ``*dropout*`` > 0 (Qwen's attention dropout is functional, read from config)."""
    if any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules()):
        return True
    seen: list[Any] = []
    todo = [getattr(model, "config", None)]
    while todo:
        cfg = todo.pop()
        if cfg is None or any(cfg is s for s in seen):
            continue
        seen.append(cfg)
        for key, value in vars(cfg).items():
            if "dropout" in key and isinstance(value, int | float) and value > 0:
                return True
            if hasattr(value, "to_dict") and hasattr(value, "model_type"):  # a sub-config
                todo.append(value)
    return False


class PrefillStash:
    """Prefills kept from one step's sampling for its update (module docstring)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self._params = [p for p in model.parameters() if p.requires_grad]
        self._versions: tuple[int, ...] | None = None
        self._entries: dict[int, _Entry] = {}
        self.served = 0  # lookups answered from the stash

    def _version(self) -> tuple[int, ...]:
        return tuple(p._version for p in self._params)

    def keep(
        self,
        prompts: Sequence[object],
        cache: Any,
        logits: torch.Tensor,
        deltas: torch.Tensor,
        attention: torch.Tensor,
    ) -> tuple[Any, torch.Tensor]:
        """Stash a graph-attached prefill of ``prompts`` (U, in batch order); return the cache
        and last-position logits [U, V] detached, for the sampler to extend."""
        version = self._version()
        if version != self._versions:  # weights moved since the last keep: those are stale
            self._entries.clear()
            self._versions = version
        layers = [(layer.keys, layer.values) for layer in cache.layers]
        for i, prompt in enumerate(prompts):
            self._entries[id(prompt)] = _Entry(
                prompt=prompt,
                kv=[(k[i : i + 1], v[i : i + 1]) for k, v in layers],
                first=logits[i],
                delta=deltas[i],
                attention=attention[i],
            )
        for layer in cache.layers:
            layer.keys, layer.values = layer.keys.detach(), layer.values.detach()
        return cache, logits.detach()

    def lookup(
        self, model: Any, prompts: Sequence[object]
    ) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor] | None:
        """The stashed prefill of ``prompts`` (U) as (cache, first logits [U, V], deltas [U, 1],
        prompt attention [U, P']), or None when it must be recomputed (module docstring)."""
        if model is not self.model or not torch.is_grad_enabled() or not prompts:
            return None
        entries = [self._entries.get(id(p)) for p in prompts]
        if any(e is None or e.prompt is not p for e, p in zip(entries, prompts, strict=True)):
            return None
        if self._version() != self._versions:
            return None
        from transformers import DynamicCache

        width = max(int(e.attention.shape[0]) for e in entries)
        per_entry = []
        for e in entries:
            if e.leaves is None:
                e.leaves = [t.detach().requires_grad_(True) for t in e.attached()]
            pad = width - int(e.attention.shape[0])
            per_entry.append([F.pad(t, (0, 0, pad, 0)) for t in e.leaves[:-1]])  # left, dim -2
        n_layers = len(entries[0].kv)
        kv = [
            (
                torch.cat([p[2 * j] for p in per_entry]),
                torch.cat([p[2 * j + 1] for p in per_entry]),
            )
            for j in range(n_layers)
        ]
        cache = DynamicCache(ddp_cache_data=kv, config=model.config)
        first = torch.stack([e.leaves[-1] for e in entries])
        deltas = torch.stack([e.delta for e in entries])
        attention = torch.stack(
            [F.pad(e.attention, (width - int(e.attention.shape[0]), 0)) for e in entries]
        )
        self.served += 1
        return cache, first, deltas, attention

    def backward(self) -> int:
        """Send the gradients accumulated on the leaves through the prefill graph (once), then
        drop every entry. Returns how many prompts' prefills the update reused."""
        tensors, grads, used = [], [], 0
        for e in self._entries.values():
            if e.leaves is None:
                continue
            used += 1
            for t, leaf in zip(e.attached(), e.leaves, strict=True):
                if leaf.grad is not None and t.requires_grad:
                    tensors.append(t)
                    grads.append(leaf.grad)
        if tensors:
            torch.autograd.backward(tensors, grads)
        self.clear()
        return used

    def clear(self) -> None:
        self._entries.clear()
        self._versions = None


def active_stash(model: Any) -> PrefillStash | None:
    """The active stash if it belongs to ``model``."""
    stash = _ACTIVE.get()
    return stash if stash is not None and stash.model is model else None


def lookup_prefill(
    model: Any, prompts: Sequence[object] | None
) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """:meth:`PrefillStash.lookup` on the active stash, or None without one."""
    stash = _ACTIVE.get()
    return None if stash is None or prompts is None else stash.lookup(model, prompts)


def finish_stash() -> int:
    """The update's end of a minibatch: :meth:`PrefillStash.backward` on the active stash."""
    stash = _ACTIVE.get()
    return stash.backward() if stash is not None else 0


@contextlib.contextmanager
def stash_prefills(model: torch.nn.Module) -> Iterator[PrefillStash]:
    """Keep the sampler's prefills for the update within the block; dropped on exit."""
    stash = PrefillStash(model)
    token = _ACTIVE.set(stash)
    try:
        yield stash
    finally:
        _ACTIVE.reset(token)
        stash.clear()
