"""embodied.scripted solves each kind; embodied.measure's interval and its JSON report."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")  # before the first `import mujoco`
pytest.importorskip("mujoco")

from embodied.measure import Z95, main, play_policy, wilson_interval  # noqa: E402
from embodied.robot_env import RobotEnv  # noqa: E402
from embodied.scripted import ScriptedController  # noqa: E402
from embodied.tasks import KINDS  # noqa: E402

HELD_OUT_SEEDS = range(1000, 1005)  # not among measure's seeds 0..199


@pytest.mark.parametrize("kind", KINDS)
def test_scripted_controller_solves_each_kind(kind: str) -> None:
    env = RobotEnv(kind, image_size=64)
    controller = ScriptedController(env)
    stats = play_policy(env, controller.act, HELD_OUT_SEEDS)
    assert stats["successes"] == len(HELD_OUT_SEEDS), stats
    assert stats["max_steps_success"] <= env.task.max_steps
    env.close()


def test_random_policy_rarely_reaches() -> None:
    env = RobotEnv("reach", image_size=16)
    rng = np.random.default_rng(0)
    stats = play_policy(env, lambda _obs: rng.uniform(-1, 1, 4), range(10))
    assert stats["successes"] <= 2 and stats["mean_steps"] > 10
    env.close()


def test_scripted_controller_resumes_from_any_state() -> None:
    """Stateless: after random steps (gripper closed on nothing, or holding) it still solves."""
    env = RobotEnv("pick_place", image_size=16)
    controller = ScriptedController(env)
    env.reset(seed=3, options={"task_id": 4})
    for a in np.random.default_rng(1).uniform(-1, 1, (5, 4)):
        env.step(a)
    info: dict = {}
    for _ in range(env.task.max_steps):
        *_, terminated, truncated, info = env.step(controller.act(None))
        if terminated:
            break
    assert info["success"]
    env.close()


def test_scripted_controller_needs_a_reset_robot_env() -> None:
    with pytest.raises(TypeError, match="RobotEnv"):
        ScriptedController(object())  # type: ignore[arg-type]
    env = RobotEnv(image_size=8)
    with pytest.raises(RuntimeError, match="reset"):
        ScriptedController(env).act(None)
    env.close()


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (81, 263), (1, 200)])
def test_wilson_interval_is_the_score_test_region(k: int, n: int) -> None:
    lo, hi = wilson_interval(k, n)
    p_hat = k / n
    assert 0.0 <= lo <= p_hat <= hi <= 1.0
    for bound, at_edge in ((lo, k == 0), (hi, k == n)):
        if at_edge:
            assert bound == p_hat  # the root sits exactly on the data
        else:  # (p_hat - p)^2 = z^2 p (1 - p) / n at both ends
            assert (p_hat - bound) ** 2 == pytest.approx(Z95**2 * bound * (1 - bound) / n)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert math.isclose(wilson_interval(81, 263)[0], 0.2553, abs_tol=1e-4)


def test_measure_cli_writes_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "measure.json"
    assert (
        main(["--episodes", "2", "--kinds", "reach", "--image-size", "16", "--out", str(out)]) == 0
    )
    report = json.loads(out.read_text())
    assert [p.name for p in out.parent.iterdir()] == ["measure.json"], "no temp file left"
    reach = report["results"]["reach"]
    assert set(reach) == {"scripted", "random"}
    assert reach["scripted"]["successes"] == 2 and reach["scripted"]["ci95"][1] == 1.0
    assert reach["scripted"]["budget"] == 12 and report["config"]["episodes"] == 2
    assert 0.0 <= reach["random"]["success_rate"] <= 1.0
    assert "reach" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--episodes", "0", "--out", str(out)])
