"""The patch-embedding Conv3d computed as a matmul: same outputs, gradients and checkpoints."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from vlagent.config import ModelConfig
from vlagent.models.loading import load_policy
from vlagent.models.patch_embed import PatchLinear, fuse_patch_embed, is_patchwise

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
PROJ = "model.visual.patch_embed.proj"


def _close(got: torch.Tensor, want: torch.Tensor, what: str, tol: float = 1e-5) -> None:
    """max |got - want| <= tol · max(1, max |want|): fp32 equality at the tensor's own scale."""
    assert got.shape == want.shape, what
    scale = max(1.0, want.abs().max().item())
    diff = (got - want).abs().max().item()
    assert diff <= tol * scale, f"{what}: max abs diff {diff:.3g} at scale {scale:.3g}"


def _pair(path):
    """(Conv3d model, matmul model) loaded from the same checkpoint; a bias (Qwen3-VL's conv
    has one, initialised to 0) gets the same nonzero values in both, so it shows."""
    conv = load_policy(path, fuse_patch_embed=False).model
    fused = load_policy(path).model
    for model in (conv, fused):
        bias = model.get_submodule(PROJ).bias
        if bias is not None:
            with torch.no_grad():
                bias.copy_(torch.linspace(-1.0, 1.0, bias.numel()))
    return conv, fused


def _inputs(model, seed=0):
    """Two images' patch rows [N, C·T·P·P] and their grids (t, h, w), h and w even."""
    grid = torch.tensor([[1, 8, 12], [1, 4, 6]])
    dim = model.get_submodule(PROJ).weight[0].numel()
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(int(grid.prod(-1).sum()), dim, generator=gen), grid


@pytest.mark.parametrize("family", FAMILIES)
def test_vision_tower_outputs_equal(tiny_dirs, family):
    conv, fused = _pair(tiny_dirs[family])
    assert isinstance(conv.get_submodule(PROJ), nn.Conv3d)
    assert isinstance(fused.get_submodule(PROJ), PatchLinear)
    pixels, grid = _inputs(conv)
    with torch.no_grad():
        a = conv.model.visual(pixels, grid_thw=grid)
        b = fused.model.visual(pixels, grid_thw=grid)
    for name in ("last_hidden_state", "pooler_output"):
        _close(getattr(b, name), getattr(a, name), f"{family} {name}")
    # The patch embedding itself, bias included (Qwen3-VL's conv has one).
    with torch.no_grad():
        pe_a = conv.model.visual.patch_embed(pixels)
        pe_b = fused.model.visual.patch_embed(pixels)
    _close(pe_b, pe_a, f"{family} patch_embed")


@pytest.mark.parametrize("family", FAMILIES)
def test_gradients_equal(tiny_dirs, family):
    conv, fused = _pair(tiny_dirs[family])
    pixels, grid = _inputs(conv, seed=1)
    weights = torch.randn(conv.model.visual(pixels, grid_thw=grid).pooler_output.shape)
    for model in (conv, fused):
        model.zero_grad()
        out = model.model.visual(pixels, grid_thw=grid).pooler_output
        (out * weights).sum().backward()
    grads_a = {n: p.grad for n, p in conv.model.visual.named_parameters()}
    grads_b = {n: p.grad for n, p in fused.model.visual.named_parameters()}
    assert grads_a.keys() == grads_b.keys()  # same parameter names after the swap
    for name, g in grads_a.items():
        assert g is not None and grads_b[name] is not None, name
        _close(grads_b[name], g, f"{family} grad {name}")
    assert grads_b["patch_embed.proj.weight"].abs().sum() > 0


