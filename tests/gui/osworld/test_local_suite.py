"""The bundled ``local`` OSWorld-format suite on the real local desktop (Xvfb, xterm, xedit,
xcalc, bubblewrap): the scripted oracle solves every task through the GUI and the task's own
evaluator scores it 1; a do-nothing agent scores 0 on every feasible task and succeeds on an
infeasible task only by declaring FAIL."""

from __future__ import annotations

import pytest

from gui.osworld.env import DesktopEnv
from gui.osworld.oracle import SCRIPTS, LocalOracle
from gui.osworld.suites import load_suite

pytestmark = pytest.mark.display


@pytest.fixture(scope="module")
def env():
    from sim.desktop import missing_requirements

    missing = missing_requirements()
    if missing:
        pytest.skip("desktop backend unavailable: " + "; ".join(missing))
    e = DesktopEnv("local", max_steps=15)
    yield e
    e.close()


TASKS = load_suite("local")


def test_suite_is_large_enough_and_scripted():
    assert len(TASKS) >= 15
    assert {t.id for t in TASKS} == set(SCRIPTS)
    assert sum(t.evaluator.infeasible for t in TASKS) >= 2


def play(env, task_id, policy):
    obs, _ = env.reset(seed=0, options={"task_id": task_id})
    for _ in range(env.max_steps):
        obs, reward, term, trunc, info = env.step(policy(obs))
        if term or trunc:
            return reward, info
    raise AssertionError("episode did not end")


@pytest.mark.parametrize("task_id", sorted(SCRIPTS))
def test_oracle_solves_each_task_through_the_gui(env, task_id):
    oracle = LocalOracle(task_id)
    reward, info = play(env, task_id, oracle.act)
    assert info["success"] is True, info
    assert not info["invalid_action"]
    assert reward == pytest.approx(1.0)


@pytest.mark.parametrize("task_id", sorted(SCRIPTS))
def test_do_nothing_agent(env, task_id):
    task = env.task(task_id)
    _, info = play(env, task_id, lambda obs: {"type": "done"})
    assert info["success"] is False, f"{task_id}: a do-nothing agent passed"
    if task.evaluator.infeasible:
        _, info = play(env, task_id, lambda obs: {"type": "fail"})
        assert info["success"] is True
