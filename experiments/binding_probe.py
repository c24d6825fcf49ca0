"""Why a checkpoint does or does not bind the instruction to an element: three probes.

For each ``--model`` checkpoint, on held-out screens of ``--level`` (K targets per screen):

- ``instruction``: greedy answers to the K instructions of each screen. Accuracy, the share of
  answers on *some* element, and the share of screens whose answer changes with the
  instruction (0: the instruction is ignored).
- ``colour``: a linear probe (ridge, one-vs-rest, 300 fit / 100 test screens) of the target's
  colour and shape from the visual token the language model sees at the target's centre, so
  "the vision tower does not keep colour" can be told from "the language model does not use it".
- ``attention``: at the position that predicts the answer's first coordinate digit (the prompt
  plus the demonstration's text up to that digit), each layer's and head's attention mass on
  the image tokens, on the instruction's words and on the target's colour word (in the
  instruction or in the answer's own label), and the entropy of its attention over the image
  tokens.

    python -m experiments.binding_probe --level basic2 --out docs/results/binding_probe.json \\
        image_first=runs/l18/E_basic2_k3_s0/final label=runs/l19/S_basic2_box_phrase/final:qwen_box:phrase

A model is ``name=path`` or ``name=path:answer_format:answer_label`` (default qwen_json, fixed).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
import torch

from vlagent.io import atomic_write_json

HELD_OUT = 1_000_000_000
"""First screen seed the probes use (the test range's offset: never a training screen)."""


def _answer_prefix(codec: Any, sample: Any, frame: Any, label: str) -> str:
    """The demonstration's text up to (not including) its first coordinate digit."""
    from vlagent.codec.grounding import instruction_phrase

    named = instruction_phrase(sample.instruction) if label == "phrase" else None
    text = codec.render(tuple(sample.target_box_norm), frame, label=named)
    opens = [i for i in (text.find("["), text.rfind("(")) if i >= 0]  # not point_2d's 2
    start = min(opens) if opens else 0
    return text[: next(i for i in range(start, len(text)) if text[i].isdigit())]


def screen_keys(k: int, screen: int) -> list[int]:
    """The K keys of held-out screen ``screen`` in a K-targets source (one screen's pixels)."""
    first = HELD_OUT - HELD_OUT % k + k  # a multiple of k at or after HELD_OUT
    return [first + k * screen + v for v in range(k)]


def probe_instruction(policy: Any, codec: Any, level: str, k: int, screens: int) -> dict:
    from gui.grounding.sources import SyntheticSource
    from perception_tools.geometry import point_in_box
    from vlagent.rollout.engine import sample_turns
    from vlagent.rollout.tokens import encode_prompt
    from vlagent.rollout.trajectory import Segment

    src = SyntheticSource(level, targets_per_screen=k)
    hits = on_element = changed = n = 0
    for s in range(screens):
        points = set()
        for key in screen_keys(k, s):
            ex = src.sample(key)
            prompt = encode_prompt(policy.processor, [ex.image], ex.instruction)
            ids = sample_turns(policy, [Segment(prompt)], [32], greedy=True)[0][0]
            text = policy.tokenizer.decode(ids, skip_special_tokens=True)
            answer = codec.parse(text, prompt.frames[-1])
            p = getattr(answer, "point_norm", None)
            points.add(None if p is None else (round(p[0], 3), round(p[1], 3)))
            n += 1
            if p is not None:
                hits += point_in_box(p, ex.target_box_norm)
                on_element += any(point_in_box(p, e.box_norm) for e in ex.elements)
        changed += len(points) > 1
    return {
        "answers": n,
        "accuracy": hits / n,
        "on_some_element": on_element / n,
        "screens_answer_changes_with_instruction": changed / screens,
    }


def _ridge_classify(x: np.ndarray, labels: list[str], fit: int) -> dict:
    classes = sorted(set(labels))
    y = np.array([[lab == c for c in classes] for lab in labels], float)
    z = (x - x[:fit].mean(0)) / (x[:fit].std(0) + 1e-6)
    z = np.hstack([z, np.ones((len(z), 1))])
    w = np.linalg.solve(z[:fit].T @ z[:fit] + np.eye(z.shape[1]), z[:fit].T @ y[:fit])
    acc = float(((z[fit:] @ w).argmax(1) == y[fit:].argmax(1)).mean())
    return {"classes": len(classes), "accuracy": acc, "majority": float(y[fit:].mean(0).max())}


def probe_colour(policy: Any, level: str, screens: int = 400) -> dict:
    from experiments.vision_probe import visual_grid
    from gui.grounding.sources import SyntheticSource

    src = SyntheticSource(level)
    feats, colours, shapes = [], [], []
    for s in range(screens):
        ex = src.sample(HELD_OUT + s)
        f = visual_grid(policy, ex.image)  # [H/2, W/2, D]
        x0, y0, x1, y1 = ex.target_box_norm
        row = min(int((y0 + y1) / 2 * f.shape[0]), f.shape[0] - 1)
        col = min(int((x0 + x1) / 2 * f.shape[1]), f.shape[1] - 1)
        feats.append(f[row, col])
        target = next(e for e in ex.elements if e.box_norm == ex.target_box_norm)
        colours.append(str(target.colour))
        shapes.append(str(target.shape))
    x = np.stack(feats)
    fit = int(0.75 * screens)
    return {"colour": _ridge_classify(x, colours, fit), "shape": _ridge_classify(x, shapes, fit)}


def probe_attention(policy: Any, codec: Any, level: str, label: str, screens: int = 20) -> dict:
    from gui.grounding.sources import SyntheticSource
    from vlagent.rollout.tokens import encode_prompt

    model = policy.model
    for sub in model.modules():  # attention weights need the eager kernel
        if hasattr(sub, "config") and hasattr(sub.config, "_attn_implementation"):
            sub.config._attn_implementation = "eager"
    tok = policy.tokenizer
    pad = tok.convert_tokens_to_ids("<|image_pad|>")
    src = SyntheticSource(level)
    image_mass, word_mass, entropy, colour_mass = [], [], [], []
    for s in range(screens):
        ex = src.sample(HELD_OUT + s)
        prompt = encode_prompt(policy.processor, [ex.image], ex.instruction)
        prefix = _answer_prefix(codec, ex, prompt.frames[-1], label)
        extra = tok.encode(prefix, add_special_tokens=False)
        ids = torch.cat([prompt.input_ids, torch.tensor(extra, dtype=torch.long)])[None]
        with torch.no_grad():
            out = model(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                pixel_values=prompt.pixel_values,
                image_grid_thw=prompt.image_grid_thw,
                mm_token_type_ids=(ids == pad).long(),
                output_attentions=True,
            )
        seq = ids[0].tolist()
        image = [i for i, t in enumerate(seq) if t == pad]
        words = set(
            tok.encode(" " + " ".join(ex.instruction.split()[1:]), add_special_tokens=False)
        )
        instr = [i for i in range(len(prompt.input_ids)) if seq[i] in words and i > image[-1]]
        target = next(e for e in ex.elements if e.box_norm == ex.target_box_norm)
        named = set(tok.encode(f" {target.colour}", add_special_tokens=False))
        colour = [i for i in range(image[-1] + 1, len(seq)) if seq[i] in named]  # + answer's
        per_layer = []
        for a in out.attentions:
            a = a[0, :, -1].float()  # heads x seq, from the position predicting the digit
            on_image = a[:, image]
            p = on_image / on_image.sum(-1, keepdim=True)
            per_layer.append(
                (
                    on_image.sum(-1).numpy(),
                    a[:, instr].sum(-1).numpy(),
                    (-(p * (p + 1e-12).log()).sum(-1)).numpy(),
                    a[:, colour].sum(-1).numpy(),
                )
            )
        image_mass.append([r[0] for r in per_layer])
        word_mass.append([r[1] for r in per_layer])
        entropy.append([r[2] for r in per_layer])
        colour_mass.append([r[3] for r in per_layer])
    return {
        "position": "predicts the first coordinate digit",
        "mass_on_image": np.mean(image_mass, 0).round(3).tolist(),
        "mass_on_instruction_words": np.mean(word_mass, 0).round(3).tolist(),
        "mass_on_colour_word": np.mean(colour_mass, 0).round(3).tolist(),
        "entropy_over_image": np.mean(entropy, 0).round(2).tolist(),
        "uniform_entropy": round(float(np.log(len(image))), 2),
        "layout": "[layer][head]",
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("models", nargs="+", help="name=path[:answer_format:answer_label]")
    p.add_argument("--level", default="basic2")
    p.add_argument("--targets", type=int, default=3, help="instructions per screen")
    p.add_argument("--screens", type=int, default=60, help="screens of the instruction probe")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)

    from vlagent.codec import GroundingCodec
    from vlagent.models.loading import load_policy

    torch.set_num_threads(1)
    results = {}
    for spec in args.models:
        name, _, rest = spec.partition("=")
        path, fmt, label = ([*rest.split(":"), "qwen_json", "fixed"])[:3]
        policy = load_policy(path)
        codec = GroundingCodec.for_family(policy.family, fmt=fmt)
        results[name] = {
            "model": path,
            "answer_format": fmt,
            "answer_label": label,
            "instruction": probe_instruction(policy, codec, args.level, args.targets, args.screens),
            "colour": probe_colour(policy, args.level),
            "attention": probe_attention(policy, codec, args.level, label),
        }
        print(name, results[name]["instruction"], flush=True)
    atomic_write_json(
        args.out,
        {
            "command": " ".join(["python -m experiments.binding_probe", *sys.argv[1:]]),
            "level": args.level,
            "targets_per_screen": args.targets,
            "models": results,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
