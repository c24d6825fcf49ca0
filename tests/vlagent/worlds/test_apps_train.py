"""Apps world on a tiny model: the one update, GRPO runs (crash safety, GiGPO credit), oracle
SFT demonstrations, evaluation and its saved records, behaviour log-probs of multi-screenshot
prompts, and the eval CLI."""

from __future__ import annotations

import json
import math

import pytest
import torch

from vlagent.batching import forbidden_token_ids
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.forward import row_logprobs
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import group_specs, run_episodes
from vlagent.train.credit import turn_advantages
from vlagent.train.outputs import read_metrics
from vlagent.train.update import UpdateBatch, policy_update
from vlagent.worlds import make_world
from vlagent.worlds.apps import AppsWorld

APPS = [
    "world=apps",
    "apps.train_seeds=1",
    "apps.heldout_seeds=1",
    "apps.screen_width=64",
    "apps.screen_height=128",
]


def _tasks(world) -> list[str]:
    """Two single-toggle training tasks (2 oracle steps, a step budget of 4)."""
    return [t for t in world.suite("train").ids if t.count("_o") == 1][:2]


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def policy(tiny_dir):
    return load_policy(tiny_dir)


def _world(policy, *overrides: str):
    return make_world(load_config(None, [*APPS, *overrides]), policy)


def _grpo_cfg(tiny_dir, out, *overrides: str):
    return load_config(
        "apps_grpo",
        [
            *APPS,
            f"model.path={tiny_dir}",
            f"run.out_dir={out}",
            "grpo.prompts_per_step=1",
            "grpo.group_size=2",
            "grpo.max_new_tokens=6",
            "eval.every=0",
            "eval.rollout_pictures=0",
            "run.progress=false",
            "run.samples_every=0",
            "run.checkpoint_every=0",
            *overrides,
        ],
    )


def test_one_update_changes_parameters_with_finite_loss(policy):
    from vlagent.algo_config import GRPOConfig

    world = _world(policy)
    g = GRPOConfig(group_size=2, max_new_tokens=6, micro_batch_size=4, lr=1e-3)
    trajs = run_episodes(
        policy,
        world.adapter(),
        lambda: world.make_env("train"),
        group_specs(_tasks(world)[:1], 2),
        world.limits(6),
        seed=0,
    )
    assert all(len(t.turns) >= 1 and t.error is None for t in trajs)
    trajs[0].turns[-1].reward = 1.0  # force a spread inside the group (rewards: env's terms)
    adv = turn_advantages(trajs, g)
    assert all(a > 0 for a in adv[0]) and all(a < 0 for a in adv[1])  # every turn, its episode's
    rows = build_rows(trajs, adv, policy.tokenizer.pad_token_id)
    assert len(rows) == sum(len(t.turns) for t in trajs)  # one row per turn (segment)
    assert (rows.advantages[: len(trajs[0].turns)] > 0).all()
    assert rows.text_only and len(rows.prompts) < len(rows)  # group members share prompts
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3, weight_decay=0.0)
    stats = policy_update(policy, UpdateBatch(rows, rows.old_logp, rows.mask), g, opt, None, 0)
    assert math.isfinite(stats["loss"]) and stats["grad_norm"] > 0
    assert stats["ratio_mean"] == pytest.approx(1.0, abs=1e-3)  # behaviour log-probs match
    changed = [n for n, p in policy.model.named_parameters() if not torch.equal(p, before[n])]
    assert len(changed) == len(before), set(before) - set(changed)


