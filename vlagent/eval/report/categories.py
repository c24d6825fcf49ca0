"""Report tables of what ``vlagent eval`` stores beyond the scalars: the per-category tables
(``eval_summary.json`` ``category_tables``: value → n, successes, rate, 95 % interval), the
avg@k / pass@k rows, and the suites table (``suites.json`` of ``vlagent eval --suite``); each also
side by side for ``--compare`` (with the pooled two-proportion z test where counts are known).

``category_tables`` layout: ``{key: {value: {"n", "successes", "success_rate", "ci95": [lo, hi]}}}``
(``vlagent.eval.categories``).
"""

from __future__ import annotations

from typing import Any

from vlagent.eval.report.load import RunData, finite
from vlagent.eval.report.tables import (
    Cell,
    Table,
    ci_cells,
    n_cell,
    num,
    rate_cell,
    summary_tables,
)


def category_data(summary: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """The well-formed part of a summary's ``category_tables`` (other entries are skipped)."""
    raw = summary.get("category_tables")
    if not isinstance(raw, dict):
        return {}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for key, table in raw.items():
        if isinstance(table, dict):
            rows = {str(v): r for v, r in table.items() if isinstance(r, dict)}
            if rows:
                out[str(key)] = rows
    return out


def _ci(row: dict[str, Any]) -> tuple[float | None, float | None]:
    ci = row.get("ci95")
    if isinstance(ci, list) and len(ci) == 2:
        return finite(ci[0]), finite(ci[1])
    return None, None


def category_tables(data: RunData) -> list[Table]:
    """One table per category key: value, success rate, 95 % interval, successes, n."""
    out = []
    for key, rows in category_data(data.summary).items():
        body = []
        for value, r in rows.items():
            k, n = finite(r.get("successes")), finite(r.get("n"))
            body.append((value, [Cell(value), rate_cell(finite(r.get("success_rate"))),
                                 *ci_cells(*_ci(r)), n_cell(k), n_cell(n)]))  # fmt: skip
        cols = [key, "success", "95 % low", "95 % high", "successes", "n"]
        note = "95 % Wilson intervals from each category's own count."
        out.append(Table(f"category-{key}", f"Success per {key}", cols, body, note))
    return out


def category_bars(data: RunData) -> dict[str, dict[str, float]]:
    """Bar-chart data: ``success rate per <key>`` → value → rate."""
    bars = {}
    for key, rows in category_data(data.summary).items():
        vals = {v: finite(r.get("success_rate")) for v, r in rows.items()}
        bars[f"success rate per {key}"] = {v: x for v, x in vals.items() if x is not None}
    return bars


SUITE_COLUMNS = ["suite", "world", "n", "success", "95 % low", "95 % high", "mean turns",
                 "mean steps", "tokens / episode", "k", "avg@k", "pass@k", "error"]  # fmt: skip


def suites_table(data: RunData) -> Table | None:
    """``suites.json``: one row per suite (a failed suite shows its error)."""
    if not data.suites:
        return None
    rows = []
    for r in data.suites:
        name = str(r.get("suite", "?"))
        f = {k: finite(r.get(k)) for k in ("n", "success_rate", "success_ci_low",
                                           "success_ci_high", "mean_turns", "mean_steps",
                                           "generated_tokens", "k", "avg@k", "pass@k")}  # fmt: skip
        cells = [Cell(name), Cell(str(r.get("world", "?"))), n_cell(f["n"]),
                 rate_cell(f["success_rate"]), *ci_cells(f["success_ci_low"], f["success_ci_high"]),
                 Cell(num(f["mean_turns"]), f["mean_turns"]), Cell(num(f["mean_steps"]), f["mean_steps"]),
                 Cell(num(f["generated_tokens"]), f["generated_tokens"]), n_cell(f["k"]),
                 rate_cell(f["avg@k"]), rate_cell(f["pass@k"]), Cell(str(r.get("error") or ""))]  # fmt: skip
        rows.append((name, cells))
    note = "Each suite's own folder holds its eval_summary.json (and report with --report)."
    return Table("suites", "Evaluation suites (suites.json)", SUITE_COLUMNS, rows, note)


def report_tables(data: RunData) -> list[Table]:
    """The report's summary tables: the suites table, then :func:`summary_tables` with the
    category tables after the headline (they replace the count-less per-task table)."""
    base, cats = summary_tables(data), category_tables(data)
    if cats:
        base = [t for t in base if t.id != "per-task"]
    head = [t for t in base if t.id in ("overall", "stages")]
    rest = [t for t in base if t.id not in ("overall", "stages")]
    suites = suites_table(data)
    return [*([suites] if suites else []), *head, *cats, *rest]


def category_compare(a: RunData, b: RunData, rate_row: Any, columns: list[str]) -> list[Table]:
    """Per category key both runs have: every value of either, A, B, B − A and the z test
    (counts from each side's ``n``); a value one run lacks shows ``–`` and ``n/a``."""
    ca, cb = category_data(a.summary), category_data(b.summary)
    out = []
    for key in [k for k in ca if k in cb]:
        rows = []
        for value in dict.fromkeys([*ca[key], *cb[key]]):
            ra, rb = ca[key].get(value) or {}, cb[key].get(value) or {}
            rows.append(rate_row(value, value, finite(ra.get("success_rate")),
                                 finite(rb.get("success_rate")), finite(ra.get("n")),
                                 finite(rb.get("n"))))  # fmt: skip
        out.append(Table(f"compare-category-{key}", f"Success per {key}", columns, rows))
    return out


def at_k_compare(a: RunData, b: RunData, rate_row: Any) -> list[tuple[str, list[Cell]]]:
    """avg@k (counts: episodes) and pass@k (counts: tasks) rows, when either run has them."""
    sa, sb = a.summary, b.summary
    if finite(sa.get("pass@k")) is None and finite(sb.get("pass@k")) is None:
        return []
    return [
        rate_row("avg@k", "avg@k", finite(sa.get("avg@k")), finite(sb.get("avg@k")),
                 finite(sa.get("n")), finite(sb.get("n"))),
        rate_row("pass@k", "pass@k", finite(sa.get("pass@k")), finite(sb.get("pass@k")),
                 finite(sa.get("tasks")), finite(sb.get("tasks"))),
    ]  # fmt: skip
