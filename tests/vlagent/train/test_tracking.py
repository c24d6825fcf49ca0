"""run.report_to: metrics.jsonl, TensorBoard and W&B (offline) hold the same names and values at
the same steps; a resumed run continues its W&B run; bad or unavailable sinks fail up front.

W&B is read back from its offline transaction log (``wandb/offline-run-*/run-*.wandb``): the
Python reader of that file left the wandb package, so ``wandb_records`` below reads the
documented LevelDB-log framing and parses each record with wandb's own protobuf schema.
"""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path

import pytest

from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.train.outputs import MetricsLogger, WandbSettings, read_metrics
from vlagent.train.sft import run_sft

_BLOCK, _HEADER = 32768, 7  # LevelDB log block size; wandb's file header and record header


def wandb_records(path: Path) -> list:
    """The protobuf ``Record``s of a W&B transaction log (``run-<id>.wandb``).

    Layout: a 7-byte header (``:W&B``, magic, version), then LevelDB-log records (crc32 u32,
    length u16, type u8: 1 full, 2 first, 3 middle, 4 last) in 32 KiB blocks.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B transaction log"
    out, pos, buf = [], _HEADER, b""
    while pos + _HEADER <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER:  # block trailer too small for a header: zero padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + _HEADER])
        if kind == 0:
            pos += left
            continue
        buf += data[pos + _HEADER : pos + _HEADER + length]
        pos += _HEADER + length
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(buf)
            out.append(rec)
            buf = b""
    return out


def wandb_runs(run_dir: Path) -> list[list]:
    """The records of every offline W&B run folder under ``run_dir/wandb``, oldest first."""
    files = sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))
    return [wandb_records(f) for f in files]


def wandb_history(records: list) -> dict[int, dict[str, float]]:
    """{step: {key: value}} of the logged rows (W&B's own ``_step``, ``_runtime`` ... dropped)."""
    out: dict[int, dict[str, float]] = {}
    for r in records:
        if r.WhichOneof("record_type") == "history":
            row = out.setdefault(r.history.step.num, {})
            for item in r.history.item:
                key = item.key or "/".join(item.nested_key)
                if not key.startswith("_"):
                    row[key] = json.loads(item.value_json)
    return out


def wandb_run_record(records: list):
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    return run


def tb_scalars(log_dir: Path) -> dict[int, dict[str, float]]:
    """{step: {tag: value}} of the scalar events in ``log_dir``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    out: dict[int, dict[str, float]] = {}
    for tag in acc.Tags()["scalars"]:
        for ev in acc.Scalars(tag):
            out.setdefault(ev.step, {})[tag] = ev.value
    return out


def jsonl_scalars(path: Path, phase: str) -> dict[int, dict[str, float]]:
    """{step: {<phase>/<name>: value}} of metrics.jsonl (null values dropped, as the others do)."""
    return {
        r["step"]: {
            f"{phase}/{k}": v
            for k, v in r.items()
            if k not in ("phase", "step", "time") and v is not None
        }
        for r in read_metrics(path, phase)
    }


def _sft_cfg(out: Path, tiny_dir: Path, sinks: str, steps: int = 2, extra=()):
    return load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={out}",
            "recipe=sft",
            f"sft.steps={steps}",
            "sft.num_demos=2",
            "sft.batch_size=2",
            "eval.every=1",
            "eval.monitor_screens=2",
            "eval.max_new_tokens=8",
            "eval.rollout_pictures=0",
            "run.progress=false",
            "run.samples_every=0",
            "run.checkpoint_every=0",
            f"run.report_to={sinks}",
            *extra,
        ],
    )


def test_jsonl_tensorboard_and_wandb_hold_the_same_metrics(tmp_path, tiny_dir, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    out = tmp_path / "tracked"
    run_sft(_sft_cfg(out, tiny_dir, "[jsonl,tensorboard,wandb]", extra=["run.wandb_project=t"]))

    want = jsonl_scalars(out / "metrics.jsonl", "sft")
    assert sorted(want) == [1, 2]
    names = set(want[1])
    assert {"sft/loss", "sft/grad_norm", "sft/val/success_rate"} <= names, names
    assert len(names) > 10 and set(want[2]) == names

    tb = tb_scalars(out / "tb" / "sft")
    assert sorted(tb) == sorted(want) and all(set(tb[s]) == set(want[s]) for s in want)
    for s in want:
        for k, v in want[s].items():  # TensorBoard stores float32
            assert tb[s][k] == pytest.approx(v, rel=1e-6, abs=1e-6), (s, k)

    (records,) = wandb_runs(out)
    assert wandb_history(records) == want  # same names, same steps, same float64 values
    run = wandb_run_record(records)
    assert run.run_id == (out / "wandb" / "sft.run_id").read_text().strip()
    assert run.project == "t" and run.display_name == "tracked"
    config = {u.key: json.loads(u.value_json) for u in run.config.update}
    assert config["sft"]["steps"] == 2 and config["run"]["report_to"] == [
        "jsonl",
        "tensorboard",
        "wandb",
    ]


def _logger(run_dir: Path, resume_step=None, sinks=("jsonl", "tensorboard", "wandb")):
    settings = WandbSettings(project="p", name="n", mode="offline", config={"a": 1})
    return MetricsLogger(run_dir, "grpo", resume_step, sinks, settings)


def test_non_finite_values_are_null_in_jsonl_and_absent_elsewhere(tmp_path):
    pytest.importorskip("wandb")
    m = _logger(tmp_path)
    m.log(1, {"loss": 0.25, "kl": math.nan, "reward/mean": -1.0})
    m.close()
    (row,) = read_metrics(tmp_path / "metrics.jsonl")
    assert row["kl"] is None and row["loss"] == 0.25 and row["reward/mean"] == -1.0
    expect = {1: {"grpo/loss": 0.25, "grpo/reward/mean": -1.0}}
    assert tb_scalars(tmp_path / "tb" / "grpo") == expect
    (records,) = wandb_runs(tmp_path)
    assert wandb_history(records) == expect


def test_resumed_run_continues_the_same_wandb_run(tmp_path):
    """A resume (checkpoint step 2, a crash after step 3) logs into the stored W&B id; a fresh
    start in the folder (resume_step=None) opens a new W&B run."""
    pytest.importorskip("wandb")
    first = _logger(tmp_path)
    for step in (1, 2, 3):
        first.log(step, {"loss": float(step)})
    first.close()
    run_id = (tmp_path / "wandb" / "grpo.run_id").read_text().strip()

    resumed = _logger(tmp_path, resume_step=2)
    for step in (3, 4):
        resumed.log(step, {"loss": 10.0 * step})
    resumed.close()
    a, b = wandb_runs(tmp_path)
    assert wandb_run_record(a).run_id == wandb_run_record(b).run_id == run_id
    assert wandb_history(b) == {3: {"grpo/loss": 30.0}, 4: {"grpo/loss": 40.0}}
    steps = [(r["step"], r["loss"]) for r in read_metrics(tmp_path / "metrics.jsonl")]
    assert steps == [(1, 1.0), (2, 2.0), (3, 30.0), (4, 40.0)]  # step 3's orphan dropped

    _logger(tmp_path).close()
    assert (tmp_path / "wandb" / "grpo.run_id").read_text().strip() != run_id


def test_unknown_sink_and_mode_name_the_field():
    with pytest.raises(ConfigError, match=r"run\.report_to: unknown 'mlflow'.*tensorboard"):
        load_config(None, ["run.report_to=[tensorboard,mlflow]"])
    with pytest.raises(ConfigError, match=r"run\.wandb_mode: 'cloud' is unknown"):
        load_config(None, ["run.wandb_mode=cloud"])
    assert load_config(None).run.report_to == ["tensorboard", "jsonl"]


def test_tensorboard_only_writes_no_wandb_folder(tmp_path, tiny_dir):
    out = tmp_path / "tb_only"
    run_sft(_sft_cfg(out, tiny_dir, "[tensorboard]", steps=1))
    assert not (out / "wandb").exists()
    assert list((out / "tb" / "sft").glob("events.out.tfevents.*"))
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [1]  # JSONL always
    # [] = JSONL only
    (tmp_path / "bare").mkdir()
    _logger(tmp_path / "bare", sinks=()).close()
    assert sorted(p.name for p in (tmp_path / "bare").iterdir()) == ["metrics.jsonl"]


def test_missing_wandb_package_is_a_config_error_before_any_work(tmp_path, tiny_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError
    out = tmp_path / "no_wandb"
    with pytest.raises(ConfigError, match=r"pip install 'vlagent\[track\]'"):
        run_sft(_sft_cfg(out, tiny_dir, "[tensorboard,wandb]", steps=1))
    assert not out.exists()


def test_online_without_login_is_a_config_error(tmp_path, monkeypatch):
    """Real wandb, online mode, no API key anywhere (HOME without a .netrc), a W&B server
    address where nothing listens: the set-up fails up front with a message saying what to do."""
    pytest.importorskip("wandb")
    for var in ("WANDB_API_KEY", "WANDB_MODE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
    settings = WandbSettings(project="p", name="n", mode="online", config={})
    with pytest.raises(
        ConfigError, match=r"wandb\.init failed in mode 'online'.*wandb_mode=offline"
    ):
        MetricsLogger(tmp_path, "grpo", None, ["wandb"], settings)
