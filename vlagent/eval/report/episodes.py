"""Episodes for the trajectory viewer, with their pictures copied into the report folder.

An episode is a JSON-ready dict::

    {"id": "trajectories.jsonl:3", "task": "web/icon", "instruction": "...", "success": bool,
     "reward": float | None, "gif": "assets/img/7.gif" | None,
     "steps": [{"image": "assets/img/2.png" | None, "text": "...", "action": "...",
                "reward_terms": {name: float | None}, "overlay": {"point": [x, y] | None,
                "box": [x0, y0, x1, y1] | None, "target": [x0, y0, x1, y1] | None}}]}

Overlay coordinates are normalized to [0, 1] of the step's image (as ``trajectories.jsonl``
stores them). A robot episode's GIF (one camera frame per turn: the image the policy saw) is cut
into per-step frames when its frame count matches the turns; otherwise every step shows the GIF. Pictures are checked with PIL before they are copied; an unreadable or missing one
becomes a problem and the step shows no image.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from vlagent.eval.report.load import Problem, RunData, finite, read_json_object

MAX_EPISODES = 400
"""Episodes shown at most (the first ones); the report says when more were cut."""
GIF_MS = 200
"""Frame time of ``vlagent.viz.save_gif`` (its default, which the robot world uses). GIF writers
merge equal consecutive frames into one longer frame: a frame of ``m * GIF_MS`` stands for m."""


class Assets:
    """Copies pictures into ``<out>/assets/img/`` under short names, once per source file."""

    def __init__(self, out: Path, data: RunData) -> None:
        self.out, self.data = out, data
        self.dir = out / "assets" / "img"
        self.done: dict[Path, str | None] = {}

    def _check(self, src: Path) -> str | None:
        """Why ``src`` is not a readable picture, or None when it is."""
        from PIL import Image

        if not src.is_file():
            return "is missing"
        try:
            with Image.open(src) as im:
                im.verify()
        except Exception as exc:  # PIL raises many types for damaged files
            return f"is not a readable image ({type(exc).__name__}: {exc})"
        return None

    def add(self, src: Path) -> str | None:
        """The report-relative path of a copy of ``src``, or None (problem recorded)."""
        src = src.resolve() if src.exists() else src
        if src in self.done:
            return self.done[src]
        why = self._check(src)
        if why is not None:
            self.data.problems.append(Problem(self.data.rel(src), f"{why}; shown without picture"))
            self.done[src] = None
            return None
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"{len(self.done)}{src.suffix.lower()}"
        shutil.copyfile(src, self.dir / name)
        self.done[src] = f"assets/img/{name}"
        return self.done[src]

    def add_crop(self, src: Path, box: tuple[int, int, int, int], tag: str) -> str | None:
        """A cropped copy (pixel box x0, y0, x1, y1) of an already checked picture."""
        from PIL import Image

        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"{len(self.done)}_{tag}.png"
        with Image.open(src) as im:
            im.crop(box).save(self.dir / name, format="PNG")
        self.done[Path(f"{src}#{tag}")] = f"assets/img/{name}"
        return f"assets/img/{name}"

    def add_image(self, image: Any, src: Path, tag: str) -> str:
        """A PNG copy of a PIL image taken from ``src`` (e.g. one GIF frame)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"{len(self.done)}_{tag}.png"
        image.save(self.dir / name, format="PNG")
        self.done[Path(f"{src}#{tag}")] = f"assets/img/{name}"
        return f"assets/img/{name}"


def gif_frames(gif: Path, n: int, assets: Assets) -> list[str | None] | None:
    """Per-step PNGs of a robot episode GIF with ``n`` turns, or None when its frames (merged
    runs expanded by their duration, :data:`GIF_MS`) are not ``n`` or it does not decode."""
    from PIL import Image

    try:
        with Image.open(gif) as im:
            frames, times = [], []
            for i in range(int(getattr(im, "n_frames", 1))):
                im.seek(i)
                frames.append(im.convert("RGB"))
                times.append(int(im.info.get("duration") or 0))
    except Exception:  # PIL raises many types for damaged files; the GIF itself still shows
        return None
    if n < 1 or not frames:
        return None
    for base in dict.fromkeys([GIF_MS, min(times) or GIF_MS]):
        counts = [max(1, round(t / base)) for t in times]
        if sum(counts) == n:
            break
    else:
        return None
    saved = [assets.add_image(f, gif, f"f{i}") for i, f in enumerate(frames)]
    return [rel for rel, c in zip(saved, counts, strict=True) for _ in range(c)]


def _norm_list(value: Any, size: int) -> list[float] | None:
    if not isinstance(value, list) or len(value) != size:
        return None
    vals = [finite(v) for v in value]
    return None if any(v is None for v in vals) else vals  # type: ignore[return-value]


