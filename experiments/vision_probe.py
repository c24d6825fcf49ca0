"""Is the target's position in the vision tower's output? A linear probe, before any training.

Renders ``--n`` images of each source, runs them through a checkpoint's vision tower (the tiny
model built offline by default: ``model.tiny_seed`` 0, the localization init), flattens the
merged visual tokens [T, D] of each image into one vector, and fits a ridge regression (dual
form, standardized features, lambda = 0.1 * n_features) from the vector to the target's centre
on 75 % of the images; R² is measured on the other 25 %. Sources:

- ``robot``: the top camera of ``embodied.RobotEnv`` (reach, one cube on the table, proprio
  off) at each ``--robot-sizes``; target = the cube's (x, y) on the table, metres.
- ``basic``: the quickstart's screens (224 px, one coloured shape); target = the shape's box
  centre, normalized [0, 1].

    python -m experiments.vision_probe --out docs/results/vision_probe.json

A high R² says the position can be read from the visual tokens by a linear map; it says
nothing about how soon the language model learns to write it out.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from vlagent.io import atomic_write_json


def ridge_r2(x: np.ndarray, y: np.ndarray, frac: float = 0.75, lam_per_dim: float = 0.1) -> list:
    """Held-out R² per target column of a ridge fit ``x`` [n, d] -> ``y`` [n, k] (dual form).

    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 5)); y = x[:, :2] * 3.0
    >>> [round(v, 3) for v in ridge_r2(x, y, lam_per_dim=1e-4)]
    [1.0, 1.0]
    """
    n = len(x)
    k = int(frac * n)
    mu, sd = x[:k].mean(0), x[:k].std(0) + 1e-6
    z = (x - mu) / sd
    a, ym = z[:k], y[:k].mean(0)
    lam = lam_per_dim * z.shape[1]
    w = a.T @ np.linalg.solve(a @ a.T + lam * np.eye(k), y[:k] - ym)
    pred = z[k:] @ w + ym
    res = ((pred - y[k:]) ** 2).sum(0)
    tot = ((y[k:] - y[k:].mean(0)) ** 2).sum(0)
    return [float(v) for v in 1 - res / tot]


def visual_grid(policy: Any, image: np.ndarray) -> np.ndarray:
    """The vision tower's merged output for one image on its token grid: [H/2, W/2, D] float
    (H, W: the patch grid; one token per 2×2 patches after the merger; row-major)."""
    import torch

    model = policy.model
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inputs = policy.processor.image_processor(images=[image], return_tensors="pt")
    with torch.no_grad():
        out = base.model.visual(inputs["pixel_values"], grid_thw=inputs["image_grid_thw"])
    feats = getattr(out, "pooler_output", None)
    if feats is None:
        feats = out[0] if isinstance(out, tuple | list) else out
    rows = int(inputs["image_grid_thw"][0, 1]) // 2
    return feats.float().numpy().reshape(rows, -1, feats.shape[-1])


def visual_tokens(policy: Any, image: np.ndarray) -> np.ndarray:
    """The vision tower's merged output for one image, flattened: [T * D] float."""
    return visual_grid(policy, image).reshape(-1)


def robot_samples(size: int, n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """``n`` top-camera reach images with one cube, and the cube's (x, y) in metres."""
    from embodied.robot_env import RobotEnv

    env = RobotEnv(task="reach", image_size=size, camera="top", proprio=False, cubes=1)
    images, targets = [], []
    try:
        for i in range(n):
            obs, _ = env.reset(seed=i, options={"task_id": i})
            assert env.task is not None and env.task.cube is not None
            images.append(obs["image"])
            targets.append(env.scene.cube_positions()[env.task.cube][:2])
    finally:
        env.close()
    return images, np.asarray(targets)


def basic_samples(n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """``n`` quickstart screens and their target box centres, normalized."""
    from sim.screens import generate_screen

    images, targets = [], []
    for i in range(n):
        s = generate_screen("basic", i)
        x0, y0, x1, y1 = s.target_box_norm
        images.append(np.asarray(s.image))
        targets.append([(x0 + x1) / 2, (y0 + y1) / 2])
    return images, np.asarray(targets)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="JSON file to write")
    p.add_argument("--n", type=int, default=400, help="images per source")
    p.add_argument("--model", default="", help="checkpoint folder (default: build the tiny one)")
    p.add_argument("--robot-sizes", default="224,448")
    args = p.parse_args(argv)
    import torch

    from vlagent.models.loading import load_policy
    from vlagent.models.tiny import build_tiny_model

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model or str(build_tiny_model(Path(tmp) / "tiny", family="qwen3_vl", seed=0))
        policy = load_policy(path)
        rows = []
        sources = [(f"robot_top_{s}px", int(s)) for s in args.robot_sizes.split(",") if s]
        for name, size in [*sources, ("basic_224px", 0)]:
            images, y = robot_samples(size, args.n) if size else basic_samples(args.n)
            x = np.stack([visual_tokens(policy, im) for im in images])
            r2 = ridge_r2(x, y)
            rows.append({"source": name, "n": args.n, "features": int(x.shape[1]), "r2_x": r2[0],
                         "r2_y": r2[1]})  # fmt: skip
            sys.stdout.write(f"{name}: R2 x {r2[0]:.3f} y {r2[1]:.3f} ({x.shape[1]} features)\n")
    command = " ".join(["python -m experiments.vision_probe", *(argv or sys.argv[1:])])
    atomic_write_json(args.out, {"command": command, "model": args.model or "tiny seed 0",
                                 "rows": rows})  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
