"""Multi-step GRPO / SFT / eval on a tiny model: update, crash safety, demos, saved reports."""

from __future__ import annotations

import json
import math

import pytest
import torch

from gui.apps.env import PhoneEnv, TaskBudgetLimit
from gui.apps.suite import parse_suite
from vlagent.apps import grpo as grpo_mod
from vlagent.apps.actor import VLMActor
from vlagent.apps.config import AppsGRPOConfig, AppsSFTConfig, HistoryConfig, TrajectoryRewardConfig
from vlagent.apps.credit import score_episodes, turn_credit
from vlagent.apps.eval import evaluate_suite
from vlagent.apps.grpo import run_apps_grpo
from vlagent.apps.rollout import group_specs, run_episodes
from vlagent.apps.sft import oracle_demos, run_apps_sft
from vlagent.apps.tasks import toggle_suites
from vlagent.apps.update import ppo_update, turn_batch
from vlagent.codec.gui_actions import GuiActionCodec
from vlagent.models.loading import load_policy

SUITE = parse_suite(toggle_suites(train_seeds=1, heldout_seeds=1)[0])
TASKS = [t for t in SUITE.ids if t.count("_o") == 1][:2]  # two single-toggle tasks (2 steps)
H = HistoryConfig(screen_width=64, screen_height=128)


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def policy(tiny_dir):
    return load_policy(tiny_dir)


def make_env():
    return TaskBudgetLimit(PhoneEnv(SUITE))


def test_one_update_changes_parameters_with_finite_loss(policy):
    cfg = AppsGRPOConfig(group_size=2, max_new_tokens=6, micro_batch_size=4, lr=1e-3)
    actor = VLMActor(policy, max_new_tokens=6, seed=0)
    episodes = run_episodes(actor, make_env, group_specs(TASKS[:1], 2, seed=0), H)
    assert all(len(e.turns) >= 1 and e.error is None for e in episodes)
    score_episodes(episodes, TrajectoryRewardConfig())
    episodes[0].reward, episodes[1].reward = 1.0, 0.0  # force a spread inside the group
    credit = turn_credit(episodes, cfg, TrajectoryRewardConfig())
    batch = turn_batch(episodes, credit, policy.tokenizer.pad_token_id)
    assert len(batch) == sum(len(e.turns) for e in episodes)
    assert (batch.advantages[: len(episodes[0].turns)] > 0).all()
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    stats = ppo_update(policy, batch, torch.optim.AdamW(policy.model.parameters(), lr=1e-3), cfg, 0)
    assert math.isfinite(stats["loss"]) and stats["grad_norm"] > 0
    assert stats["ratio_mean"] == pytest.approx(1.0, abs=1e-3)  # behaviour log-probs match
    changed = [n for n, p in policy.model.named_parameters() if not torch.equal(p, before[n])]
    assert len(changed) == len(before), set(before) - set(changed)


class FlakyEnv:
    """A phone env whose 2nd step raises in every 2nd env built (a simulator dying)."""

    built = 0

    def __init__(self):
        FlakyEnv.built += 1
        self.env, self.steps = make_env(), 0
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


def test_backend_crash_is_recorded_and_training_continues(policy, tmp_path, monkeypatch):
    cfg = AppsGRPOConfig(steps=2, tasks_per_step=1, group_size=2, max_new_tokens=6)
    monkeypatch.setattr(FlakyEnv, "built", 0)
    out = run_apps_grpo(policy, FlakyEnv, TASKS, cfg, tmp_path, history=H)
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2]
    assert all(r["episodes_errored"] == 1 for r in lines)
    assert out["errored_episodes"] == 2


def test_metrics_already_written_survive_a_fatal_error(policy, tmp_path, monkeypatch):
    calls = []
    real = grpo_mod.ppo_update

    def dies_second_time(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("out of memory in round 2")
        return real(*a, **kw)

    monkeypatch.setattr(grpo_mod, "ppo_update", dies_second_time)
    cfg = AppsGRPOConfig(steps=3, tasks_per_step=1, group_size=2, max_new_tokens=4)
    with pytest.raises(MemoryError):
        run_apps_grpo(policy, make_env, TASKS, cfg, tmp_path, history=H)
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["step"] == 1


def test_oracle_demos_render_actions_the_codec_reads_back(policy, tmp_path):
    codec = GuiActionCodec.for_family(policy.family, style="json")
    demos = oracle_demos(policy.processor, codec, make_env, TASKS, H)
    assert len(demos) == 4  # 2 tasks x (open Settings, tap the switch)
    assert demos[0].target == '{"type":"open_app","name":"Settings"}'
    assert "Previous actions: 1. open_app Settings" in demos[1].context.text
    from vlagent.batching import image_frame

    frame = image_frame(policy.processor, 64, 128)
    assert codec.parse(demos[1].target, frame).type == "click"
    result = run_apps_sft(policy, demos, AppsSFTConfig(steps=2, batch_size=4), tmp_path)
    assert math.isfinite(result["final_loss"])
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 2


def test_eval_report_fields_and_saved_trajectories(policy, tmp_path):
    actor = VLMActor(policy, greedy=True, max_new_tokens=6)
    report = evaluate_suite(
        actor, make_env, TASKS, history=H, out_dir=tmp_path, save_trajectories=1
    )
    assert report.success_rate == 0.0 and report.per_app == {"Settings": 0.0}
    assert report.per_template == {"set_toggles": 0.0}
    assert report.mean_steps == 4.0  # untrained: runs to the single-toggle budget
    assert report.invalid_action_rate == 1.0 and report.format_rate == 0.0
    assert len(report.episodes) == 2
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["n_episodes"] == 2 and len(data["episodes"][0]["steps"]) == 4
    folder = next((tmp_path / "trajectories").iterdir())
    assert sorted(p.name for p in folder.iterdir()) == [
        "final.png",
        "step_00.png",
        "step_01.png",
        "step_02.png",
        "step_03.png",
        "trajectory.json",
    ]


def test_two_screenshot_history_rows_recompute_their_behaviour_logprobs(policy):
    from vlagent.apps.update import turn_logprobs

    h2 = HistoryConfig(keep_images=2, screen_width=64, screen_height=128)
    actor = VLMActor(policy, max_new_tokens=5, seed=1)
    episodes = run_episodes(actor, make_env, group_specs(TASKS[:1], 2, seed=0), h2)
    assert [len(t.context.images) for t in episodes[0].turns][:3] == [1, 2, 2]
    score_episodes(episodes, TrajectoryRewardConfig())
    credit = turn_credit(episodes, AppsGRPOConfig(group_size=2), TrajectoryRewardConfig())
    batch = turn_batch(episodes, credit, policy.tokenizer.pad_token_id)
    with torch.no_grad():
        logp = turn_logprobs(policy, batch, torch.arange(len(batch)), temperature=1.0)
    assert torch.allclose(logp, batch.old_logp, atol=1e-4)


def test_eval_suite_cli_with_a_checkpoint(tiny_dir, tmp_path, capsys):
    from vlagent.apps.tasks import write_suite
    from vlagent.cli import main

    train, _ = toggle_suites(train_seeds=1, heldout_seeds=1)
    train["tasks"] = train["tasks"][:1]
    path = write_suite(train, tmp_path / "suite.json")
    argv = ["eval-suite", "--model", str(tiny_dir), "--suite", str(path), "--max-new-tokens", "4"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_episodes"] == 1 and summary["success_rate"] == 0.0
    assert summary["invalid_action_rate"] == 1.0
