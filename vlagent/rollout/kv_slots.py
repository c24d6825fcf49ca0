"""A KV cache that decodes in place: each layer's keys and values live in one buffer sized for
the whole completion, so a decode step writes one column instead of copying the cache.

``transformers``' ``DynamicCache`` grows by ``torch.cat`` every step: for G completions of a
shared prompt of P tokens that is a copy of [N, kv_heads, P + t, head_dim] per layer, keys and
values, at every step t — on the bench job (32 rows, 277-token prompts) two thirds of the
decode loop's CPU time. :func:`expand_into_slots` replaces the prefill's layers by
:class:`SlotLayer` s that hold [N, kv_heads, P + extra, head_dim] buffers, filled with the rows
the sampler continues (the group expansion and the preallocation in one copy); ``update``
writes the new columns and returns views of the filled part. Same numbers as the concatenating
cache: attention reads the same values, laid out with a larger row stride.

Only for sampling (no autograd through the cache); layers of other kinds (sliding windows,
quantized caches) are left as they are and keep concatenating.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from transformers.cache_utils import DynamicLayer


class SlotLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys / values [N, H, L, D] are views of [N, H, capacity, D]
    buffers; past the capacity it falls back to concatenation."""

    def __init__(
        self,
        keys: torch.Tensor,
        values: torch.Tensor,
        capacity: int,
        rows: torch.Tensor | None = None,
    ) -> None:
        """Args: keys / values [U, H, L, D]; ``rows`` [N] which of the U each row copies
        (None: all, in order); ``capacity`` ≥ L columns per row."""
        super().__init__()
        length = keys.shape[-2]
        room = (0, 0, 0, capacity - length)  # pad the L axis: one copy of the U rows (small)
        kbuf, vbuf = F.pad(keys, room), F.pad(values, room)
        if rows is not None:  # the N-row buffers in one gather, no second copy
            kbuf, vbuf = kbuf.index_select(0, rows), vbuf.index_select(0, rows)
        self._kbuf, self._vbuf = kbuf, vbuf
        self.keys = self._kbuf[:, :, :length]
        self.values = self._vbuf[:, :, :length]
        self.device = keys.device
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write [N, H, k, D] new keys / values after the filled part; return the filled views."""
        start = self.keys.shape[-2]
        end = start + key_states.shape[-2]
        if end > self._kbuf.shape[-2]:
            return super().update(key_states, value_states, *args, **kwargs)
        self._kbuf[:, :, start:end] = key_states
        self._vbuf[:, :, start:end] = value_states
        self.keys = self._kbuf[:, :, :end]
        self.values = self._vbuf[:, :, :end]
        return self.keys, self.values


def expand_into_slots(cache: Any, rows: torch.Tensor, extra: int) -> int:
    """Give ``cache``'s plain layers [U, H, P, D] the rows ``rows`` [N] (as
    ``batch_select_indices`` would) in buffers with room for ``extra`` more tokens.

    Layers that are not plain ``DynamicLayer`` s get ``batch_select_indices`` only.

    Returns:
        how many layers were converted.
    """
    converted = 0
    filled = [x for x in cache.layers if x.is_initialized and x.keys is not None]
    u = filled[0].keys.shape[0] if filled else -1  # every layer holds the same U rows
    identity = rows.shape[0] == u and torch.equal(rows, torch.arange(u, device=rows.device))
    for i, layer in enumerate(cache.layers):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.keys.numel():
            cache.layers[i] = SlotLayer(
                layer.keys, layer.values, layer.keys.shape[-2] + extra, None if identity else rows
            )
            converted += 1
        elif not identity:
            layer.batch_select_indices(rows)
    return converted
