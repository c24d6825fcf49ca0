"""The time-to-threshold plot reads each run's curve as (training seconds, accuracy %)."""

from __future__ import annotations

from bench.plot_ttt import curves, plot

REPORT = {
    "label": "bench",
    "time_to_threshold": {
        "threshold": 0.3,
        "ours": {
            "runs": [
                {
                    "curve": [
                        {"train_seconds": 10.0, "accuracy": 0.2},
                        {"train_seconds": 20.0, "accuracy": 0.35},
                    ]
                }
            ]
        },
        "trl": {"runs": [{"curve": [{"train_seconds": 60.0, "accuracy": 0.25}]}, {"curve": []}]},
    },
}


def test_curves_keep_runs_apart_and_scale_to_percent():
    c = curves(REPORT)
    assert c["ours"] == [[(10.0, 20.0), (20.0, 35.0)]]
    assert c["trl"] == [[(60.0, 25.0)], []]


def test_plot_writes_a_png(tmp_path):
    out = plot(REPORT, tmp_path / "img" / "ttt.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
