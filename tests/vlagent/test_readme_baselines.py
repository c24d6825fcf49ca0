"""The baselines quoted in README.md and docs/RESULTS.md, recomputed from the same screens and
tasks and checked against independent computations.

- Quickstart (README, RESULTS): ``GroundingWorld.baselines`` on the quickstart's 500 test
  screens. ``random_click`` is the exact expected accuracy of a uniform click, the mean target
  area (checked by Monte Carlo clicks on the same screens); ``center_click`` is the accuracy of
  always clicking (0.5, 0.5) (checked by direct evaluation). All 500 screens are recomputed:
  generating them takes a fraction of a second.
- Zoom experiment (RESULTS): random click, centre click and the random tile of the target's
  colour cluster on its 200 held-out screens, and the quoted target-area statistics.
- Phone experiment (RESULTS): the random GUI policy and the scripted oracle on the 40 held-out
  toggle tasks, rerun through the episode runner; their mean steps also derived from the suite.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from sim.screens import generate_screen, get_level
from vlagent.config import load_config
from vlagent.eval.evaluate import report_of
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import EpisodeSpec, Limits, run_episodes
from vlagent.worlds import make_world
from vlagent.worlds.apps import ActDemonstrator

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RESULTS = (ROOT / "docs" / "RESULTS.md").read_text(encoding="utf-8")
MC_CLICKS = 400  # uniform clicks per screen for the Monte Carlo check


def pct(x: float) -> str:
    """A rate as the docs print it: percent with one decimal."""
    return f"{100 * x:.1f}"


def target_boxes(level: str, seeds: list[int]) -> np.ndarray:
    """[N, 4] normalized xyxy target boxes of the screens of ``seeds``, straight from the screen
    generator (not through the world)."""
    lv = get_level(level)
    return np.array([generate_screen(lv, s).target_box_norm for s in seeds], dtype=float)


def monte_carlo_hits(boxes: np.ndarray, clicks: int, seed: int = 0) -> float:
    """Share of uniform random clicks (``clicks`` per screen) that land in the target box."""
    rng = np.random.default_rng(seed)
    pts = rng.random((len(boxes), clicks, 2))
    x0, y0, x1, y1 = (boxes[:, i : i + 1] for i in range(4))
    inside = (pts[..., 0] >= x0) & (pts[..., 0] <= x1) & (pts[..., 1] >= y0) & (pts[..., 1] <= y1)
    return float(inside.mean())


def centre_hits(boxes: np.ndarray) -> np.ndarray:
    """Whether (0.5, 0.5) lies in each box (edges included, as point-in-box scores it)."""
    return (boxes[:, 0] <= 0.5) & (boxes[:, 2] >= 0.5) & (boxes[:, 1] <= 0.5) & (boxes[:, 3] >= 0.5)


@pytest.fixture(scope="module")
def policy(tiny_dir):
    """The worlds need a processor and a model family; the quickstart's is qwen3_vl."""
    return load_policy(tiny_dir)


@pytest.fixture(scope="module")
def quickstart(policy, tiny_dir):
    """(the quickstart's test seeds, the world's baselines on them) as run_quickstart computes
    them: ``world.baselines(world.task_ids("test", 0, eval.num_screens))``."""
    cfg = load_config("quickstart", [f"model.path={tiny_dir}"])
    world = make_world(cfg, policy)
    ids = world.task_ids("test", 0, cfg.eval.num_screens)
    base = world.baselines(ids)
    per_screen = [world.baselines([k]) for k in ids]  # the means must also hold screen by screen
    world.close()
    seeds = [cfg.task.eval_seed_offset + i for i in range(cfg.eval.num_screens)]
    return cfg, ids, seeds, base, per_screen


def test_quickstart_baselines_are_computed_on_the_test_screens(quickstart):
    cfg, ids, seeds, _, _ = quickstart
    assert cfg.eval.num_screens == 500 and ids == seeds


