"""Write a report folder (``index.html`` + ``assets/img/``) for one run, or a comparison of two.

The folder is built in a temp folder beside ``out_dir`` and swapped in with ``os.replace``
(:func:`vlagent.io.atomic_dir`): a reader sees the old report or the new one, never a mix.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from vlagent.errors import VlagentError
from vlagent.eval.report.categories import category_bars, report_tables
from vlagent.eval.report.compare import compare_tables
from vlagent.eval.report.episodes import MAX_EPISODES, collect
from vlagent.eval.report.load import RunData, load_run
from vlagent.eval.report.page import (
    bars_html,
    curves_html,
    gallery_html,
    page,
    table_html,
    viewer_html,
)
from vlagent.eval.report.tables import category_rates, reward_terms
from vlagent.io import atomic_dir, atomic_write_text


def _load(run_dir: str | Path, extra: tuple[Path, ...] = ()) -> RunData:
    try:
        return load_run(run_dir, extra)
    except FileNotFoundError as exc:
        raise VlagentError(f"report: {exc}") from exc


def _bars(data: RunData) -> dict[str, dict[str, float]]:
    cats = category_bars(data)
    bars = cats or {"success rate per task / app": category_rates(data)}
    for key, t in ((data.table or {}).get("tables") or {}).items():
        totals = t.get("row_totals") if isinstance(t, dict) else None
        if isinstance(totals, dict):
            bars[f"accuracy per {key}"] = {
                str(r): float(c["accuracy"])
                for r, c in totals.items()
                if isinstance(c, dict) and isinstance(c.get("accuracy"), (int, float))
            }
    acc = data.summary.get("accuracy")
    if isinstance(acc, dict):
        bars["accuracy per stage"] = {
            str(k): float(v) for k, v in acc.items() if isinstance(v, (int, float))
        }
    bars["reward terms (mean per episode)"] = reward_terms(data.summary)
    return bars


def write_report(
    run_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    extra_sample_dirs: tuple[Path, ...] = (),
    max_episodes: int = MAX_EPISODES,
) -> Path:
    """Write the HTML report of a run or evaluation folder.

    Args:
        run_dir: an eval ``--out`` folder, a training run folder or a quickstart root.
        out_dir: the report folder (default ``<run_dir>/report``); replaced whole.
        extra_sample_dirs: more picture folders to read like ``samples/`` (e.g. the eval's
            ``--pictures-dir``).
        max_episodes: episodes the viewer holds at most.

    Returns:
        The path of ``index.html``.

    Raises:
        VlagentError: ``run_dir`` is not a folder. Damaged or missing files inside it do not
            raise: the report lists them under "Problems".
    """
    data = _load(run_dir, tuple(Path(p) for p in extra_sample_dirs))
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "report"
    with atomic_dir(out) as tmp:
        episodes, gallery = collect(data, tmp, max_episodes)
        tables = "".join(table_html(t) for t in report_tables(data))
        sections = [
            (
                "Summary",
                (tables or '<p class="note">No summary tables.</p>') + bars_html(_bars(data)),
            ),
            ("Learning curves", curves_html(data.metrics)),
            (f"Trajectories ({len(episodes)})", viewer_html(episodes) + gallery_html(gallery)),
        ]
        html = page(f"vlagent report: {Path(run_dir).resolve().name}", sections, data.problems)
        atomic_write_text(tmp / "index.html", html)
    return out / "index.html"


def write_compare(run_a: str | Path, run_b: str | Path, out_dir: str | Path) -> Path:
    """Write a side-by-side report of two runs (A, B, B − A, z, outside 95 %).

    Returns:
        The path of ``index.html`` in ``out_dir``.
    """
    a, b = _load(run_a), _load(run_b)
    for tag, d in (("A", a), ("B", b)):
        for p in d.problems:
            p.file = f"{tag}: {p.file}"
    tables = compare_tables(a, b)
    names = f"A = {escape(str(Path(run_a).resolve()))}<br>B = {escape(str(Path(run_b).resolve()))}"
    test = (
        '<p class="note">"outside 95 %": a pooled two-proportion z test of B − A, two-sided at '
        "95 % (|z| &gt; 1.96); n/a where a rate has no stored count.</p>"
    )
    body = "".join(table_html(t) for t in tables) or '<p class="note">Nothing to compare.</p>'
    with atomic_dir(out_dir) as tmp:
        html = page(
            f"vlagent compare: {Path(run_a).resolve().name} vs {Path(run_b).resolve().name}",
            [("Runs", f"<p>{names}</p>{test}"), ("Side by side", body)],
            [*a.problems, *b.problems],
        )
        atomic_write_text(tmp / "index.html", html)
    return Path(out_dir) / "index.html"
