"""Pictures a person looks at: PNG and animated GIF writing and accuracy plots (episode pictures: each world)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np


def save_png(image: np.ndarray, path: str | Path) -> Path:
    """Write a uint8 H×W×3 array as PNG (through a temp file, then rename)."""
    from PIL import Image

    from vlagent.io import atomic_path

    path = Path(path)
    with atomic_path(path, suffix=".png") as tmp:
        Image.fromarray(image).save(tmp, format="PNG")
    return path


def save_gif(frames: list[np.ndarray], path: str | Path, ms_per_frame: int = 200) -> Path:
    """Write uint8 H×W×3 frames (all the same size) as an animated GIF that loops, atomically.

    Raises:
        ValueError: no frames, or frames of different shapes (the caller's bug, named here).
    """
    from PIL import Image

    from vlagent.io import atomic_path

    if not frames:
        raise ValueError("save_gif: no frames")
    shapes = {np.asarray(f).shape for f in frames}
    if len(shapes) != 1:
        raise ValueError(f"save_gif: frames differ in shape: {sorted(shapes)}")
    images = [Image.fromarray(np.asarray(f, dtype=np.uint8)) for f in frames]
    path = Path(path)
    with atomic_path(path, suffix=".gif") as tmp:
        images[0].save(
            tmp,
            format="GIF",
            save_all=True,
            append_images=images[1:],
            duration=ms_per_frame,
            loop=0,
        )
    return path


def plot_accuracy(
    rows: dict[str, float], baselines: dict[str, float], path: str | Path, title: str
) -> Path:
    """Bar chart of held-out accuracy per stage with baseline lines; saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    names = list(rows)
    vals = [100 * rows[n] for n in names]
    bars = ax.bar(
        names, vals, color=["#999999", "#4C72B0", "#DD8452", "#55A868", "#8172B3"][: len(names)]
    )
    for b, v in zip(bars, vals, strict=True):
        ax.text(b.get_x() + b.get_width() / 2, v + 1, f"{v:.1f}", ha="center", fontsize=9)
    # one style per baseline, however many the level has (7 on element levels)
    styles = itertools.cycle(itertools.product(["--", ":", "-."], ["black", "#C44E52", "#8C8C8C"]))
    for name, v in baselines.items():
        style, colour = next(styles)
        ax.axhline(
            100 * v,
            linestyle=style,
            color=colour,
            linewidth=1,
            label=f"{name} {100 * v:.1f}",
        )
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
