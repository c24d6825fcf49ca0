"""Vision patch embedding as one matmul instead of a ``Conv3d``.

Qwen2-VL, Qwen2.5-VL and Qwen3-VL cut every image into patches in the processor: one
``pixel_values`` row is one patch of C × T × P × P values (channels, temporal patch, patch side in
pixels). The vision tower's ``PatchEmbed`` views the rows as [N, C, T, P, P] and embeds them with
a ``Conv3d`` whose kernel equals its stride, so each patch gives exactly one output: the
convolution is a Linear on the flattened patch, ``x.reshape(N, C·T·P·P) @ W.reshape(D, -1).T``.
On CPU the matmul is faster than the convolution kernels, forward and backward
(``docs/BENCHMARKS.md``).

``fuse_patch_embed(model)`` swaps each such ``proj`` for a :class:`PatchLinear` that keeps the
convolution's own parameters (same objects, same [D, C, T, P, P] shape), so the state dict,
``save_pretrained`` and ``from_pretrained`` see the original ``...patch_embed.proj.weight``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["PatchLinear", "fuse_patch_embed", "is_patchwise"]


def is_patchwise(conv: nn.Module) -> bool:
    """Whether ``conv`` is a ``Conv3d`` that maps each non-overlapping block to one output.

    True when kernel_size == stride, padding 0, dilation 1 and groups 1: then the convolution of
    a [N, C, kT, kH, kW] input is a Linear on the flattened block.
    """
    if not isinstance(conv, nn.Conv3d):
        return False
    padding = conv.padding if isinstance(conv.padding, tuple) else (conv.padding,) * 3
    return (
        tuple(conv.kernel_size) == tuple(conv.stride)
        and all(p == 0 for p in padding)
        and all(d == 1 for d in conv.dilation)
        and conv.groups == 1
    )


class PatchLinear(nn.Module):
    """A patch-wise ``Conv3d`` computed as ``F.linear`` on flattened patches.

    Holds the convolution's parameters unchanged: ``weight`` [D, C, kT, kH, kW] and ``bias`` [D]
    (or None), so parameter names and shapes in a state dict stay those of the ``Conv3d``.

    Args:
        conv: a ``Conv3d`` for which :func:`is_patchwise` holds.
    """

    def __init__(self, conv: nn.Conv3d) -> None:
        super().__init__()
        if not is_patchwise(conv):
            raise ValueError(
                f"PatchLinear needs a Conv3d with kernel_size == stride, padding 0, dilation 1, "
                f"groups 1; got {conv}"
            )
        self.in_channels = conv.in_channels
        self.out_channels = conv.out_channels
        self.kernel_size = tuple(conv.kernel_size)
        self.stride = tuple(conv.stride)
        self.weight = conv.weight  # the same Parameter object: optimizers and tying still see it
        if conv.bias is not None:
            self.bias = conv.bias
        else:
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed patches.

        Args:
            x: [N, C, kT, kH, kW] patches (the shape ``PatchEmbed`` passes). Any other
                [N, C, T, H, W] input takes the convolution itself, so results never depend on
                the fast path.

        Returns:
            [N, D, 1, 1, 1] for patch-shaped input (what the ``Conv3d`` returns), else the
            convolution's output.
        """
        patch_shaped = x.dim() == 5 and tuple(x.shape[1:]) == (self.in_channels, *self.kernel_size)
        if patch_shaped:
            n = x.shape[0]
            # A view of the [D, C, kT, kH, kW] parameter: its gradient lands on the parameter.
            w = self.weight.reshape(self.out_channels, -1)
            out = F.linear(x.reshape(n, -1), w, self.bias)  # [N, D]
            return out.view(n, self.out_channels, 1, 1, 1)
        return F.conv3d(x, self.weight, self.bias, self.stride)

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"bias={self.bias is not None} (Conv3d as a matmul)"
        )


def fuse_patch_embed(model: nn.Module) -> int:
    """Swap every patch-wise ``proj`` Conv3d of the vision towers in ``model`` for a matmul.

    Looks at modules whose class name ends in ``PatchEmbed`` (``PatchEmbed`` of Qwen2-VL,
    ``Qwen2_5_VisionPatchEmbed``, ``Qwen3VLVisionPatchEmbed``) and replaces their ``proj`` when
    :func:`is_patchwise` holds; any other convolution is left alone. In place and idempotent.

    Returns:
        How many convolutions were replaced (0 for a model without one, or already fused).
    """
    swapped = 0
    for module in list(model.modules()):
        if not type(module).__name__.endswith("PatchEmbed"):
            continue
        proj = getattr(module, "proj", None)
        if isinstance(proj, nn.Conv3d) and is_patchwise(proj):
            module.proj = PatchLinear(proj)
            swapped += 1
    return swapped
