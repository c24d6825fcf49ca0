"""``DesktopEnv`` on the real local desktop: the env contract, leaks after ``close()``, a hung
evaluator command killed at the step timeout, hostile typed text, setup-unavailable tasks and
bad task files, and ``vlagent osworld-check``."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import psutil
import pytest

from gui.osworld.env import DesktopEnv, EpisodeError
from gui.osworld.errors import TaskFileError
from gui.osworld.setup import SetupUnavailable
from gui.osworld.suites import BUNDLED, load_suite
from gui.osworld.task_file import parse_task
from tests.env_contract import check_contract

pytestmark = pytest.mark.display


@pytest.fixture(autouse=True)
def _desktop():
    from sim.desktop import missing_requirements

    missing = missing_requirements()
    if missing:
        pytest.skip("desktop backend unavailable: " + "; ".join(missing))


def _task(base_id: str, **changes) -> object:
    raw = json.loads((BUNDLED["local"] / f"{base_id}.json").read_text())
    raw = copy.deepcopy(raw)
    raw.update(changes)
    return parse_task(raw, f"{raw['id']}.json")


def _descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_env_contract():
    tasks = load_suite("local")
    check_contract(
        lambda: DesktopEnv(tasks, width=640, height=480, max_steps=3),
        valid_actions=[{"type": "click", "point": [0.5, 0.5]}, {"type": "key", "key": "Return"}],
        invalid_actions=[
            {"type": "click", "point": [2.0, 0.5]},
            {"type": "open_app", "name": "Photoshop"},
            {"type": "key", "key": "rm -rf"},
            "not an action",
        ],
    )


def test_close_leaks_no_process_display_or_folder():
    before = _descendants()
    env = DesktopEnv("local", width=640, height=480)
    env.reset(seed=0, options={"task_id": "local-editor-append"})
    session = env.session
    pids = _descendants() - before
    number, home = session.display.number, session.home
    env.reset(seed=0, options={"task_id": "local-calc-product"})  # terminal + calculator
    pids |= _descendants() - before
    assert len(pids) >= 4  # Xvfb, openbox, the sandboxes and their apps
    env.close()
    env.close()
    time.sleep(0.2)
    assert _descendants() == before
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    assert not Path(f"/tmp/.X11-unix/X{number}").exists()
    assert not Path(home).exists()


def test_hung_evaluator_command_is_killed_and_the_episode_errors():
    hung = _task(
        "local-mkdir-projects",
        id="local-hung",
        evaluator={
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": "sleep 60", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": "x"}},
        },
    )
    env = DesktopEnv([hung], width=640, height=480, step_timeout=1.0)
    try:
        env.reset(seed=0, options={"task_id": "local-hung"})
        start = time.monotonic()
        with pytest.raises(EpisodeError, match="local-hung"):
            env.step({"type": "done"})
        assert time.monotonic() - start < 6
        sleeps = [
            p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "60"]
        ]
        assert not sleeps
        # the env still works after the error: the next episode resets cleanly
        obs, _ = env.reset(seed=0, options={"task_id": "local-hung"})
        assert "Terminal" in obs["a11y"]
    finally:
        env.close()


HOSTILE = "$(touch /tmp/pwned_env) `touch /tmp/pwned_env2`; rm -rf ~ 'q\" é\n"


def test_hostile_text_is_typed_literally_into_the_editor():
    env = DesktopEnv("local", width=1024, height=768)
    try:
        obs, _ = env.reset(seed=0, options={"task_id": "local-editor-new-file"})
        from gui.osworld.oracle import XEDIT_SAVE, XEDIT_TEXT_END, find_window, step_action

        w = find_window(obs["a11y"], "xedit")
        action = step_action(("edit", HOSTILE), obs["a11y"], (1024, 768))
        assert action["point"] == pytest.approx(
            [(w.x + XEDIT_TEXT_END[0]) / 1023, (w.y + XEDIT_TEXT_END[1]) / 767]
        )
        env.step(action)
        env.step(step_action(("click", "xedit", XEDIT_SAVE), obs["a11y"], (1024, 768)))
        saved = env.session.sandbox.host_path("~/Documents/shopping.txt").read_bytes()
        assert saved.decode("latin-1") == HOSTILE  # xedit writes Latin-1 in the C locale
        assert not Path("/tmp/pwned_env").exists() and not Path("/tmp/pwned_env2").exists()
    finally:
        env.close()


def test_setup_unavailable_task_is_refused_before_anything_runs():
    download = _task(
        "local-mkdir-projects",
        id="local-download",
        config=[
            {
                "type": "download",
                "parameters": {"files": [{"url": "https://example.com/a.sh", "path": "a.sh"}]},
            }
        ],
    )
    env = DesktopEnv([download])
    try:
        assert "download" in env.unavailable("local-download")
        with pytest.raises(SetupUnavailable, match="offline"):
            env.reset(seed=0, options={"task_id": "local-download"})
        assert env._session is None  # nothing was started
    finally:
        env.close()


def test_bad_task_file_names_the_field(tmp_path):
    raw = json.loads((BUNDLED["local"] / "local-chmod-644.json").read_text())
    raw["config"][0]["parameters"].pop("command")
    (tmp_path / "bad.json").write_text(json.dumps(raw))
    with pytest.raises(TaskFileError, match=r"config\[0\]\.parameters\.command"):
        DesktopEnv(tmp_path)


def test_osworld_check_cli_writes_rows(tmp_path):
    from vlagent.cli import main

    folder = tmp_path / "suite"
    folder.mkdir()
    for name in ("local-chmod-644", "local-infeasible-bluetooth"):
        (folder / f"{name}.json").write_text((BUNDLED["local"] / f"{name}.json").read_text())
    (folder / "os-download.json").write_text(
        (BUNDLED["os"] / "37887e8c-da15-4192-923c-08fa390a176d.json").read_text()
    )
    out = tmp_path / "check.json"
    assert main(["osworld-check", str(folder), "--json", str(out)]) == 0
    rows = {r["id"][:13]: r for r in json.loads(out.read_text())["rows"]}
    assert rows["local-chmod-6"]["status"] == "ran"
    assert rows["local-chmod-6"]["done_agent_success"] is False
    assert rows["local-infeasi"]["fail_agent_success"] is True
    assert rows["37887e8c-da15"]["status"] == "setup_unavailable"
    assert "download" in rows["37887e8c-da15"]["reason"]
