"""Two runs side by side: each rate of A and B, the difference B − A, and whether it is outside
the 95 % interval by a pooled two-proportion z test (|z| > 1.96).

The test needs each rate's count: the summary's ``n`` for the headline success rate, the
``eval_screens`` of a quickstart summary, ``hits / n`` of each ScreenSpot table cell, each
category's ``n`` (``category_tables``), the episodes of avg@k and the tasks of pass@k. Rows
without counts (``success/<name>`` of the apps and robot worlds, other metrics) show the
difference and ``n/a`` for the test.
"""

from __future__ import annotations

import math

from vlagent.eval.report.categories import at_k_compare, category_compare
from vlagent.eval.report.load import RunData, finite
from vlagent.eval.report.tables import Cell, Table, num, pct

Z95 = 1.959963984540054
"""Two-sided 95 % critical value of the standard normal."""


def two_proportion_z(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """Pooled two-proportion z statistic of ``k_b/n_b − k_a/n_a`` (0 when both rates are
    equal, ±inf when they differ but the pooled rate is 0 or 1, which cannot happen).

    >>> round(two_proportion_z(40, 100, 60, 100), 3)
    2.828
    """
    if n_a <= 0 or n_b <= 0:
        raise ValueError(f"two_proportion_z: counts must be positive, got n_a={n_a}, n_b={n_b}")
    p_a, p_b = k_a / n_a, k_b / n_b
    pooled = (k_a + k_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return 0.0
    return (p_b - p_a) / se


COLUMNS = ["", "A", "B", "B − A", "z", "outside 95 %"]
_AT_K = ("avg@k", "pass@k", "pass@k_ci_low", "pass@k_ci_high")


def _rate_row(
    key: str, label: str, a: float | None, b: float | None, n_a: float | None, n_b: float | None
) -> tuple[str, list[Cell]]:
    """A compared rate row; the z test when both counts are known."""
    diff = None if a is None or b is None else b - a
    cells = [Cell(label), Cell(pct(a), a), Cell(pct(b), b)]
    cells.append(Cell("–" if diff is None else f"{100 * diff:+.1f} pt", diff))
    if diff is None or not n_a or not n_b or n_a <= 0 or n_b <= 0:
        return key, [*cells, Cell("n/a"), Cell("n/a")]
    z = two_proportion_z(round(a * n_a), int(n_a), round(b * n_b), int(n_b))  # type: ignore[operator]
    outside = abs(z) > Z95
    return key, [*cells, Cell(f"{z:+.2f}", z), Cell("yes" if outside else "no", float(outside))]


def _value_row(key: str, a: float | None, b: float | None) -> tuple[str, list[Cell]]:
    diff = None if a is None or b is None else b - a
    return key, [Cell(key), Cell(num(a), a), Cell(num(b), b),
                 Cell("–" if diff is None else f"{diff:+.4g}", diff), Cell("n/a"), Cell("n/a")]  # fmt: skip


def overall_compare(a: RunData, b: RunData) -> Table | None:
    sa, sb = a.summary, b.summary
    if "success_rate" not in sa and "success_rate" not in sb:
        return None
    rows = [_rate_row("success_rate", "success rate", finite(sa.get("success_rate")),
                      finite(sb.get("success_rate")), finite(sa.get("n")), finite(sb.get("n")))]  # fmt: skip
    rows += at_k_compare(a, b, _rate_row)
    for key in sorted(set(sa) | set(sb)):
        if key in ("n", "success_rate", "success_ci_low", "success_ci_high", *_AT_K):
            continue
        va, vb = finite(sa.get(key)), finite(sb.get(key))
        if va is None and vb is None:
            continue
        if key.startswith("success/"):
            rows.append(_rate_row(key, key, va, vb, None, None))
        else:
            rows.append(_value_row(key, va, vb))
    return Table("compare-overall", "Overall (eval summaries)", COLUMNS, rows)


def stages_compare(a: RunData, b: RunData) -> Table | None:
    acc_a, acc_b = a.summary.get("accuracy"), b.summary.get("accuracy")
    if not isinstance(acc_a, dict) and not isinstance(acc_b, dict):
        return None
    acc_a, acc_b = (
        acc_a if isinstance(acc_a, dict) else {},
        acc_b if isinstance(acc_b, dict) else {},
    )
    n_a, n_b = finite(a.summary.get("eval_screens")), finite(b.summary.get("eval_screens"))
    stages = list(dict.fromkeys([*acc_a, *acc_b]))
    rows = [
        _rate_row(str(s), str(s), finite(acc_a.get(s)), finite(acc_b.get(s)), n_a, n_b)
        for s in stages
    ]
    return Table("compare-stages", "Held-out accuracy per stage (summary.json)", COLUMNS, rows)


def screenspot_compare(a: RunData, b: RunData) -> list[Table]:
    ta = (a.table or {}).get("tables") or {}
    tb = (b.table or {}).get("tables") or {}
    out = []
    for key in [k for k in ta if k in tb]:
        rows = []
        for name in ("row_totals", "col_totals"):
            da, db = ta[key].get(name) or {}, tb[key].get(name) or {}
            for r in [r for r in da if r in db]:
                ca, cb = da[r], db[r]
                rows.append(_rate_row(f"{name}:{r}", f"{r}", finite(ca.get("accuracy")),
                                      finite(cb.get("accuracy")), ca.get("n"), cb.get("n")))  # fmt: skip
        oa, ob = ta[key].get("overall") or {}, tb[key].get("overall") or {}
        rows.append(_rate_row("overall", "all (micro)", finite(oa.get("accuracy")),
                              finite(ob.get("accuracy")), oa.get("n"), ob.get("n")))  # fmt: skip
        out.append(Table(f"compare-screenspot-{key}", f"ScreenSpot: {key} (row and UI-type totals)",
                         COLUMNS, rows))  # fmt: skip
    return out


def compare_tables(a: RunData, b: RunData) -> list[Table]:
    """Every table both runs support, side by side."""
    out = [overall_compare(a, b), stages_compare(a, b)]
    out += [*category_compare(a, b, _rate_row, COLUMNS), *screenspot_compare(a, b)]
    return [t for t in out if t is not None]
