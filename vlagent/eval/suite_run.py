"""Run named evaluation suites into one folder: ``OUT/<name>/`` each, ``OUT/suites.json`` and
``OUT/suites.md`` with one row per suite (``vlagent eval --suite a,b``).

A row holds the suite's world, ``n`` episodes, the success rate with its 95 % Wilson interval,
mean turns (and a robot's mean env steps), generated tokens per episode, and avg@k / pass@k with
``k`` episodes per task. A suite that fails while it runs (no X display for ``desktop_*``, no
Chromium for ``miniwob``) gets a row with its ``error`` and the others still run; a missing
required override stops the whole run before anything is evaluated.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlagent.eval.run import EvalRequest, Policies, evaluate_into
from vlagent.eval.suites import EvalSuite, check_requirements, load_suite_config, overrides_for
from vlagent.io import atomic_write_json, atomic_write_text

log = logging.getLogger(__name__)

ROW_KEYS = ("n", "success_rate", "success_ci_low", "success_ci_high", "mean_turns",
            "mean_steps", "generated_tokens", "k", "tasks", "avg@k", "pass@k")  # fmt: skip
"""Summary keys copied into each suite's row (absent ones are left out)."""


def suite_row(suite: EvalSuite, folder: Path, summary: Mapping[str, Any]) -> dict[str, Any]:
    """One ``suites.json`` row from a suite's ``eval_summary.json`` content."""
    row: dict[str, Any] = {
        "suite": suite.name,
        "world": summary.get("world", suite.world),
        "config": suite.config,
        "folder": str(folder),
    }
    row.update({k: summary[k] for k in ROW_KEYS if k in summary})
    return row


def _pct(v: Any) -> str:
    return "–" if not isinstance(v, (int, float)) else f"{100 * v:.1f}"


def _num(v: Any) -> str:
    return "–" if not isinstance(v, (int, float)) else f"{v:.3g}"


def suites_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a Markdown table (rates in %, the interval as ``low–high``)."""
    head = ["suite", "world", "n", "success %", "95 % CI", "mean turns", "mean steps",
            "tokens / episode", "k", "avg@k %", "pass@k %"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.get("error"):
            why = " ".join(str(r["error"]).split()).replace("|", "\\|")
            lines.append(f"| {r['suite']} | {r['world']} | error: {why} |" + " |" * 8)
            continue
        ci = f"{_pct(r.get('success_ci_low'))}–{_pct(r.get('success_ci_high'))}"
        n, k = r.get("n"), r.get("k")
        cells = [r["suite"], r["world"], "–" if n is None else str(int(n)),
                 _pct(r.get("success_rate")), ci, _num(r.get("mean_turns")),
                 _num(r.get("mean_steps")), _num(r.get("generated_tokens")),
                 "–" if k is None else str(int(k)), _pct(r.get("avg@k")), _pct(r.get("pass@k"))]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    note = (
        "\nsuccess: episodes that succeeded / n, 95 % Wilson interval. avg@k: mean success over "
        "all k episodes of each task; pass@k: share of tasks with at least one success.\n"
    )
    return "\n".join(lines) + "\n" + note


def write_suites(out: Path, model: str, rows: Sequence[Mapping[str, Any]]) -> tuple[Path, Path]:
    """``out/suites.json`` (``{"model", "suites": rows}``) and ``out/suites.md``, atomically."""
    json_path, md_path = out / "suites.json", out / "suites.md"
    atomic_write_json(json_path, {"model": model, "suites": list(rows)})
    atomic_write_text(md_path, f"# Evaluation suites: {model}\n\n" + suites_markdown(rows))
    return json_path, md_path


def run_suites(
    suites: Sequence[EvalSuite],
    overrides: Sequence[str],
    req: EvalRequest,
    out: Path,
    *,
    pictures_root: Path | None = None,
) -> list[dict[str, Any]]:
    """Evaluate ``req.model`` on each suite into ``out/<name>/``; write suites.json / .md.

    Args:
        suites: the suites, in order.
        overrides: the user's overrides (``key=value`` for all, ``NAME:key=value`` for one).
        req: model and extras; ``standin_images`` gets a ``<name>`` subfolder per ScreenSpot
            suite and is ignored by the others.
        out: the folder of the whole run.
        pictures_root: with ``req.pictures``: pictures go to ``pictures_root/<name>``
            (default ``out/<name>/samples``, where the report finds them).

    Returns:
        The rows written (a failed suite's row has ``error``).

    Raises:
        ConfigError: a required override is missing (nothing has run).
    """
    per_suite = overrides_for(suites, overrides)
    provided = ("task.image_dir",) if req.standin_images else ()
    check_requirements(suites, per_suite, provided)
    policies = Policies(req.model)
    rows: list[dict[str, Any]] = []
    for suite in suites:
        folder = out / suite.name
        folder.mkdir(parents=True, exist_ok=True)
        user = per_suite[suite.name]

        def load(extra: Sequence[str], suite: EvalSuite = suite, user: list[str] = user) -> Any:
            return load_suite_config(suite, [*user, *extra], provided)

        sys.stderr.write(f"suite {suite.name}: evaluating into {folder}\n")
        try:
            one = dataclasses.replace(
                req,
                strict_trajectories=False,
                json_path=None,
                pictures_dir=pictures_root / suite.name if pictures_root else folder / "samples",
                standin_images=_standins(req, suite, load),
            )
            summary = evaluate_into(load, one, folder, policies)
        except Exception as exc:  # one suite's missing display / browser must not stop the rest
            log.debug("suite %s failed", suite.name, exc_info=True)
            why = f"{type(exc).__name__}: {exc}"
            sys.stderr.write(f"vlagent: suite {suite.name} failed: {why}\n")
            rows.append({**suite_row(suite, folder, {}), "error": why})
        else:
            rows.append(suite_row(suite, folder, summary))
        write_suites(out, req.model, rows)  # after each suite: a crash keeps the finished rows
    return rows


def _standins(req: EvalRequest, suite: EvalSuite, load: Any) -> str | None:
    """``req.standin_images/<name>`` for a suite whose config reads a ScreenSpot annotation
    file (``task.source=screenspot``), else None."""
    if not req.standin_images or load([]).task.source != "screenspot":
        return None
    return str(Path(req.standin_images) / suite.name)