def test_random_click_is_the_mean_target_area_and_matches_monte_carlo(quickstart):
    cfg, _, seeds, base, per_screen = quickstart
    boxes = target_boxes(cfg.task.level, seeds)
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    area = float(areas.mean())
    assert base["random_click"] == pytest.approx(area, rel=1e-12)
    assert [b["random_click"] for b in per_screen] == pytest.approx(areas.tolist(), rel=1e-12)
    mc = monte_carlo_hits(boxes, MC_CLICKS)
    sd = (area * (1 - area) / (len(boxes) * MC_CLICKS)) ** 0.5
    assert abs(mc - base["random_click"]) <= 4 * sd, (mc, base["random_click"], sd)


def test_center_click_by_direct_evaluation(quickstart):
    cfg, _, seeds, base, per_screen = quickstart
    hits = centre_hits(target_boxes(cfg.task.level, seeds))
    assert base["center_click"] == float(hits.mean())
    assert [b["center_click"] for b in per_screen] == hits.astype(float).tolist()
    assert 0 < hits.sum() < len(hits)


def test_readme_and_results_quote_the_computed_quickstart_baselines(quickstart):
    _, ids, _, base, _ = quickstart
    rc, cc = pct(base["random_click"]), pct(base["center_click"])
    m = re.search(
        r"point-in-box on (\d+) unseen screens.*?a random click scores ([\d.]+) %"
        r".*?clicking the centre scores\s+([\d.]+) %",
        README,
        re.S,
    )
    assert m, "README no longer quotes the quickstart baselines: update this test"
    assert (int(m.group(1)), m.group(2), m.group(3)) == (len(ids), rc, cc)
    # docs/RESULTS.md's quickstart table: the test screens do not depend on the seed
    header = next(
        line for line in RESULTS.splitlines() if "| random click | centre click |" in line
    )
    cols = [c.strip() for c in header.strip("|").split("|")]
    i_rc, i_cc = cols.index("random click"), cols.index("centre click")
    for seed in (0, 1, 2):
        row = next(
            line for line in RESULTS.splitlines() if line.startswith(f"| {seed} |") and rc in line
        )
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert (cells[i_rc], cells[i_cc]) == (rc, cc), row
    saved = json.loads((ROOT / "docs/results/quickstart_3seeds.json").read_text())
    for s in saved["summaries"]:
        assert s["eval_screens"] == len(ids)
        assert s["baselines"]["random_click"] == pytest.approx(base["random_click"], rel=1e-12)
        assert s["baselines"]["center_click"] == base["center_click"]


def test_zoom_experiment_baselines(policy, tiny_dir):
    """RESULTS: "Baselines on the same screens: random click 0.0, centre click 0.0, random tile
    of the target's colour cluster 32.8" on the 200 held-out screens, and the target's area
    "0.026 % of the screen area (0.015–0.034 % over the 200 held-out screens)"."""
    saved = json.loads((ROOT / "docs/results/zoom_vs_notools.json").read_text())
    n = saved["setup"]["held_out_screens"]
    cfg = load_config("zoom_grpo", [f"model.path={tiny_dir}"])
    assert cfg.task.level == saved["setup"]["level"]
    world = make_world(cfg, policy)
    ids = world.task_ids("test", 0, n)
    base = world.baselines(ids)
    samples = [world.sample(k) for k in ids]
    world.close()
    assert list(samples[0].image.shape[1::-1]) == saved["setup"]["screen_px"]

    boxes = np.array([s.target_box_norm for s in samples])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    assert base["random_click"] == pytest.approx(areas.mean(), rel=1e-12)
    assert base["center_click"] == float(centre_hits(boxes).mean())
    # cluster baseline by hand: 1 / (icons of the target's colour), averaged over screens
    cluster = []
    for s in samples:
        (target,) = [e for e in s.elements if tuple(e.box_norm) == tuple(s.target_box_norm)]
        cluster.append(1 / sum(e.colour == target.colour for e in s.elements))
    assert float(np.mean(cluster)) == pytest.approx(
        saved["baselines"]["right_cluster_random_tile"], abs=1e-12
    )
    quoted = re.search(
        r"Baselines on the same screens:.*?\|---:\|---:\|---:\|\n\| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|",
        RESULTS,
        re.S,
    )
    assert quoted, "RESULTS no longer quotes the zoom baselines: update this test"
    # the JSON's random click is one seeded click per screen (0 of 200 hit); its expected
    # value, the mean area, prints as the same 0.0
    assert quoted.groups() == (
        pct(base["random_click"]),
        pct(base["center_click"]),
        pct(np.mean(cluster)),
    )
    assert saved["baselines"]["random_click"] == 0.0 and saved["baselines"]["centre_click"] == 0.0
    stated = re.search(
        r"([\d.]+) % of the\s+screen area \(([\d.]+)–([\d.]+) % over the (\d+)", RESULTS
    )
    assert stated.groups() == (
        f"{100 * areas.mean():.3f}",
        f"{100 * areas.min():.3f}",
        f"{100 * areas.max():.3f}",
        str(n),
    )