def _terms(value: Any) -> dict[str, float | None]:
    return {str(k): finite(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _grounding_task(rec: dict[str, Any]) -> str:
    meta = rec.get("meta") if isinstance(rec.get("meta"), dict) else {}
    parts = [meta.get(k) for k in ("group", "data_source", "platform", "data_type", "ui_type")]
    parts = [str(p) for p in parts if p]
    return "/".join(dict.fromkeys(parts)) or "grounding"


def from_trajectories(data: RunData, assets: Assets) -> list[dict[str, Any]]:
    """Episodes of ``trajectories.jsonl`` (one step each: the click of a grounding episode)."""
    if data.trajectories_file is None:
        return []
    base = data.trajectories_file.parent
    out = []
    for i, rec in enumerate(data.trajectories):
        image = assets.add(base / str(rec["image"])) if rec.get("image") else None
        if not rec.get("image"):
            data.problems.append(
                Problem(data.rel(data.trajectories_file), f"episode {i}: no image")
            )
        action = {k: rec.get(k) for k in ("point_norm", "box_norm", "parse_error")}
        step = {
            "image": image,
            "text": str(rec.get("completion", "")),
            "action": json.dumps(action),
            "reward_terms": _terms(rec.get("reward_terms")),
            "overlay": {
                "point": _norm_list(rec.get("point_norm"), 2),
                "box": _norm_list(rec.get("box_norm"), 4),
                "target": _norm_list(rec.get("target_box_norm"), 4),
            },
        }
        out.append(
            {
                "id": f"trajectories.jsonl:{i + 1}",
                "task": _grounding_task(rec),
                "instruction": str(rec.get("instruction", "")),
                "success": bool(rec.get("success")),
                "reward": finite(rec.get("reward")),
                "gif": None,
                "steps": [step],
            }
        )
    return out


def _strip_crops(png: Path, n: int, assets: Assets) -> list[str | None] | None:
    """Per-step crops of an apps episode strip (``tile_images(cols=n, pad=4)``), or None when
    the strip's width does not split into ``n`` equal tiles."""
    from PIL import Image

    with Image.open(png) as im:
        w, h = im.size
    pad = 4
    if n < 1 or (w - pad) % n or (w - pad) // n <= pad:
        return None
    tile = (w - pad) // n - pad
    return [
        assets.add_crop(
            png, (pad + i * (tile + pad), pad, pad + i * (tile + pad) + tile, h - pad), f"s{i}"
        )  # fmt: skip
        for i in range(n)
    ]


def from_samples(
    data: RunData, assets: Assets
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Episodes of ``samples/*.json`` records (apps / robot worlds) and a gallery of the other
    pictures (``samples/*.png`` of grounding / zoom worlds: ``{"image", "caption"}``)."""
    episodes, gallery = [], []
    for folder in data.sample_dirs:
        with_record = set()
        for rec_path in sorted(folder.glob("*.json")):
            rec = read_json_object(rec_path, data)
            if rec is None:
                continue
            turns = rec.get("turns") if isinstance(rec.get("turns"), list) else []
            png, gif = rec_path.with_suffix(".png"), rec_path.with_suffix(".gif")
            with_record.update({png, gif})
            crops: list[str | None] | None = None
            gif_rel = assets.add(gif) if gif.exists() else None
            if png.exists() and assets.add(png) is not None:
                crops = _strip_crops(png, len(turns), assets) or [assets.add(png)] * len(turns)
            elif gif_rel is not None:
                crops = gif_frames(gif, len(turns), assets)
            elif not gif.exists():
                data.problems.append(Problem(data.rel(rec_path), "has no .png or .gif beside it"))
            steps = []
            for k, t in enumerate(turns):
                t = t if isinstance(t, dict) else {}
                act = t.get("action", {"invalid": t.get("invalid")})
                steps.append(
                    {
                        "image": crops[k] if crops else None,
                        "text": str(t.get("text", "")),
                        "action": act if isinstance(act, str) else json.dumps(act, default=str),
                        "reward_terms": _terms(t.get("reward_terms")),
                        "overlay": {"point": None, "box": None, "target": None},
                    }
                )
            episodes.append(
                {
                    "id": data.rel(rec_path),
                    "task": str(rec.get("kind") or str(rec.get("task_id", "?")).split(":")[0]),
                    "instruction": str(rec.get("instruction", "")),
                    "success": bool(rec.get("success")),
                    "reward": finite(rec.get("reward")),
                    "gif": gif_rel,
                    "steps": steps,
                }
            )
        for pic in sorted([*folder.glob("*.png"), *folder.glob("*.gif")]):
            if pic in with_record:
                continue
            rel = assets.add(pic)
            if rel is not None:
                gallery.append({"image": rel, "caption": data.rel(pic)})
    return episodes, gallery


def collect(data: RunData, out: Path, limit: int = MAX_EPISODES) -> tuple[list[dict[str, Any]],
                                                                          list[dict[str, str]]]:  # fmt: skip
    """Viewer episodes (trajectories first, then sample records; at most ``limit``) and the
    picture gallery, their pictures copied under ``out``."""
    assets = Assets(out, data)
    traj = from_trajectories(
        RunData(
            data.root,
            trajectories=data.trajectories[:limit],
            trajectories_file=data.trajectories_file,
            problems=data.problems,
        ),  # fmt: skip
        assets,
    )
    if len(data.trajectories) > limit:
        data.problems.append(
            Problem(
                "trajectories.jsonl",
                f"{len(data.trajectories)} episodes; the viewer shows the first {limit}",
            )  # fmt: skip
        )
    samples, gallery = from_samples(data, assets)
    return traj + samples[: max(limit - len(traj), 0)], gallery
