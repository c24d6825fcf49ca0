"""The report's tables as plain data: rows of cells that carry both their shown text and the
exact number they show (``value``), so tests and readers can check the page against the JSON.

Rates are fractions in [0, 1] (shown as percent); intervals are 95 % Wilson intervals
(:func:`vlagent.eval.stats.wilson_interval`) where the count ``n`` is known.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vlagent.eval.report.load import RunData, finite


@dataclasses.dataclass
class Cell:
    """One table cell: ``text`` shown, ``value`` the exact number (None for labels / gaps)."""

    text: str
    value: float | None = None


@dataclasses.dataclass
class Table:
    """A titled table: ``columns`` headers, ``rows`` of (key, cells); ``key`` names the row."""

    id: str
    title: str
    columns: list[str]
    rows: list[tuple[str, list[Cell]]]
    note: str = ""


def pct(value: float | None) -> str:
    """``0.8125`` -> ``81.2 %``; ``–`` for None."""
    return "–" if value is None else f"{100 * value:.1f} %"


def num(value: float | None) -> str:
    """A metric value with 4 significant digits; ``–`` for None."""
    return "–" if value is None else f"{value:.4g}"


def rate_cell(v: float | None) -> Cell:
    return Cell(pct(v), v)


def ci_cells(lo: float | None, hi: float | None) -> list[Cell]:
    """Two cells: the interval's low and high ends (percent)."""
    return [Cell(pct(lo), lo), Cell(pct(hi), hi)]


def n_cell(n: float | None) -> Cell:
    return Cell("–" if n is None else str(int(n)), n)


RATE_COLUMNS = ["", "rate", "95 % low", "95 % high", "n"]

_SKIP = ("success_ci_low", "success_ci_high", "n", "success_rate")
AT_K_KEYS = ("k", "tasks", "avg@k", "pass@k", "pass@k_ci_low", "pass@k_ci_high")
"""Summary keys shown by :func:`at_k_rows` (left out of the generic metric rows)."""


def at_k_rows(summary: dict[str, Any]) -> list[tuple[str, list[Cell]]]:
    """Overall-table rows: avg@k (n = episodes) and pass@k with its interval (n = tasks)."""
    if finite(summary.get("pass@k")) is None:
        return []
    k = finite(summary.get("k"))
    tag = f" (k={int(k)})" if k is not None else ""
    avg = [Cell(f"avg@k{tag}"), rate_cell(finite(summary.get("avg@k"))), Cell(""), Cell(""),
           n_cell(finite(summary.get("n")))]  # fmt: skip
    lo, hi = finite(summary.get("pass@k_ci_low")), finite(summary.get("pass@k_ci_high"))
    pas = [Cell(f"pass@k{tag}"), rate_cell(finite(summary.get("pass@k"))), *ci_cells(lo, hi),
           n_cell(finite(summary.get("tasks")))]  # fmt: skip
    return [("avg@k", avg), ("pass@k", pas)]


def overall_table(data: RunData) -> Table | None:
    """``eval_summary.json``'s headline: success with its interval, then every other scalar
    metric (world metrics, mean reward, turns, tokens); None without an eval summary."""
    s = data.summary
    if "success_rate" not in s:
        return None
    rows: list[tuple[str, list[Cell]]] = []
    n = finite(s.get("n"))
    rate = finite(s.get("success_rate"))
    lo, hi = finite(s.get("success_ci_low")), finite(s.get("success_ci_high"))
    rows.append(("success_rate", [Cell("success rate"), rate_cell(rate), *ci_cells(lo, hi),
                                  n_cell(n)]))  # fmt: skip
    rows += at_k_rows(s)
    for key in sorted(s):
        v = finite(s[key])
        if (
            key in _SKIP
            or key in AT_K_KEYS
            or key.startswith(("success/", "reward_terms/"))
            or v is None
        ):
            continue
        rows.append((key, [Cell(key), Cell(num(v), v), Cell(""), Cell(""), Cell("")]))
    title = f"Overall ({data.summary_file})"
    for k in ("model", "world"):
        if isinstance(s.get(k), str):
            title += f" · {k}: {s[k]}"
    return Table("overall", title, ["metric", "value", "95 % low", "95 % high", "n"], rows)


def category_rates(data: RunData) -> dict[str, float]:
    """``success/<name>`` rates of the summary (per app, per task kind)."""
    out = {}
    for key, v in data.summary.items():
        f = finite(v)
        if key.startswith("success/") and f is not None:
            out[key.removeprefix("success/")] = f
    return dict(sorted(out.items()))


def per_task_table(data: RunData) -> Table | None:
    """Success per app / task kind (``success/<name>`` keys); the summary carries no
    per-category count, so these rows have no interval."""
    rates = category_rates(data)
    if not rates:
        return None
    rows = [(k, [Cell(k), rate_cell(v)]) for k, v in rates.items()]
    return Table(
        "per-task",
        "Success per task / app",
        ["task", "success"],
        rows,
        "From the summary's success/<name> keys (no per-task counts stored, so no intervals).",
    )


