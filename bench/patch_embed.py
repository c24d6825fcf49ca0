"""Vision tower with the patch-embedding Conv3d vs the equal matmul (``model.fuse_patch_embed``).

    python -m bench.patch_embed --repeats 7      # writes bench/results/patch_embed.json

Two copies of the bench job's tiny Qwen2.5-VL (``bench.common.ModelSize``: vision hidden 128,
4 blocks) on one thread, one as loaded (Conv3d) and one after
``vlagent.models.patch_embed.fuse_patch_embed``; their vision towers run alternately on the
same random pixel patches (forward under no_grad, and forward + backward of the pooled output)
at 448×448 and 728×1288. Medians over ``--repeats`` after one warm-up each.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, ModelSize, ensure_bench_model, machine_info


def bench(model_dir: Path, repeats: int) -> list[dict[str, Any]]:
    """Median times (ms) of both towers per image size and pass."""
    import torch
    from transformers import AutoModelForImageTextToText

    from vlagent.models.patch_embed import fuse_patch_embed

    torch.set_num_threads(1)
    conv = AutoModelForImageTextToText.from_pretrained(model_dir)
    mm = AutoModelForImageTextToText.from_pretrained(model_dir)
    assert fuse_patch_embed(mm) == 1
    rows = []
    for h, w in ((448, 448), (728, 1288)):
        pe = conv.model.visual.patch_embed
        grid = torch.tensor([[1, h // pe.patch_size, w // pe.patch_size]])
        pixels = torch.randn(int(grid.prod()), pe.proj.weight[0].numel())

        def fwd(m: Any, pixels: Any = pixels, grid: Any = grid) -> None:
            with torch.no_grad():
                m.model.visual(pixels, grid_thw=grid)

        def fwd_bwd(m: Any, pixels: Any = pixels, grid: Any = grid) -> None:
            m.zero_grad()
            m.model.visual(pixels, grid_thw=grid).pooler_output.sum().backward()

        for name, fn in (("forward", fwd), ("forward+backward", fwd_bwd)):
            fn(conv), fn(mm)
            times: dict[str, list[float]] = {"conv3d": [], "matmul": []}
            for _ in range(repeats):
                for key, m in (("conv3d", conv), ("matmul", mm)):
                    t = time.perf_counter()
                    fn(m)
                    times[key].append(time.perf_counter() - t)
            a, b = (statistics.median(times[k]) * 1e3 for k in ("conv3d", "matmul"))
            rows.append(
                {
                    "image": f"{h}x{w}",
                    "patches": int(grid.prod()),
                    "pass": name,
                    "conv3d_ms": a,
                    "matmul_ms": b,
                    "saved_pct": 100 * (1 - b / a),
                }  # fmt: skip
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", type=Path, default=REPO / "bench/results/patch_embed.json")
    args = p.parse_args(argv)
    from vlagent.io import atomic_write_json

    with tempfile.TemporaryDirectory() as tmp:
        rows = bench(ensure_bench_model(ModelSize(), Path(tmp)), args.repeats)
    atomic_write_json(
        args.out,
        {
            "command": "python -m bench.patch_embed " + " ".join(sys.argv[1:]),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info(),
            "rows": rows,
        },
    )
    for r in rows:
        sys.stdout.write(
            f"{r['image']} {r['pass']:17s} conv3d {r['conv3d_ms']:7.1f} ms  "
            f"matmul {r['matmul_ms']:7.1f} ms  saved {r['saved_pct']:5.1f} %\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
