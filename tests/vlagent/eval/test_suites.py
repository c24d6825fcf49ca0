"""The named evaluation suites (``vlagent.eval.suites``): every suite's config loads with its
overrides and runs in its world; required overrides; scoped overrides; the ``--suite`` CLI's
errors, the registry listing, and a run whose suites fail (rows with errors, nothing lost)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlagent.cli import main
from vlagent.errors import ConfigError
from vlagent.eval.suite_run import suites_markdown
from vlagent.eval.suites import (
    SUITES,
    check_requirements,
    load_suite_config,
    overrides_for,
    select,
)

SCREENSPOT = Path(__file__).resolve().parents[2] / "fixtures" / "screenspot_v2"
WORLDS = {"grounding", "zoom", "apps", "robot", "desktop", "web"}


def _value(cfg, dotted):
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


@pytest.mark.parametrize("name", sorted(SUITES))
def test_each_suite_config_loads_with_its_overrides(name):
    suite = SUITES[name]
    assert suite.name == name and suite.description
    given = [f"{k}=/data/{k.split('.')[-1]}" for k in suite.requires]
    cfg = load_suite_config(suite, given)
    assert cfg.world == suite.world
    for item in [*suite.overrides, *given]:
        key, value = item.split("=", 1)
        assert str(_value(cfg, key)) == value, item
    assert cfg.eval.num_screens > 0


def test_the_registry_covers_every_world():
    assert {s.world for s in SUITES.values()} == WORLDS
    for name in ("quickstart", "screenspot_v2", "zoom_hires", "phone_apps", "robot_reach",
                 "robot_push", "desktop_local", "desktop_os", "miniwob"):  # fmt: skip
        assert name in SUITES
    assert SUITES["desktop_os"].config == SUITES["desktop_local"].config == "desktop_eval"
    assert _value(load_suite_config(SUITES["desktop_os"]), "desktop.eval_suite") == "os"


def test_missing_required_override_is_a_clear_error():
    suite = SUITES["screenspot_v2"]
    with pytest.raises(ConfigError) as err:
        load_suite_config(suite, ["eval.num_screens=5"])
    msg = str(err.value)
    assert "suite screenspot_v2 needs task.annotation_file, task.image_dir" in msg
    assert "task.annotation_file=... task.image_dir=..." in msg
    with pytest.raises(ConfigError, match=r"needs task\.image_dir \("):
        load_suite_config(suite, ["task.annotation_file=a.json"])
    # stand-in images provide the image folder
    cfg = load_suite_config(suite, ["task.annotation_file=a.json"], provided=["task.image_dir"])
    assert cfg.task.annotation_file == "a.json" and cfg.task.screenspot_version == "v2"
    # a user override wins over the suite's own
    cfg = load_suite_config(SUITES["robot_reach"], ["eval.num_screens=7"])
    assert cfg.eval.num_screens == 7


def test_select_and_scoped_overrides():
    assert [s.name for s in select(" quickstart,miniwob,quickstart ")] == ["quickstart", "miniwob"]
    with pytest.raises(ConfigError, match="unknown suite 'nope'.*known: quickstart"):
        select("quickstart,nope")
    with pytest.raises(ConfigError, match="no suite named"):
        select(" , ")
    suites = select("quickstart,screenspot_v2")
    per = overrides_for(
        suites,
        ["eval.num_screens=4", "screenspot_v2:task.image_dir=/img",
         "task.reward={point_in_box: 1.0}"],
    )  # fmt: skip
    assert per["quickstart"] == ["eval.num_screens=4", "task.reward={point_in_box: 1.0}"]
    assert per["screenspot_v2"] == [
        "eval.num_screens=4", "task.image_dir=/img", "task.reward={point_in_box: 1.0}",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match="'miniwob' is not one of the selected suites"):
        overrides_for(suites, ["miniwob:web.max_browsers=1"])
    with pytest.raises(ConfigError, match="screenspot_v2 needs task.annotation_file"):
        check_requirements(suites, per)


def test_cli_suite_errors_and_listing(tmp_path, capsys):
    out = str(tmp_path / "o")
    argv = ["eval", "--model", "m", "--out", out, "--suite", "quickstart,screenspot_v2"]
    assert main(argv) == 2
    assert "suite screenspot_v2 needs task.annotation_file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # stopped before anything ran
    assert main(["eval", "--model", "m", "--suite", "quickstart", "--config", "grpo"]) == 2
    assert "give --config or --suite, not both" in capsys.readouterr().err
    assert main(["eval", "--suite", "quickstart"]) == 2
    assert "--model is required" in capsys.readouterr().err
    assert main(["eval", "--suite", "list"]) == 0
    listing = capsys.readouterr().out
    for s in SUITES.values():
        assert s.name in listing and f"--config {s.config}" in listing
    assert "requires: task.annotation_file=... task.image_dir=..." in listing


def test_failed_suites_get_error_rows(tmp_path, capsys):
    """A suite that fails while running (here: a bad override, a checkpoint that does not
    exist) is recorded with its error; the others still run and the exit code is 1."""
    out = tmp_path / "o"
    argv = ["eval", "--model", str(tmp_path / "no_model"), "--out", str(out), "--suite",
            "quickstart,miniwob", "quickstart:eval.num_screens=many"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "suite quickstart failed: ConfigError" in err and "suite miniwob failed" in err
    rows = json.loads((out / "suites.json").read_text())["suites"]
    assert [r["suite"] for r in rows] == ["quickstart", "miniwob"]
    assert "eval.num_screens" in rows[0]["error"] and rows[1]["world"] == "web"
    assert "no_model" in rows[1]["error"] or "does not exist" in rows[1]["error"]
    md = (out / "suites.md").read_text()
    assert "| quickstart | grounding | error: ConfigError" in md


def test_suites_markdown_rows():
    rows = [
        {"suite": "a", "world": "apps", "n": 10.0, "success_rate": 0.7, "success_ci_low": 0.397,
         "success_ci_high": 0.892, "mean_turns": 4.25, "generated_tokens": 88.0, "k": 2.0,
         "avg@k": 0.7, "pass@k": 0.8},
        {"suite": "b", "world": "web", "error": "WebError: no chromium"},
    ]  # fmt: skip
    md = suites_markdown(rows).splitlines()
    assert md[2] == "| a | apps | 10 | 70.0 | 39.7–89.2 | 4.25 | – | 88 | 2 | 70.0 | 80.0 |"
    assert md[3].startswith("| b | web | error: WebError: no chromium |")
    assert md[3].count("|") == md[2].count("|")