def _scripted(world, policy, ids, demonstrator, episodes):
    """Held-out episodes whose every turn the demonstrator writes (reset seeds 0..k-1)."""
    base = world.limits(1024)
    trajs = run_episodes(
        policy,
        world.adapter(),
        lambda: world.make_env("test"),
        [EpisodeSpec(t, seed) for seed in range(episodes) for t in ids],
        Limits(base.max_turns, 1024, 0, "none", 0.0),
        demonstrator=demonstrator,
        chunk_size=64,
    )
    return report_of(world, trajs)


def test_phone_experiment_baselines(policy, tiny_dir):
    """RESULTS "Baselines on the held-out tasks": random GUI policy (3 episodes per task)
    0 %, 4.5 steps, 19 % invalid steps; scripted oracle 100 %, 2.5 steps, 0 %."""
    saved = json.loads((ROOT / "docs/results/phone_sft_vs_grpo.json").read_text())
    c = saved["config"]
    cfg = load_config(
        "apps_sft",
        [
            f"model.path={tiny_dir}",
            f"apps.train_seeds={c['train_seeds']}",
            f"apps.heldout_seeds={c['heldout_seeds']}",
        ],
    )
    world = make_world(cfg, policy)
    ids = world.task_ids("test", 0, world.num_tasks("test"))
    assert len(ids) == saved["tasks"]["evaluated"] == 40
    oracle = _scripted(world, policy, ids, world.demonstrator(), 1)
    from gui.apps.evaluate import POLICIES

    random = ActDemonstrator(
        world.codec, lambda t: POLICIES["random"](world.task(t.task_id), t.seed)
    )
    rand = _scripted(world, policy, ids, random, 3)
    # from the tasks alone: the oracle opens Settings, then taps each switch not yet in its
    # wanted state; the random policy never succeeds, so it runs to each task's step budget
    taps = []
    for t in ids:
        task = world.task(t)
        now = task.initial.settings.toggles
        taps.append(sum(now[k] != v for k, v in task.params.toggles.items()))
    budgets = [world.task(t).max_steps for t in ids]
    assert oracle.metrics["mean_turns"] == pytest.approx(np.mean([1 + k for k in taps]))
    assert rand.metrics["mean_turns"] == pytest.approx(np.mean(budgets))
    world.close()

    for name, rep, episodes in (("oracle", oracle, 40), ("random", rand, 120)):
        want = saved["baselines"][name]
        assert rep.n == want["episodes"] == episodes
        assert rep.success_rate == want["success_rate"]
        assert rep.metrics["mean_turns"] == pytest.approx(want["mean_steps"], abs=1e-12)
        assert rep.metrics["invalid_action_rate"] == pytest.approx(
            want["invalid_action_rate"], abs=1e-12
        )
    rows = {
        "random GUI policy (3 episodes per task)": rand,
        "scripted oracle": oracle,
    }
    for label, rep in rows.items():
        line = next(x for x in RESULTS.splitlines() if x.startswith(f"| {label} |"))
        cells = [c.strip() for c in line.strip("|").split("|")][1:]
        assert cells == [
            f"{100 * rep.success_rate:.0f} %",
            f"{rep.metrics['mean_turns']:.1f}",
            f"{100 * rep.metrics['invalid_action_rate']:.0f} %",
        ], line
