"""OSWorld task files: the 24 shipped "os" tasks load, and every schema break names its field."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from gui.osworld.errors import OSWorldError, TaskFileError
from gui.osworld.metrics import METRICS, OSWORLD_METRICS
from gui.osworld.suites import BUNDLED
from gui.osworld.task_file import (
    GETTER_TYPES,
    OSWORLD_COMMIT,
    SETUP_STEPS,
    Getter,
    SetupStep,
    load_task,
    load_tasks,
    parse_task,
)

OS_DIR = BUNDLED["os"]  # the 24 OSWorld os task files, shipped with the package
EMPTY = {
    "4d2b519e-e872-4100-8ea3-fe71ab0f9133",
    "5c433d22-ed9a-4e31-91f5-54cf3e8acd63",
    "765d2b74-88a7-4d50-bf51-34e4106fd24a",
    "f10b16e1-c160-4cb3-989f-7b2ec89bc073",
}
INFEASIBLE = {
    "a462a795-fdc7-4b23-b689-e8b6df786b78",
    "b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa",
    "c288e301-e626-4b98-a1ab-159dcb162af5",
}
BASE = {
    "id": "t1",
    "snapshot": "os",
    "instruction": "Do it",
    "source": "test",
    "config": [
        {"type": "execute", "parameters": {"command": "true", "shell": True}},
        {"type": "sleep", "parameters": {"seconds": 1}},
    ],
    "related_apps": ["os"],
    "evaluator": {
        "func": "exact_match",
        "result": {"type": "vm_command_line", "command": "echo hi", "shell": True},
        "expected": {"type": "rule", "rules": {"expected": "hi\n"}},
    },
}


def _with(path: str, value: object) -> dict:
    """BASE with the dotted ``path`` (``a.b[1].c``) set to ``value`` (``...`` deletes it)."""
    obj = copy.deepcopy(BASE)
    keys = [
        int(k) if k.isdigit() else k for k in path.replace("[", ".").replace("]", "").split(".")
    ]
    node = obj
    for k in keys[:-1]:
        node = node[k]
    if value is ...:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return obj


def test_all_shipped_os_tasks_load() -> None:
    tasks = load_tasks(OS_DIR)
    assert len(tasks) == 24
    assert [t.id for t in tasks] == sorted(t.id for t in tasks)
    assert {t.id for t in tasks if t.evaluator.empty} == EMPTY
    assert {t.id for t in tasks if t.evaluator.infeasible} == INFEASIBLE
    for t in tasks:
        ev = t.evaluator
        assert Path(t.path).name == f"{t.id}.json"
        assert len(ev.funcs) == len(ev.results) == len(ev.expected) == len(ev.options)
        assert set(ev.funcs) <= set(METRICS) | {"infeasible"}, t.id
        if not (ev.empty or ev.infeasible):
            assert all(isinstance(g, Getter) for g in ev.results), t.id


def test_shipped_task_fields() -> None:
    by_id = {t.id: t for t in load_tasks(OS_DIR)}
    pulse = by_id["28cc3b7e-b194-4bc9-8353-d04c0f4d56d2"].evaluator
    assert pulse.funcs == ("exact_match",) and pulse.conj == "and"
    assert pulse.results[0].type == "vm_command_line" and pulse.results[0].params["shell"] is True
    assert pulse.expected[0] == Getter("rule", {"rules": {"expected": "100\n"}})
    assert pulse.options == ({},) and pulse.unavailable is None
    utc = by_id["b6781586-6346-41cd-935a-a6b1487918fc"].evaluator
    assert utc.funcs == ("is_utc_0",) and utc.expected == (None,)
    stty = by_id["13584542-872b-42d8-b299-866967b5c3ef"].evaluator
    assert [s.type for s in stty.postconfig] == ["sleep", "execute"]
    md5 = by_id["0b35aee5-6f2a-4c71-b2da-aed0105fdbde"]
    assert "calc_insensitive_md5" in md5.evaluator.unavailable
    assert [s.type for s in md5.config] == ["execute", "download", "execute", "execute"]
    assert md5.config[1].parameters["files"][0]["path"] == "/home/user/Desktop/submission.cpp"
    assert by_id["c288e301-e626-4b98-a1ab-159dcb162af5"].config == ()
    assert by_id["a462a795-fdc7-4b23-b689-e8b6df786b78"].evaluator.funcs == ("infeasible",)
    empty = by_id["f10b16e1-c160-4cb3-989f-7b2ec89bc073"]
    assert empty.evaluator.funcs == () and empty.related_apps == ("os",)


def test_names_follow_the_osworld_commit() -> None:
    assert OSWORLD_COMMIT.startswith("89426951")
    assert set(METRICS) <= OSWORLD_METRICS
    assert {"vm_command_line", "vm_terminal_output", "rule", "list_directory"} <= GETTER_TYPES
    assert "vm_window_title" not in GETTER_TYPES  # OSWorld has vm_window_size, not a title getter
    assert {"execute", "command", "launch", "open", "sleep", "download"} <= set(SETUP_STEPS)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "config[0].type",
            "frobnicate",
            "config[0].type: unknown setup step 'frobnicate'; known: ",
        ),
        ("config[0].parameters.command", ..., "config[0].parameters.command: required"),
        ("config[0].parameters.command", 5, "config[0].parameters.command: must be a non-empty"),
        ("config[0].parameters.command", [], "config[0].parameters.command: must be a non-empty"),
        ("config[0].parameters.bogus", 1, "config[0].parameters.bogus: unexpected; execute takes"),
        ("config[0].parameters", ..., "config[0].parameters: required (an object)"),
        ("config[1].parameters.seconds", "1", "config[1].parameters.seconds: must be a non-negat"),
        ("config[1].parameters.seconds", True, "config[1].parameters.seconds: must be a non-negat"),
        ("config[1]", {"type": "open", "parameters": {}}, "config[1].parameters.path: required"),
        ("config[1]", {"type": "launch", "parameters": {}}, "config[1].parameters.command: req"),
        (
            "config[1]",
            {"type": "activate_window", "parameters": {"strict": True}},
            "config[1].parameters.window_name: required",
        ),
        (
            "config[1]",
            {"type": "download", "parameters": {"files": [{"path": "/a"}]}},
            "config[1].parameters.files[0].url: required (a non-empty string)",
        ),
        (
            "config[1]",
            {"type": "download", "parameters": {"files": []}},
            "config[1].parameters.files: must be a non-empty list of {url, path}",
        ),
        ("config", {"type": "sleep"}, "config: must be a list of setup steps"),
        (
            "evaluator.result.type",
            "vm_foo",
            "evaluator.result.type: unknown getter 'vm_foo'; known:",
        ),
        ("evaluator.result.command", ..., "evaluator.result.command: required by getter vm_com"),
        ("evaluator.result", ..., "evaluator.result: required (an object with a getter type)"),
        ("evaluator.expected.rules", ..., "evaluator.expected.rules: required by getter rule"),
        ("evaluator.func", "nope", "evaluator.func: unknown metric 'nope'; known: "),
        ("evaluator.func", ["exact_match", 3], "evaluator.func[1]: unknown metric 3"),
        ("evaluator.func", [], "evaluator.func: must not be an empty list"),
        ("evaluator.conj", "xor", "evaluator.conj: must be 'and' or 'or', got 'xor'"),
        ("evaluator.options", [{}], "evaluator.options: must be an object when func is a single"),
        ("evaluator.options", 3, "evaluator.options: must be an object"),
        (
            "evaluator.postconfig",
            [{"type": "sleep", "parameters": {}}],
            "evaluator.postconfig[0].parameters.seconds: required",
        ),
        ("evaluator", ..., "evaluator: required (an object)"),
        ("id", ..., "id: required (a non-empty string)"),
        ("id", 7, "id: required (a non-empty string)"),
        ("instruction", "  ", "instruction: required (a non-empty string)"),
        ("related_apps", "os", "related_apps: must be a list of strings"),
        ("source", 3, "source: must be a string or a list of strings"),
    ],
)
def test_schema_errors_name_the_file_and_field(path: str, value: object, message: str) -> None:
    with pytest.raises(TaskFileError) as info:
        parse_task(_with(path, value), "foo.json")
    assert str(info.value).startswith(f"foo.json: {message}")
    assert isinstance(info.value, OSWorldError) and isinstance(info.value, ValueError)
    assert info.value.where == "foo.json" and info.value.field == message.split(":")[0]


def test_unknown_getter_lists_known_ones() -> None:
    with pytest.raises(TaskFileError, match="known: accessibility_tree, active_tab_html_parse"):
        parse_task(_with("evaluator.result.type", "vm_foo"), "foo.json")


def test_func_lists_align_and_broadcast() -> None:
    ev = dict(
        func=["exact_match", "check_include_exclude"],
        conj="or",
        result={"type": "vm_terminal_output"},
        expected=[None, {"type": "rule", "rules": {"include": ["a"]}}],
        options=[None, {"x": 1}],
    )
    task = parse_task(_with("evaluator", ev), "t.json").evaluator
    assert task.funcs == ("exact_match", "check_include_exclude") and task.conj == "or"
    assert task.results == (Getter("vm_terminal_output", {}),) * 2
    assert task.expected == (None, Getter("rule", {"rules": {"include": ["a"]}}))
    assert task.options == ({}, {"x": 1})
    for field, bad, msg in [
        (
            "result",
            [{"type": "vm_terminal_output"}],
            "evaluator.result: has 1 entries but func has 2",
        ),
        ("options", [{}, {}, {}], "evaluator.options: has 3 entries but func has 2"),
        ("result", [{"type": "vm_terminal_output"}, None], "evaluator.result[1]: required"),
        ("expected", [None, {"type": "nope"}], "evaluator.expected[1].type: unknown getter"),
        ("func", ["exact_match", "infeasible"], "evaluator.func[1]: 'infeasible' must be the only"),
    ]:
        with pytest.raises(TaskFileError, match=msg.replace("[", r"\[").replace("]", r"\]")):
            parse_task(_with("evaluator", {**ev, field: bad}), "t.json")


def test_special_evaluators() -> None:
    empty = parse_task(
        _with("evaluator", {"func": "", "result": {}, "expected": {}}), "t"
    ).evaluator
    assert empty.empty and not empty.infeasible and empty.funcs == () and empty.results == ()
    inf = parse_task(_with("evaluator", {"func": "infeasible"}), "t").evaluator
    assert inf.infeasible and not inf.empty and inf.funcs == ("infeasible",)
    assert inf.results == (None,) and inf.expected == (None,) and inf.options == ({},)
    task = parse_task(_with("source", ["https://a", "https://b"]), "t")
    assert task.source == "https://a https://b"
    task = parse_task(_with("config", ...), "t")
    assert task.config == () and task.snapshot == "os"


def test_parsed_task_is_frozen_and_detached() -> None:
    raw = copy.deepcopy(BASE)
    task = parse_task(raw, "t.json")
    raw["config"][0]["parameters"]["command"] = "rm -rf /"
    raw["evaluator"]["expected"]["rules"]["expected"] = "changed"
    assert task.config[0] == SetupStep("execute", {"command": "true", "shell": True})
    assert task.evaluator.expected[0].params["rules"]["expected"] == "hi\n"
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.id = "other"  # type: ignore[misc]


def test_load_task_file_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(TaskFileError, match=r"missing\.json: cannot read"):
        load_task(missing)
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "x",\n  "oops"}')
    with pytest.raises(TaskFileError, match=r"bad\.json: not valid JSON: line 2 column"):
        load_task(bad)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"id": "caf\xe9"}')
    with pytest.raises(TaskFileError, match=r"latin\.json: not UTF-8: byte 11"):
        load_task(latin)
    top = tmp_path / "list.json"
    top.write_text("[]")
    with pytest.raises(TaskFileError, match=r"list\.json: a task must be a JSON object, got list"):
        load_task(top)


def test_load_tasks_sources_and_duplicates(tmp_path: Path) -> None:
    for name, tid in [("b.json", "zz"), ("a.json", "aa")]:
        (tmp_path / name).write_text(json.dumps({**BASE, "id": tid}))
    assert [t.id for t in load_tasks(tmp_path)] == ["aa", "zz"]
    assert [t.id for t in load_tasks([tmp_path / "b.json"])] == ["zz"]
    assert [t.id for t in load_tasks(str(tmp_path / "a.json"))] == ["aa"]
    (tmp_path / "c.json").write_text(json.dumps({**BASE, "id": "aa"}))
    with pytest.raises(
        TaskFileError, match=r"c\.json: id: duplicate id 'aa' \(also in .*a\.json\)"
    ):
        load_tasks(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TaskFileError, match="folder holds no"):
        load_tasks(empty)
