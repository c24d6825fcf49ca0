"""Per-category success tables and avg@k / pass@k (``vlagent.eval.categories``), and the
worlds' ``categories`` hooks, on hand-made episodes with counts and intervals worked out by hand.

Wilson intervals used below (z = 1.96), from p̂ ± the closed form, by hand to 4 places:
2/3 → (0.2077, 0.9385); 1/2 → (0.0945, 0.9055); 0/1 → (0, 0.7935).
"""

from __future__ import annotations

import pytest

from vlagent.eval.categories import MISSING, at_k, category_tables, tables_of
from vlagent.eval.evaluate import report_of
from vlagent.rollout.trajectory import Trajectory, Turn

W23, W12, W01 = (0.2077, 0.9385), (0.0945, 0.9055), (0.0, 0.7935)


@pytest.fixture(scope="module")
def policy_of(tiny_dir):
    from vlagent.models.loading import load_policy

    return load_policy(tiny_dir)


@pytest.fixture(scope="module")
def grounding_world(tiny_dir, policy_of):
    from vlagent.config import load_config
    from vlagent.worlds import make_world

    world = make_world(load_config(None, [f"model.path={tiny_dir}"]), policy_of)
    yield world, policy_of
    world.close()


def _ep(task, success, **extras) -> Trajectory:
    t = Trajectory(task_id=task, success=success, status="terminated", extras=dict(extras))
    t.turns.append(Turn(0, 0, 2, "x", reward=float(success), reward_terms={"s": float(success)}))
    return t


def _row(table, n, k, ci):
    assert (table["n"], table["successes"]) == (n, k)
    assert table["success_rate"] == pytest.approx(k / n)
    assert table["ci95"] == pytest.approx(list(ci), abs=5e-5)


def test_tables_count_each_value_with_its_interval():
    labels = [
        {"template": "wifi", "app": "settings"},
        {"template": "wifi", "app": "settings"},
        {"template": "wifi"},  # no app: counted under "?"
        {"template": "contact", "app": "contacts"},
        {"template": "contact", "app": "contacts"},
    ]
    ok = [True, True, False, True, False]
    tables = tables_of(labels, ok)
    assert list(tables) == ["app", "template"]
    assert list(tables["template"]) == ["contact", "wifi"]
    _row(tables["template"]["wifi"], 3, 2, W23)
    _row(tables["template"]["contact"], 2, 1, W12)
    assert list(tables["app"]) == ["contacts", "settings", MISSING]  # "?" last
    _row(tables["app"][MISSING], 1, 0, W01)
    _row(tables["app"]["settings"], 2, 2, (0.3424, 1.0))
    for table in tables.values():  # every table covers every episode
        assert sum(r["n"] for r in table.values()) == len(ok)
    assert tables_of([], []) == {}
    with pytest.raises(ValueError, match="2 label sets but 1 outcomes"):
        tables_of([{}, {}], [True])


def test_at_k_avg_and_pass():
    # A: 1 of 3, B: 0 of 3, C: 3 of 3  ->  avg@3 = 4/9, pass@3 = 2/3 (tasks A and C)
    ids = ["A", "B", "C"] * 3
    ok = [False, False, True, True, False, True, False, False, True]
    got = at_k(ids, ok)
    assert got["k"] == 3 and got["tasks"] == 3
    assert got["avg@k"] == pytest.approx(4 / 9)
    assert got["pass@k"] == pytest.approx(2 / 3)
    assert (got["pass@k_ci_low"], got["pass@k_ci_high"]) == pytest.approx(W23, abs=5e-5)
    one = at_k([1, 2], [True, False])  # k = 1: pass@1 = avg@1 = success rate
    assert one["k"] == 1 and one["pass@k"] == one["avg@k"] == 0.5
    assert at_k([], []) == {}
    with pytest.raises(ValueError, match="1 task ids but 2 outcomes"):
        at_k(["A"], [True, False])


def test_report_of_adds_tables_and_at_k(grounding_world):
    world, _ = grounding_world
    trajs = [
        _ep(0, True, meta={"reference": "text"}),
        _ep(0, False, meta={"reference": "text"}),
        _ep(1, True, meta={"reference": "Colour "}),
        _ep(1, False, meta={}),
    ]
    rep = report_of(world, trajs)
    ref = rep.categories["reference"]
    assert list(ref) == ["colour", "text", MISSING]
    _row(ref["text"], 2, 1, W12)
    assert rep.sampling["k"] == 2 and rep.sampling["pass@k"] == 1.0
    assert rep.sampling["avg@k"] == rep.success_rate == 0.5
    details = rep.details()
    assert details["category_tables"] is rep.categories and details["pass@k"] == 1.0
    assert "category_tables" not in rep.summary()  # training logs only scalars


def test_grounding_categories_read_screenspot_meta(grounding_world):
    world, _ = grounding_world
    v2 = _ep(0, True, meta={"data_type": "Icon", "data_source": "macos", "img_filename": "a"})
    pro = _ep(1, True, meta={"ui_type": "text", "platform": "Windows", "group": "CAD"})
    assert world.categories(v2) == {"platform": "macos", "ui_type": "icon"}
    assert world.categories(pro) == {"platform": "windows", "ui_type": "text"}
    assert world.categories(_ep(2, True)) == {}


def test_each_world_names_its_categories(policy_of):
    from vlagent.eval.suites import SUITES, load_suite_config
    from vlagent.worlds import make_world

    def world(name):
        return make_world(load_suite_config(SUITES[name]), policy_of)

    apps = world("phone_apps")
    assert apps.categories(_ep("heldout-set-toggles-0", True, template="set_toggles")) == {
        "template": "set_toggles"
    }
    assert apps.categories(_ep("x", False)) == {"template": "?"}
    web = world("miniwob")
    assert web.categories(_ep("click-tab/1000003", True)) == {"task": "click-tab"}
    robot = world("robot_push")
    assert robot.categories(_ep(5, True, kind="push")) == {"task": "push"}
    assert robot.categories(_ep(5, False)) == {"task": "push"}  # never started: robot.task
    desktop = world("desktop_local")
    task = desktop.task_ids("test", 0, 1)[0]
    got = desktop.categories(_ep(task, True))
    assert got["task"] == task and got["app"] and got["app"] != "?"
    zoom = world("zoom_hires")
    zoomed = _ep(3, True, meta={"reference": "text"})
    zoomed.turns.insert(0, Turn(0, 0, 1, "call", kind="tool"))
    assert zoom.categories(zoomed) == {"reference": "text", "tool_calls": "1"}
    for w in (apps, web, robot, desktop, zoom):
        w.close()


def test_category_tables_of_a_world_hook():
    def hook(t):
        return {"task": str(t.task_id).split("/")[0]}

    trajs = [_ep("a/1", True), _ep("a/2", False), _ep("b/1", False)]
    tables = category_tables(hook, trajs)
    _row(tables["task"]["a"], 2, 1, W12)
    _row(tables["task"]["b"], 1, 0, W01)