def reward_terms(summary: dict[str, Any]) -> dict[str, float]:
    """``reward_terms/<name>`` means of a summary."""
    out = {}
    for key, v in summary.items():
        f = finite(v)
        if key.startswith("reward_terms/") and f is not None:
            out[key.removeprefix("reward_terms/")] = f
    return dict(sorted(out.items()))


def reward_terms_table(data: RunData) -> Table | None:
    terms = reward_terms(data.summary)
    if not terms:
        return None
    rows = [(k, [Cell(k), Cell(num(v), v)]) for k, v in terms.items()]
    return Table("reward-terms", "Reward terms (mean per episode)", ["term", "mean"], rows)


def baselines_table(data: RunData) -> Table | None:
    base = data.summary.get("baselines")
    if not isinstance(base, dict) or not base:
        return None
    rows = [(str(k), [Cell(str(k)), rate_cell(finite(v))]) for k, v in sorted(base.items())]
    return Table("baselines", "Baselines (same tasks)", ["baseline", "success"], rows)


def quickstart_table(data: RunData) -> Table | None:
    """``summary.json`` of a quickstart run: held-out accuracy per stage with its interval."""
    acc, ci = data.summary.get("accuracy"), data.summary.get("accuracy_ci95") or {}
    if not isinstance(acc, dict) or not isinstance(ci, dict):
        return None
    n = finite(data.summary.get("eval_screens"))
    fmt = (
        data.summary.get("format_rate") if isinstance(data.summary.get("format_rate"), dict) else {}
    )
    rows = []
    for stage, v in acc.items():
        c = ci.get(stage) if isinstance(ci.get(stage), list) and len(ci[stage]) == 2 else [None] * 2
        f = finite(fmt.get(stage))
        rows.append((str(stage), [Cell(str(stage)), rate_cell(finite(v)),
                                  *ci_cells(finite(c[0]), finite(c[1])), n_cell(n),
                                  rate_cell(f)]))  # fmt: skip
    cols = ["stage", "accuracy", "95 % low", "95 % high", "n", "format rate"]
    return Table("stages", "Held-out accuracy per stage (summary.json)", cols, rows)


def screenspot_tables(data: RunData) -> list[Table]:
    """``eval_table.json``: per table (domain / source / group / platform / application) x UI
    type, each cell ``accuracy (hits/n)``, plus the row total and its interval."""
    rep = data.table or {}
    out = []
    for key, t in (rep.get("tables") or {}).items():
        if not isinstance(t, dict) or not isinstance(t.get("cells"), dict):
            continue
        cols = [str(c) for c in t.get("cols", [])]
        rows = []
        for r in t.get("rows", []):
            cells = [Cell(str(r))]
            for c in cols:
                cc = (t["cells"].get(r) or {}).get(c) or {}
                cells.append(_count_cell(cc))
            tot = (t.get("row_totals") or {}).get(r) or {}
            ci = tot.get("ci95") or [None, None]
            cells += [_count_cell(tot), *ci_cells(finite(ci[0]), finite(ci[1]))]
            rows.append((str(r), cells))
        overall = t.get("overall") or {}
        ci = overall.get("ci95") or [None, None]
        col_tot = t.get("col_totals") or {}
        rows.append(("all", [Cell("all (micro)"), *(_count_cell(col_tot.get(c) or {}) for c in cols),
                             _count_cell(overall), *ci_cells(finite(ci[0]), finite(ci[1]))]))  # fmt: skip
        head = [str(key), *cols, "all", "95 % low", "95 % high"]
        title = f"{rep.get('benchmark', 'ScreenSpot')}: {key} × UI type (accuracy, hits/n)"
        out.append(Table(f"screenspot-{key}", title, head, rows))
    return out


def _count_cell(c: dict[str, Any]) -> Cell:
    acc, hits, n = finite(c.get("accuracy")), c.get("hits"), c.get("n")
    if not n or acc is None:
        return Cell("–")
    return Cell(f"{pct(acc)} ({hits}/{n})", acc)


def last_val_table(data: RunData) -> Table | None:
    """Without a summary file: the last ``val/*`` values of each metrics file."""
    rows = []
    for m in data.metrics:
        last = next((r for r in reversed(m.rows) if any(k.startswith("val/") for k in r)), None)
        if last is None:
            continue
        for k in sorted(last):
            v = finite(last[k])
            if k.startswith("val/") and v is not None:
                rows.append((f"{m.rel}:{k}", [Cell(m.rel), Cell(str(last.get("step"))), Cell(k),
                                               Cell(num(v), v)]))  # fmt: skip
    if not rows:
        return None
    return Table("last-val", "Last validation (metrics.jsonl)", ["file", "step", "metric",
                                                                  "value"], rows)  # fmt: skip


def summary_tables(data: RunData) -> list[Table]:
    """Every summary table the folder supports, headline first."""
    out = [overall_table(data), quickstart_table(data), per_task_table(data)]
    out += [*screenspot_tables(data), reward_terms_table(data), baselines_table(data)]
    if not data.summary:
        out.append(last_val_table(data))
    return [t for t in out if t is not None]