def test_gigpo_grpo_run_changes_parameters(tiny_dir, tmp_path):
    """Untrained, every episode is four invalid actions: equal rewards, no episode-level
    signal. GiGPO's step level still ranks turns on the same screen by their return-to-go, so
    the GRPO recipe moves the weights; without it nothing moves."""
    from vlagent.train.grpo import run_grpo

    common = ["grpo.steps=1", "grpo.scale_by_std=false", "grpo.lr=1e-3"]
    gigpo = run_grpo(_grpo_cfg(tiny_dir, tmp_path / "gigpo", *common, "grpo.gigpo_weight=0.5"))
    plain = run_grpo(_grpo_cfg(tiny_dir, tmp_path / "plain", *common))
    assert gigpo.steps == plain.steps == 1
    (row,) = read_metrics(tmp_path / "gigpo" / "metrics.jsonl")
    assert row["reward/std"] == 0 and row["adv_abs_mean"] > 0 and math.isfinite(row["loss"])
    assert row["reward_terms/invalid_action"] < 0 and row["reward_terms/success"] == 0
    (flat,) = read_metrics(tmp_path / "plain" / "metrics.jsonl")
    assert flat["adv_abs_mean"] == 0
    base = load_policy(tiny_dir).model.state_dict()
    moved = load_policy(gigpo.final_dir).model.state_dict()
    still = load_policy(plain.final_dir).model.state_dict()
    assert sum(not torch.equal(base[k], moved[k]) for k in base) > len(base) // 2
    assert all(torch.equal(base[k], still[k]) for k in base)


class FlakyEnv:
    """A phone env whose 2nd step raises in every 2nd env built (a simulator dying)."""

    built = 0

    def __init__(self, env):
        FlakyEnv.built += 1
        self.env, self.steps = env, 0
        self.crash = FlakyEnv.built % 2 == 0
        self.unwrapped = self.env.unwrapped

    def reset(self, **kw):
        return self.env.reset(**kw)

    def step(self, action):
        self.steps += 1
        if self.crash and self.steps == 2:
            raise RuntimeError("simulator: grpc channel closed")
        return self.env.step(action)

    def close(self):
        self.env.close()


def test_backend_crash_is_recorded_and_training_continues(tiny_dir, tmp_path, monkeypatch):
    from vlagent.train.grpo import run_grpo

    real = AppsWorld.make_env
    monkeypatch.setattr(FlakyEnv, "built", 0)
    monkeypatch.setattr(AppsWorld, "make_env", lambda self, split: FlakyEnv(real(self, split)))
    out = run_grpo(_grpo_cfg(tiny_dir, tmp_path, "grpo.steps=2"))
    assert out.steps == 2
    lines = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in lines] == [1, 2]
    assert all(r["episodes_errored"] == 1 for r in lines)
    assert all(math.isfinite(r["reward/mean"]) for r in lines)


def test_metrics_already_written_survive_a_fatal_error(tiny_dir, tmp_path, monkeypatch):
    from vlagent.train import grpo as grpo_mod

    calls = []
    real = grpo_mod.policy_update

    def dies_second_time(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("out of memory in round 2")
        return real(*a, **kw)

    monkeypatch.setattr(grpo_mod, "policy_update", dies_second_time)
    with pytest.raises(MemoryError):
        grpo_mod.run_grpo(_grpo_cfg(tiny_dir, tmp_path, "grpo.steps=3", "grpo.max_new_tokens=4"))
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["step"] == 1


def test_oracle_demos_render_actions_the_codec_reads_back(policy, tiny_dir, tmp_path):
    from vlagent.train.sft import demonstrations, run_sft, sft_loss

    world = _world(policy)
    demos = demonstrations(policy, world, _tasks(world))
    assert len(demos) == 2 and all(t.success and t.error is None for t in demos)
    turns = [x for t in demos for x in t.turns]
    assert len(turns) == 4  # 2 tasks x (open Settings, tap the switch)
    assert turns[0].text == '{"type":"open_app","name":"Settings"}'
    second = demos[0].segments[1].prompt  # each turn re-prompts: one segment per turn
    shown = policy.tokenizer.decode(second.input_ids)
    assert "Previous actions: 1. open_app Settings" in shown
    assert world.codec.parse(turns[1].text, second.frame).type == "click"
    loss, tokens = sft_loss(policy, demos)
    assert math.isfinite(loss.item()) and tokens == sum(x.end - x.start for x in turns)
    cfg = load_config(
        "apps_sft",
        [
            *APPS,
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path}",
            "sft.steps=2",
            "sft.batch_size=2",
            "eval.every=0",
            "eval.rollout_pictures=0",
            "run.progress=false",
            "run.samples_every=0",
            "run.checkpoint_every=0",
        ],
    )
    result = run_sft(cfg)
    assert result.steps == 2
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert len(rows) == 2 and all(math.isfinite(r["loss"]) for r in rows)


