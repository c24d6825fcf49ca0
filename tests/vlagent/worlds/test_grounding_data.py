"""Your own grounding data in the grounding world: ``task.source=file`` configs, train / held-out
files, trajectory logs read back for rejection sampling, and ``vlagent train`` end to end."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pytest
import yaml
from PIL import Image

from vlagent.codec import Answer, ParseError
from vlagent.config import load_config
from vlagent.errors import ConfigError
from vlagent.eval.trajectory_log import write_trajectories_jsonl
from vlagent.models.loading import load_policy
from vlagent.rollout.trajectory import Trajectory, Turn
from vlagent.worlds import make_world

W, H = 160, 128
COLOURS = {"red": (220, 30, 30), "green": (30, 170, 60), "blue": (40, 60, 220)}
COLUMNS = {"image": "screenshot", "instruction": "text", "bbox": "box", "coords": "xyxy_px"}


def write_screens(folder, n=20, seed=0, name="data"):
    """n PNG screenshots (a target rectangle and a distractor of another colour) and their
    rows ``{"screenshot", "text", "box"}`` (box: xyxy pixels); returns the rows."""
    rng = np.random.default_rng(seed)
    (folder / "shots").mkdir(parents=True, exist_ok=True)
    rows = []
    names = list(COLOURS)
    for i in range(n):
        a = np.full((H, W, 3), 235, np.uint8)
        target, other = rng.choice(len(names), 2, replace=False)
        boxes = []
        for c in (target, other):
            w, h = rng.integers(20, 40, 2)
            x0, y0 = int(rng.integers(0, W - w)), int(rng.integers(0, H - h))
            a[y0 : y0 + h, x0 : x0 + w] = COLOURS[names[c]]
            boxes.append([x0, y0, x0 + int(w), y0 + int(h)])
        file = f"shots/{name}_{i}.png"
        Image.fromarray(a).save(folder / file)
        rows.append({"screenshot": file, "text": f"click the {names[target]} box", "box": boxes[0]})
    return rows


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _cfg(tmp_path, data, **over):
    items = [f"task.data.{k}={v}" for k, v in data.items()]
    return load_config(
        None,
        [
            "task.source=file",
            *items,
            *(f"{k}={v}" for k, v in over.items()),
            f"run.out_dir={tmp_path / 'run'}",
        ],
    )


# ---- config -----------------------------------------------------------------------------------


def test_file_source_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="task.data.path: required when task.source=file"):
        load_config(None, ["task.source=file"])
    with pytest.raises(
        ConfigError,
        match=r"task.data.preset: preset 'ss' is unknown; known: "
        r"android_control, gui_odyssey, gui_r1, screenspot_pro",
    ):
        load_config(None, ["task.source=file", "task.data.path=x.jsonl", "task.data.preset=ss"])
    with pytest.raises(ConfigError, match="task.data.columns.coords: Input should be"):
        load_config(None, ["task.data.columns={coords: px}"])
    with pytest.raises(ConfigError, match="task.data.format: 'csv' is unknown"):
        load_config(None, ["task.data.format=csv"])
    with pytest.raises(ConfigError, match="task.data.success_only: needs a success column"):
        load_config(None, ["task.data.success_only=true"])
    with pytest.raises(ConfigError, match=r"task.data.point_radius: must be in \(0, 0.5\]"):
        load_config(None, ["task.data.point_radius=0"])
    with pytest.raises(
        ConfigError, match="task.source: 'files' is unknown; use synthetic, screenspot or file"
    ):
        load_config(None, ["task.source=files"])
    cfg = load_config(
        None,
        [
            "task.source=file",
            "task.data.path=x.jsonl",
            "task.data.preset=vlagent_trajectory",
            "task.data.min_reward=0.5",
            "task.data.demo_text=recorded",
        ],
    )
    assert cfg.task.data.min_reward == 0.5 and cfg.task.data.mapping().demo_text == "completion"


# ---- the world --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return load_policy(tiny_dir)


def test_world_reads_train_and_heldout_files(tmp_path, policy):
    train = write_jsonl(tmp_path / "train.jsonl", write_screens(tmp_path, 20))
    held_rows = write_screens(tmp_path, 5, seed=1, name="held")
    held = write_jsonl(tmp_path / "heldout.jsonl", held_rows)
    cfg = _cfg(tmp_path, {"path": train, "eval_path": held, "columns": json.dumps(COLUMNS)})
    world = make_world(cfg, policy)
    assert world.num_tasks("train") == world.num_tasks("demo") == 20
    assert world.num_tasks("val") == world.num_tasks("test") == 5
    assert world.task_ids("train", 19, 2) == [19, 0]
    ids = world.task_ids("test", 0, 7)
    assert ids == [f"heldout:{i % 5}" for i in range(7)]
    env = world.make_env("test")
    obs, info = env.reset(options={"task_id": ids[1]})
    assert obs["instruction"] == held_rows[1]["text"]
    x0, y0, x1, y1 = held_rows[1]["box"]
    assert info["target_box_norm"] == pytest.approx((x0 / W, y0 / H, x1 / W, y1 / H))
    assert world.sample(ids[1]).instruction == held_rows[1]["text"]
    assert np.array_equal(world.sample(ids[1]).image, obs["image"])
    obs, _ = world.make_env("train").reset(options={"task_id": 1})
    assert obs["instruction"] == json.loads(train.read_text().splitlines()[1])["text"]
    assert 0 < world.baselines(ids)["random_click"] < 0.2


def test_heldout_file_with_the_same_name_gets_its_own_ids(tmp_path, policy):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    train = write_jsonl(tmp_path / "a" / "data.jsonl", write_screens(tmp_path / "a", 3))
    held_rows = write_screens(tmp_path / "b", 2, seed=5)
    held = write_jsonl(tmp_path / "b" / "data.jsonl", held_rows)
    cfg = _cfg(tmp_path, {"path": train, "eval_path": held, "columns": json.dumps(COLUMNS)})
    world = make_world(cfg, policy)
    assert world.task_ids("val", 0, 2) == ["data_eval:0", "data_eval:1"]
    obs, _ = world.make_env("val").reset(options={"task_id": "data_eval:1"})
    assert obs["instruction"] == held_rows[1]["text"]


def test_without_eval_path_heldout_reuses_train_and_warns(tmp_path, policy, caplog):
    train = write_jsonl(tmp_path / "train.jsonl", write_screens(tmp_path, 4))
    cfg = _cfg(tmp_path, {"path": train, "columns": json.dumps(COLUMNS)})
    with caplog.at_level(logging.WARNING, logger="vlagent.worlds.grounding"):
        world = make_world(cfg, policy)
    assert any("task.data.eval_path is not set" in r.getMessage() for r in caplog.records)
    assert world.task_ids("val", 0, 5) == [0, 1, 2, 3, 0]
    assert world.num_tasks("test") == 4


# ---- trajectory logs --------------------------------------------------------------------------


def _episode(task_id, image, box, text, reward, success, error=None):
    answer = Answer((0.5, 0.5), None, text) if success else ParseError("no json", text)
    return Trajectory(
        task_id=task_id,
        turns=[Turn(0, 0, 3, text, reward=reward, reward_terms={"point_in_box": reward})],
        instruction=f"click {task_id}",
        status="terminated",
        success=success,
        error=error,
        info={"sample_id": f"data:{task_id}", "meta": {"action_type": "click", "row": task_id}},
        extras={"image": image, "target_box_norm": box, "answer": answer},
    )


def test_trajectory_log_round_trip_and_filters(tmp_path):
    imgs = [np.full((H, W, 3), v, np.uint8) for v in (10, 120, 250)]
    for i, a in enumerate(imgs):
        a[10 + i : 30, 20:50] = (200, 30, 30)
    box = (0.125, 0.078125, 0.3125, 0.234375)
    trajs = [
        _episode(0, imgs[0], box, '{"point_2d": [1, 2]}', 1.0, True),
        _episode(1, imgs[0], box, "no answer", 0.0, False),  # same screen: one PNG
        _episode(2, imgs[1], box, '{"point_2d": [3, 4]}', 0.6, True),
        _episode(3, imgs[2], box, "crash", math.nan, False, error="backend died"),  # left out
        _episode(4, imgs[2], box, '{"point_2d": [5, 6]}', math.nan, True),
    ]
    log = tmp_path / "logs" / "rollouts.jsonl"
    assert write_trajectories_jsonl(trajs, log, tmp_path / "logs" / "images") == 4
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["task_id"] for r in lines] == [0, 1, 2, 4]
    assert lines[0]["image"] == lines[1]["image"] != lines[2]["image"]
    assert lines[0]["image"].startswith("images/") and (log.parent / lines[0]["image"]).is_file()
    assert len(list((log.parent / "images").iterdir())) == 3  # no temp files left behind
    assert lines[0]["point_norm"] == [0.5, 0.5] and lines[1]["parse_error"] == "no json"
    assert lines[3]["reward"] is None and lines[3]["reward_terms"] == {"point_in_box": None}
    assert lines[0]["meta"] == {"action_type": "click", "row": 0}

    from gui.grounding import DatasetSource

    src = DatasetSource(log, preset="vlagent_trajectory")
    assert src.num_samples == 4
    s = src.sample(2)
    assert np.array_equal(s.image, imgs[1]) and s.instruction == "click 2"
    assert s.target_box_norm == pytest.approx(box)
    assert s.meta["demo_text"] == '{"point_2d": [3, 4]}' and s.meta["action_type"] == "click"
    assert s.meta["id"] == "data:2" and s.meta["recorded_reward"] == 0.6
    ok = DatasetSource(log, preset="vlagent_trajectory", success_only=True)
    assert [ok.sample(k).meta["id"] for k in range(ok.num_samples)] == [
        "data:0",
        "data:2",
        "data:4",
    ]
    best = DatasetSource(log, preset="vlagent_trajectory", min_reward=0.5)
    assert [best.sample(k).meta["id"] for k in range(best.num_samples)] == ["data:0", "data:2"]
    assert best.report()["filtered"] == 2  # reward 0.0 and a NaN reward


def test_recorded_demo_text_replays_the_log(tmp_path, policy):
    """demo_text=recorded: SFT demonstrations say the logged completion, not the target."""
    from vlagent.rollout.tokens import PromptCache
    from vlagent.train.sft import demonstrations

    rows = write_screens(tmp_path, 4)
    cfg = _cfg(
        tmp_path, {"path": write_jsonl(tmp_path / "d.jsonl", rows), "columns": json.dumps(COLUMNS)}
    )
    world = make_world(cfg, policy)
    prompts = PromptCache(policy.processor)
    trajs, recorded = [], []
    for k in range(4):
        s = world.sample(k)
        x0, y0, x1, y1 = s.target_box_norm
        px, py = x0 + 0.2 * (x1 - x0), y0 + 0.7 * (y1 - y0)  # inside, off centre
        frame = prompts.get([s.image], s.instruction, None).frame
        text = world.codec.render((px - 1e-4, py - 1e-4, px + 1e-4, py + 1e-4), frame)
        assert text != world.codec.render(s.target_box_norm, frame)
        recorded.append(text)
        t = _episode(k, s.image, s.target_box_norm, text, 1.0, True)
        t.instruction = s.instruction
        trajs.append(t)
    log = tmp_path / "log.jsonl"
    write_trajectories_jsonl(trajs, log, tmp_path / "log_images")
    for mode, want in (("recorded", recorded), ("target", None)):
        cfg = _cfg(tmp_path, {"path": log, "preset": "vlagent_trajectory", "demo_text": mode})
        replay = make_world(cfg, policy)
        demos = demonstrations(policy, replay, [0, 1, 2, 3])
        assert len(demos) == 4 and all(d.success for d in demos)
        texts = [d.turns[0].text for d in demos]
        if want is not None:
            assert texts == want
        else:
            assert all(a != b for a, b in zip(texts, recorded, strict=True))


def test_real_rollouts_write_and_read_back(tmp_path, policy):
    from gui.grounding import DatasetSource
    from vlagent.rollout.runner import group_specs, run_episodes

    rows = write_screens(tmp_path, 3)
    cfg = _cfg(
        tmp_path, {"path": write_jsonl(tmp_path / "d.jsonl", rows), "columns": json.dumps(COLUMNS)}
    )
    world = make_world(cfg, policy)
    trajs = run_episodes(
        policy,
        world.adapter(),
        lambda: world.make_env("train"),
        group_specs([0, 1, 2], 2),
        world.limits(8),
        seed=0,
    )
    log = tmp_path / "out" / "r.jsonl"
    assert write_trajectories_jsonl(trajs, log, tmp_path / "out" / "img") == 6
    back = DatasetSource(log, preset="vlagent_trajectory")
    for k, t in enumerate(trajs):
        s = back.sample(k)
        assert np.array_equal(s.image, world.sample(t.task_id).image)
        assert s.target_box_norm == pytest.approx(world.sample(t.task_id).target_box_norm)
        assert s.meta["demo_text"] == t.turns[0].text or not t.turns[0].text.strip()


# ---- vlagent train end to end -----------------------------------------------------------------


def _train(tmp_path, tiny_dir, data, name, recipe, model=None, steps=2):
    """``vlagent train --config <yaml>``: the YAML names the model and the data, little else."""
    from vlagent.cli import main
    from vlagent.train.outputs import read_metrics

    out = tmp_path / name
    cfg = {
        "recipe": recipe,
        "model": {"path": str(model or tiny_dir), "build_tiny": False},
        "task": {"source": "file", "data": data},
        "sft": {"steps": steps, "batch_size": 4, "num_demos": 8},
        "grpo": {"steps": steps, "prompts_per_step": 2, "group_size": 2, "max_new_tokens": 12},
        "eval": {
            "every": 0,
            "num_screens": 4,
            "monitor_screens": 2,
            "max_new_tokens": 12,
            "rollout_pictures": 0,
        },
        "run": {
            "out_dir": str(out),
            "progress": False,
            "samples_every": 0,
            "checkpoint_every": 0,
            "threads": 1,
        },
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["train", "--config", str(path)]) == 0
    rows = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in rows if "loss" in r][-1] == steps
    assert (out / "final").is_dir()
    assert "source: file" in (out / "config.yaml").read_text()
    return out


def test_train_sft_then_grpo_on_a_jsonl(tmp_path, tiny_dir):
    rows = write_screens(tmp_path, 20)
    data = {"path": str(write_jsonl(tmp_path / "shots.jsonl", rows)), "columns": COLUMNS}
    sft = _train(tmp_path, tiny_dir, data, "sft", "sft", steps=3)
    _train(tmp_path, tiny_dir, data, "grpo", "grpo", model=sft / "final", steps=2)


def test_train_on_a_datasets_folder(tmp_path, tiny_dir):
    from datasets import Dataset
    from datasets import Image as HFImage

    rows = write_screens(tmp_path, 20)
    ds = Dataset.from_dict(
        {
            "image": [str(tmp_path / r["screenshot"]) for r in rows],
            "instruction": [r["text"] for r in rows],
            "bbox": [r["box"] for r in rows],
        }
    ).cast_column("image", HFImage())
    ds.save_to_disk(str(tmp_path / "hf"))
    for r in rows:  # the folder holds the image bytes; the PNG files are not needed
        (tmp_path / r["screenshot"]).unlink()
    data = {"path": str(tmp_path / "hf"), "columns": {"coords": "xyxy_px"}}
    sft = _train(tmp_path, tiny_dir, data, "sft", "sft", steps=2)
    _train(tmp_path, tiny_dir, data, "grpo", "grpo", model=sft / "final", steps=1)
