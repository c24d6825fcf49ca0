"""Task templates, suite files and their errors, the oracle and the random policy."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import gymnasium
import pytest

import gui  # noqa: F401  (registers the env ids)
from gui.actions import Answer, Done, Fail
from gui.apps import (
    TEMPLATES,
    AppEnvError,
    PhoneEnv,
    TaskStatus,
    TaskSuiteError,
    load_suite,
    load_suites,
    make_task,
    parse_suite,
)
from gui.apps.evaluate import measure
from gui.apps.oracle import parse_a11y
from gui.apps.tasks import ToggleKey
from sim.phone import TOGGLES, Contact, initial_state


def test_toggle_keys_match_the_phone() -> None:
    assert set(typing.get_args(ToggleKey)) == set(TOGGLES)


def test_builtin_suites_cover_every_template_and_hold_out_parameters() -> None:
    basic, held = load_suite("phone_basic"), load_suite("phone_heldout")
    assert {t.template.id for t in basic} == set(TEMPLATES) == {t.template.id for t in held}
    assert {t.split for t in basic} == {"train"} and {t.split for t in held} == {"test"}
    assert any(not t.feasible for t in basic) and any(not t.feasible for t in held)
    train = {json.dumps(t.params.model_dump(), sort_keys=True) for t in basic}
    test = {json.dumps(t.params.model_dump(), sort_keys=True) for t in held}
    assert not train & test  # held-out parameter values are new
    assert not {t.seed for t in basic} & {t.seed for t in held}
    assert len(load_suites(["phone_basic", "phone_heldout"])) == len(basic) + len(held)


def test_setup_makes_tasks_well_posed() -> None:
    for task in load_suites(["phone_basic", "phone_heldout"]):
        state = task.initial
        assert state.ui.screen == "launcher"
        name = getattr(task.params, "name", None)
        present = any(c.name == name for c in state.contacts)
        if task.template.id in ("delete_contact", "lookup_phone", "call_contact"):
            assert present
        if task.template.id in ("add_contact", "delete_missing_contact"):
            assert not present
        if task.feasible and not task.template.answers:
            assert task.evaluate(state) is TaskStatus.RUNNING  # not already solved


def test_task_statuses() -> None:
    add = make_task("t", "add_contact", {"name": "Ana Lima", "phone": "555-0101"}, seed=1)
    state = add.initial.copy()
    assert add.evaluate(state) is TaskStatus.RUNNING
    assert add.evaluate(state, Done()) is TaskStatus.FAILURE
    state.contacts.append(Contact("ana  lima", "(555) 0101"))
    assert add.evaluate(state) is TaskStatus.SUCCESS  # case, spacing and punctuation insensitive
    infeasible = make_task("t", "call_contact", {"name": "Bob Adams"}, seed=1)
    assert infeasible.evaluate(infeasible.initial, Fail()) is TaskStatus.SUCCESS
    assert infeasible.evaluate(infeasible.initial, Done()) is TaskStatus.FAILURE
    assert infeasible.evaluate(infeasible.initial) is TaskStatus.RUNNING
    ask = make_task("t", "lookup_phone", {"name": "Bob Adams"}, seed=2)
    number = next(c.phone for c in ask.initial.contacts if c.name == "Bob Adams")
    assert ask.evaluate(ask.initial, Answer(text=f"It is {number}.")) is TaskStatus.SUCCESS
    assert ask.evaluate(ask.initial, Answer(text="555-0000")) is TaskStatus.FAILURE
    delete = make_task("t", "delete_contact", {"name": "Bob Adams"}, seed=3)
    state = delete.initial.copy()
    state.contacts = [c for c in state.contacts if c.name != "Bob Adams"][1:]
    assert delete.evaluate(state) is TaskStatus.RUNNING  # deleting others too is not the task


def test_instructions_and_default_budgets() -> None:
    task = make_task("t", "set_toggles", {"toggles": {"wifi": True, "dark_mode": False}}, seed=0)
    assert task.instruction == "Turn on Wi-Fi and turn off dark mode."
    assert task.max_steps == TEMPLATES["set_toggles"].budget
    alarm = make_task(
        "t", "set_alarm_enabled", {"hour": 6, "minute": 0, "enabled": False}, seed=0, max_steps=4
    )
    assert (alarm.instruction, alarm.max_steps) == ("Turn off the 6:00 alarm.", 4)


def _suite(**task: object) -> dict:
    entry = {"id": "a", "template": "add_alarm", "params": {"hour": 7, "minute": 30}, "seed": 0}
    return {"name": "s", "version": 1, "tasks": [{**entry, **task}]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            _suite(params={"hour": 25, "minute": 0}),
            "s.json: tasks[0].params.hour: Input should be less than or equal to 23",
        ),
        (_suite(params={"hour": 7}), "s.json: tasks[0].params.minute: Field required"),
        (
            _suite(params={"hour": "7", "minute": 0}),
            "tasks[0].params.hour: Input should be a valid integer",
        ),
        (_suite(template="fly"), "s.json: tasks[0].template: Value error, unknown template 'fly'"),
        (_suite(seed=-1), "s.json: tasks[0].seed: Input should be greater than or equal to 0"),
        (_suite(split="dev"), "s.json: tasks[0].split: Input should be 'train' or 'test'"),
        (_suite(colour="red"), "s.json: tasks[0].colour: Extra inputs are not permitted"),
        (_suite(id="bad id"), "s.json: tasks[0].id: String should match pattern"),
        ({"name": "s", "version": 2, "tasks": []}, "s.json: version: Input should be 1"),
        (
            {"name": "s", "version": 1, "tasks": [_suite()["tasks"][0]] * 2},
            "s.json: tasks[1].id: duplicate task id 'a'",
        ),
        (
            _suite(template="add_contact", params={"name": "ana", "phone": "555-0101"}),
            "s.json: tasks[0].params.name: String should match pattern",
        ),
    ],
)
def test_suite_errors_name_file_index_and_field(data: dict, message: str) -> None:
    with pytest.raises(TaskSuiteError) as err:
        parse_suite(data, "s.json")
    assert message in str(err.value)


def test_load_suite_from_path_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(_suite()))
    suite = load_suite(path)
    assert suite.ids == ("a",) and suite.get("a").instruction == "Set an alarm for 7:30."
    with pytest.raises(TaskSuiteError, match="has no task 'b'"):
        suite.get("b")
    path.write_text("{nope")
    with pytest.raises(TaskSuiteError, match="mine.json: not valid JSON"):
        load_suite(path)
    with pytest.raises(TaskSuiteError, match="neither a builtin"):
        load_suite(tmp_path / "missing.json")


def test_reset_options_ad_hoc_task_and_state_seed() -> None:
    env = PhoneEnv()
    obs, info = env.reset(
        seed=0,
        options={"task": {"template": "add_alarm", "params": {"hour": 9, "minute": 5}, "seed": 3}},
    )
    assert info["task_id"] == "adhoc" and obs["instruction"] == "Set an alarm for 9:05."
    contacts = []
    for state_seed in (1, 2):
        obs, info = env.reset(options={"task_id": "basic-add-contact-0", "state_seed": state_seed})
        assert info["task_id"] == "basic-add-contact-0" and env.task.seed == state_seed
        contacts.append([c.name for c in env.task.initial.contacts])
    assert contacts[0] != contacts[1] and obs["instruction"].startswith(
        "Add a contact named Ana Lima"
    )
    with pytest.raises(AppEnvError, match="unknown"):
        env.reset(options={"level": 3})
    with pytest.raises(AppEnvError, match="has no task"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(AppEnvError, match="hour"):
        env.reset(
            options={
                "task": {"template": "add_alarm", "params": {"hour": 99, "minute": 0}, "seed": 0}
            }
        )
    train = PhoneEnv(split="train")
    assert {train.reset(seed=s)[1]["split"] for s in range(20)} == {"train"}


def test_parse_a11y_reads_the_phone_text() -> None:
    env = PhoneEnv()
    obs, _ = env.reset(options={"task_id": "basic-add-contact-0"})
    env.step({"type": "open_app", "name": "Contacts"})
    obs, *_ = env.step({"type": "type", "text": "zz"})  # no focus: invalid, screen unchanged
    window, els = parse_a11y(obs["a11y"])
    assert window == "Contacts"
    search = next(e for e in els if e.role == "textbox")
    assert (search.text, search.hint, search.focused) == ("", "Search contacts", False)
    assert next(e for e in els if e.role == "list").state.startswith("rows 1-")


ENV_IDS = ["vlagent/Phone-v0", "vlagent/PhoneDesktop-v0", "vlagent/AndroidSynthetic-v0"]


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("suite", ["phone_basic", "phone_heldout"])
def test_oracle_solves_every_task_and_random_does_not(env_id: str, suite: str) -> None:
    rates = measure(suite, env_id, policies=("oracle", "random"), seeds=(0, 1))
    oracle, random = rates["oracle"], rates["random"]
    failed = [e for e in oracle.episodes if not e.success]
    assert oracle.rate == 1.0, failed
    infeasible = [e for e in oracle.episodes if "missing" in e.task_id or "call" in e.task_id]
    assert infeasible and all(e.success and e.status == "success" for e in infeasible)
    assert all(not e.truncated for e in oracle.episodes)
    assert random.rate <= 0.2 < oracle.rate  # random: ~2-5 % on these suites


def test_budget_truncates_through_time_limit() -> None:
    env = gymnasium.make("vlagent/Phone-v0")
    obs, info = env.reset(seed=0, options={"task_id": "basic-open-missing-app-0"})
    steps, truncated, terminated = 0, False, False
    while not (truncated or terminated):
        _, _, terminated, truncated, info = env.step({"type": "wait"})
        steps += 1
    assert (steps, truncated, terminated, info["success"]) == (
        info["max_steps"],
        True,
        False,
        False,
    )
    env.reset(seed=0, options={"task_id": "basic-set-toggles-0"})  # a new budget per task
    assert env.get_wrapper_attr("_max_episode_steps") == 10
    env.close()


def test_initial_state_seeds_are_the_task_seeds() -> None:
    task = load_suite("phone_basic").get("basic-add-contact-1")
    fresh = initial_state(task.seed)
    assert [c.name for c in task.initial.contacts] == [
        c.name for c in fresh.contacts if c.name != "Marco Reyes"
    ]