def test_save_and_load_keep_conv_names_and_shapes(tiny_dirs, tmp_path):
    from safetensors import safe_open

    conv = load_policy(tiny_dirs["qwen3_vl"], fuse_patch_embed=False).model
    policy = load_policy(tiny_dirs["qwen3_vl"])
    fused = policy.model
    with torch.no_grad():  # a trained-looking change, so the round trip carries real values
        fused.get_submodule(PROJ).weight.add_(0.01)
    fused.save_pretrained(tmp_path / "saved")
    policy.processor.save_pretrained(tmp_path / "saved")
    files = sorted((tmp_path / "saved").glob("*.safetensors"))
    shapes = {}
    for f in files:
        with safe_open(str(f), "pt") as st:
            for key in st.keys():  # noqa: SIM118 (safe_open has keys(), not __iter__)
                shapes[key] = tuple(st.get_slice(key).get_shape())
    key = next(k for k in shapes if k.endswith("patch_embed.proj.weight"))
    assert shapes[key] == tuple(conv.get_submodule(PROJ).weight.shape)
    assert len(shapes[key]) == 5  # [D, C, T, P, P], as the Conv3d stores it
    assert any(k.endswith("patch_embed.proj.bias") for k in shapes)

    plain = load_policy(tmp_path / "saved", fuse_patch_embed=False).model
    refused = load_policy(tmp_path / "saved").model
    sd_fused, sd_plain, sd_conv = fused.state_dict(), plain.state_dict(), conv.state_dict()
    assert sd_plain.keys() == sd_fused.keys() == sd_conv.keys()
    for name, tensor in sd_fused.items():
        assert sd_plain[name].shape == tensor.shape, name
        assert torch.equal(sd_plain[name], tensor), name
    assert torch.equal(refused.get_submodule(PROJ).weight, fused.get_submodule(PROJ).weight)


def test_swap_keeps_the_same_parameter_objects_and_is_idempotent(tiny_dirs):
    model = load_policy(tiny_dirs["qwen2_5_vl"], fuse_patch_embed=False).model
    conv = model.get_submodule(PROJ)
    assert fuse_patch_embed(model) == 1
    proj = model.get_submodule(PROJ)
    assert proj.weight is conv.weight and proj.bias is conv.bias is None
    assert fuse_patch_embed(model) == 0
    assert ModelConfig().fuse_patch_embed is True


class ToyPatchEmbed(nn.Module):
    """Named like the transformers classes, with a conv that may or may not be patch-wise."""

    def __init__(self, conv: nn.Conv3d) -> None:
        super().__init__()
        self.proj = conv


@pytest.mark.parametrize(
    "conv",
    [
        nn.Conv3d(3, 8, kernel_size=(2, 4, 4), stride=(1, 4, 4)),  # kernel != stride
        nn.Conv3d(3, 8, kernel_size=(2, 4, 4), stride=(2, 4, 4), padding=1),
        nn.Conv3d(3, 8, kernel_size=(2, 4, 4), stride=(2, 4, 4), dilation=(1, 2, 2)),
        nn.Conv3d(4, 8, kernel_size=(2, 4, 4), stride=(2, 4, 4), groups=2),
    ],
)
def test_non_patchwise_conv_is_left_alone(conv):
    toy = ToyPatchEmbed(conv)
    assert not is_patchwise(conv)
    assert fuse_patch_embed(toy) == 0
    assert toy.proj is conv
    with pytest.raises(ValueError, match="kernel_size == stride"):
        PatchLinear(conv)


def test_only_patch_embed_modules_are_touched():
    holder = nn.Sequential(nn.Conv3d(3, 8, kernel_size=2, stride=2))
    assert is_patchwise(holder[0])
    assert fuse_patch_embed(holder) == 0
    assert isinstance(holder[0], nn.Conv3d)


def test_patch_linear_falls_back_to_conv_for_larger_inputs():
    torch.manual_seed(0)
    conv = nn.Conv3d(3, 8, kernel_size=(2, 4, 4), stride=(2, 4, 4), bias=True)
    lin = PatchLinear(conv)
    patches = torch.randn(5, 3, 2, 4, 4)
    torch.testing.assert_close(lin(patches), conv(patches), atol=1e-6, rtol=1e-5)
    volume = torch.randn(2, 3, 4, 8, 12)  # several patches per sample: the convolution path
    torch.testing.assert_close(lin(volume), conv(volume), atol=1e-6, rtol=1e-5)