def test_eval_report_fields_and_saved_trajectories(policy, tmp_path):
    from vlagent.eval.evaluate import evaluate

    world = _world(policy)
    report = evaluate(world, policy, "train", 2, max_new_tokens=6, task_ids=_tasks(world))
    m = report.metrics
    assert report.success_rate == 0.0 and m["success/set_toggles"] == 0.0
    assert m["mean_turns"] == 4.0  # untrained: runs to the single-toggle budget
    assert m["invalid_action_rate"] == 1.0 and m["format_rate"] == 0.0
    assert m["reward_terms/invalid_action"] == pytest.approx(-0.4)
    assert len(report.trajectories) == 2
    assert all(t.status == "truncated" for t in report.trajectories)
    world.save_pictures(report.trajectories, tmp_path, "eval")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "eval_00.json",
        "eval_00.png",
        "eval_01.json",
        "eval_01.png",
    ]
    data = json.loads((tmp_path / "eval_00.json").read_text())
    assert data["success"] is False and len(data["turns"]) == 4
    assert data["turns"][0]["action"]["type"] == "invalid"


@pytest.mark.parametrize("shared", [True, False])
def test_two_screenshot_history_rows_recompute_their_behaviour_logprobs(policy, shared):
    world = _world(policy, "apps.keep_images=2")
    trajs = run_episodes(
        policy,
        world.adapter(),
        lambda: world.make_env("train"),
        group_specs(_tasks(world)[:1], 2),
        world.limits(5),
        seed=1,
    )
    assert [s.prompt.image_grid_thw.shape[0] for s in trajs[0].segments][:3] == [1, 2, 2]
    rows = build_rows(trajs, turn_advantages(trajs, world.cfg.grpo), policy.tokenizer.pad_token_id)
    with torch.no_grad():
        logp = row_logprobs(
            policy.model,
            rows,
            policy.tokenizer.pad_token_id,
            forbidden=forbidden_token_ids(policy.tokenizer),
            shared=shared,
        )
    assert bool((rows.old_logp[rows.mask > 0] < 0).all())
    assert torch.allclose(logp, rows.old_logp, atol=1e-4), (logp - rows.old_logp).abs().max()


def test_eval_cli_with_a_checkpoint(tiny_dir, tmp_path, capsys):
    from vlagent.cli import main
    from vlagent.worlds.apps_tasks import toggle_suites, write_suite

    threads = torch.get_num_threads()
    _, heldout = toggle_suites(train_seeds=1, heldout_seeds=1)
    heldout["tasks"] = heldout["tasks"][:1]
    path = write_suite(heldout, tmp_path / "suite.json")
    argv = [
        "eval",
        "--model",
        str(tiny_dir),
        "--out",
        str(tmp_path / "eval"),
        "--config",
        "apps_grpo",
        f"apps.eval_suite={path}",
        "eval.max_new_tokens=4",
        "apps.screen_width=64",
        "apps.screen_height=128",
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["world"] == "apps" and summary["n"] == 1 and summary["success_rate"] == 0.0
    assert summary["invalid_action_rate"] == 1.0
    assert json.loads((tmp_path / "eval" / "eval_summary.json").read_text())["n"] == 1
    torch.set_num_threads(threads)  # the CLI may set its own thread count
