"""`vlagent report`, `vlagent eval --report` and `vlagent eval --compare RUN_A RUN_B`; the
comparison's pooled two-proportion z test."""

from __future__ import annotations

import json
import math

import pytest
import torch
from test_report_fixtures import eval_dir, read_page, samples_dir

from vlagent.cli import main
from vlagent.eval.report import two_proportion_z
from vlagent.eval.report.compare import Z95
from vlagent.io import atomic_write_json


def test_two_proportion_z_known_values():
    assert two_proportion_z(40, 100, 60, 100) == pytest.approx(0.2 / math.sqrt(0.25 * 0.02))
    assert two_proportion_z(60, 100, 40, 100) == pytest.approx(-2.8284271247)
    assert two_proportion_z(5, 10, 5, 10) == 0.0
    assert two_proportion_z(0, 10, 0, 20) == 0.0  # both rates 0: no difference
    assert pytest.approx(1.96, abs=1e-4) == Z95
    with pytest.raises(ValueError, match="n_a=0"):
        two_proportion_z(0, 0, 1, 2)


def _summary(folder, n, rate, **extra):
    atomic_write_json(folder / "eval_summary.json", {"n": float(n), "success_rate": rate, **extra})
    return folder


def test_compare_tables_side_by_side(tmp_path, capsys):
    a = _summary(tmp_path / "a", 1000, 0.3, mean_turns=3.0, **{"success/wifi": 0.5})
    b = _summary(tmp_path / "b", 1000, 0.5, mean_turns=2.5, **{"success/wifi": 0.75})
    assert main(["eval", "--compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    assert "comparison written to" in capsys.readouterr().out
    t = read_page(tmp_path / "cmp" / "index.html").tables["compare-overall"]
    rate = t["success_rate"]
    assert [float(c[1]) for c in rate[1:4]] == [0.3, 0.5, 0.5 - 0.3]
    assert float(rate[4][1]) == pytest.approx(two_proportion_z(300, 1000, 500, 1000))
    assert rate[5] == ("yes", "1.0")
    assert t["success/wifi"][4:] == [("n/a", None), ("n/a", None)]  # no counts: no test
    assert float(t["mean_turns"][3][1]) == -0.5

    small_b = _summary(tmp_path / "sb", 10, 0.5)
    small_a = _summary(tmp_path / "sa", 10, 0.3)
    assert (
        main(["eval", "--compare", str(small_a), str(small_b), "--out", str(tmp_path / "c2")]) == 0
    )
    rate = read_page(tmp_path / "c2" / "index.html").tables["compare-overall"]["success_rate"]
    assert rate[5] == ("no", "0.0")  # 3/10 vs 5/10 is within the noise
    # near the 95 % boundary: 40/100 vs 54/100 gives z = 1.98 (outside), vs 53/100 z = 1.84
    for k_b, want in ((54, "yes"), (53, "no")):
        _summary(tmp_path / "sa", 100, 0.4)
        _summary(tmp_path / "sb", 100, k_b / 100)
        assert (
            main(["eval", "--compare", str(small_a), str(small_b), "--out", str(tmp_path / "c2")])
            == 0
        )
        rate = read_page(tmp_path / "c2" / "index.html").tables["compare-overall"]["success_rate"]
        assert rate[5][0] == want, rate


def test_compare_screenspot_tables_and_problems(tmp_path):
    a, b = eval_dir(tmp_path / "a"), eval_dir(tmp_path / "b")
    (b / "eval_summary.json").write_text("{broken")
    assert main(["eval", "--compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    page = read_page(tmp_path / "cmp" / "index.html")
    dom = page.tables["compare-screenspot-domain"]
    table = json.loads((a / "eval_table.json").read_text())["tables"]["domain"]
    for r in table["rows"]:
        want = table["row_totals"][r]["accuracy"]
        assert [float(c[1]) for c in dom[f"row_totals:{r}"][1:4]] == [want, want, 0.0]
    assert any(p.startswith("B: eval_summary.json") for p in page.problems)


def test_report_command_and_missing_folder(tmp_path, capsys):
    run = eval_dir(tmp_path / "run")
    samples_dir(run)
    assert main(["report", str(run)]) == 0
    assert (run / "report" / "index.html").is_file()
    assert main(["report", str(run), "--out", str(tmp_path / "r2")]) == 0
    assert "report written to" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["eval", "--out", str(tmp_path / "x")]) == 2
    assert "--model is required" in capsys.readouterr().err


def test_eval_report_flag_writes_the_report(tiny_dir, tmp_path):
    threads = torch.get_num_threads()
    out = tmp_path / "out"
    argv = ["eval", "--model", str(tiny_dir), "--out", str(out), "--trajectories", "--report"]
    argv += ["--config", "quickstart", "eval.num_screens=4", "eval.max_new_tokens=8"]
    assert main(argv) == 0
    torch.set_num_threads(threads)
    summary = json.loads((out / "eval_summary.json").read_text())
    page = read_page(out / "report" / "index.html")
    rate = page.tables["overall"]["success_rate"]
    assert float(rate[1][1]) == summary["success_rate"] and float(rate[4][1]) == summary["n"] == 4
    assert len(page.scripts["episodes-data"]) == 4
    assert page.problems == []
