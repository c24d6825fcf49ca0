"""World ``apps``: multi-step tasks on the synthetic phone OS (``gui.apps.PhoneEnv``).

Env: ``PhoneEnv`` under ``TaskBudgetLimit`` (each task's step budget), with its own reward
terms (``apps.reward``: success, invalid_action) — the trainer reads them from
``info["reward_terms"]`` and never recomputes them. Adapter: each turn re-prompts (a new
segment) with the last ``apps.keep_images`` screenshots and the earlier actions as text, e.g.::

    Task: Turn on Wi-Fi.
    Previous actions: 1. open_app Settings
    The last image is the current screen. Reply with one JSON action.

The reply is parsed by the GUI action codec (points in the model's space of the current
screenshot → normalized) into the env's action mapping; text that does not parse becomes an
``invalid`` action, which the env scores as invalid. Every group member resets to the task's own
start state, so turn prompts repeat within a group (shared prefills).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gui.actions import InvalidAction, parse_action
from vlagent.codec.gui_actions import GuiActionCodec, render_history_action
from vlagent.rollout.runner import Decision
from vlagent.rollout.tokens import PromptCache
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.world_config import AppsConfig, TurnPromptConfig
from vlagent.worlds.base import Split, World, save_episode_record

SYSTEM_PROMPT = (
    "You operate a phone. Each turn, answer with one JSON action, e.g. "
    '{"action_type":"click","x":500,"y":170}, {"action_type":"open_app","app_name":"Settings"}'
    ' or {"action_type":"status","goal_status":"complete"}. Coordinates are in [0, 1000).'
)


def resize_screen(image: np.ndarray, cfg: TurnPromptConfig) -> np.ndarray:
    """The screenshot at the configured size (uint8 (h, w, 3)); unchanged when a side is 0."""
    if not cfg.screen_width or not cfg.screen_height:
        return np.asarray(image, dtype=np.uint8)
    from PIL import Image

    pil = Image.fromarray(np.asarray(image, dtype=np.uint8))
    return np.asarray(pil.resize((cfg.screen_width, cfg.screen_height), Image.BILINEAR))


def turn_text(instruction: str, past_actions: Sequence[str], cfg: TurnPromptConfig) -> str:
    """The user text of a turn: instruction, the most recent past actions, the request."""
    shown = list(past_actions)[-cfg.max_text_turns :] if cfg.max_text_turns else []
    first = len(past_actions) - len(shown) + 1
    listed = "; ".join(f"{first + i}. {a}" for i, a in enumerate(shown)) or "none"
    return (
        f"Task: {instruction}\nPrevious actions: {listed}\n"
        "The last image is the current screen. Reply with one JSON action."
    )


def element_boxes(obs: dict[str, Any]) -> list[tuple[float, float, float, float]] | None:
    """Normalized boxes of the observation's a11y elements (for AndroidWorld ``index``)."""
    from gui.apps.oracle import parse_a11y

    text = obs.get("a11y")
    if not isinstance(text, str):
        return None
    try:
        _, elements = parse_a11y(text)
    except ValueError:
        return None
    return [tuple(e.box) for e in elements if len(e.box) == 4]  # type: ignore[misc]


class AppsAdapter:
    """Screens + history text → a fresh prompt each turn; reply → a GUI action.

    ``cfg`` is a ``TurnPromptConfig`` section (``apps``, ``desktop``, ``web``): the desktop and
    web worlds reuse this adapter with their own sections and system prompts."""

    def __init__(
        self,
        processor: Any,
        codec: GuiActionCodec,
        cfg: TurnPromptConfig,
        system: str = SYSTEM_PROMPT,
    ) -> None:
        self.prompts = PromptCache(processor)
        self.codec, self.cfg, self.system = codec, cfg, system

    def _prompt(self, traj: Trajectory) -> None:
        x = traj.extras
        images = x["screens"][-self.cfg.keep_images :]
        text = turn_text(traj.instruction, x["past"], self.cfg)
        traj.segments.append(Segment(self.prompts.get(images, text, self.system)))

    def start(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        traj.extras.update(screens=[resize_screen(obs["image"], self.cfg)], past=[], obs=obs)
        traj.extras["template"] = str(info.get("template", ""))
        self._prompt(traj)

    def read(self, traj: Trajectory, turn: Turn, last: bool) -> Decision:
        action = self.codec.parse(
            turn.text, traj.segment.prompt.frame, element_boxes(traj.extras["obs"])
        )
        traj.extras["past"].append(render_history_action(action))
        if isinstance(action, InvalidAction):
            return Decision("env", {"type": "invalid", "reason": action.reason})
        return Decision("env", action.to_dict())

    def observe(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        traj.extras["screens"].append(resize_screen(obs["image"], self.cfg))
        traj.extras["obs"] = obs
        self._prompt(traj)

    def finish(self, trajectories: Sequence[Trajectory]) -> None:
        for t in trajectories:
            t.extras.pop("obs", None)  # full-size screenshot: not kept past the episode


class ActDemonstrator:
    """A scripted GUI policy per episode plays it: ``make(traj)`` builds the script, whose
    ``act(x)`` returns an action mapping for ``x = read(obs, info)``; the action is rendered as
    text by the codec, so it goes through the same adapter (parse → env action) as the
    policy's turns. The apps, desktop and web worlds differ only in ``make`` and ``read``."""

    def __init__(
        self,
        codec: GuiActionCodec,
        make: Callable[[Trajectory], Any],
        read: Callable[[dict[str, Any], dict[str, Any]], Any] = lambda obs, info: obs,
    ) -> None:
        self.codec, self.make, self.read = codec, make, read
        self._scripts: dict[int, Any] = {}

    def text(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> str | None:
        key = id(traj)
        if key not in self._scripts:
            self._scripts[key] = self.make(traj)
        mapping = self._scripts[key].act(self.read(obs, info))
        return self.codec.render(parse_action(mapping), traj.segment.prompt.frame)


def format_rate(trajectories: Sequence[Trajectory]) -> float:
    """Share of turns whose reply parsed into an action."""
    turns = [x for t in trajectories for x in t.turns]
    ok = sum(not (isinstance(x.action, dict) and x.action.get("type") == "invalid") for x in turns)
    return ok / max(len(turns), 1)


def success_by(
    trajectories: Sequence[Trajectory], key: Callable[[Trajectory], str]
) -> dict[str, float]:
    """``success/<key>``: the success rate per group of episodes."""
    by: dict[str, list[bool]] = {}
    for t in trajectories:
        by.setdefault(key(t), []).append(t.success)
    return {f"success/{k}": sum(v) / len(v) for k, v in sorted(by.items())}


def save_turn_pictures(
    trajectories: Sequence[Trajectory], folder: Path, name: str, cols: int = 0
) -> None:
    """Per episode: its screens tiled (``cols`` per row; 0: one row) with each turn's action
    drawn, and a JSON record of the turns (text, action, reward terms)."""
    from perception_tools.annotate import tile_images
    from vlagent.viz import save_png

    for k, t in enumerate(trajectories):
        screens = t.extras.get("screens", [])
        tiles = [
            annotate_turn(sc, x, i) for i, (sc, x) in enumerate(zip(screens, t.turns, strict=False))
        ]
        if not tiles:
            continue
        save_png(tile_images(tiles, cols=cols or len(tiles)), Path(folder) / f"{name}_{k:02d}.png")
        save_episode_record(
            t, Path(folder) / f"{name}_{k:02d}.json", ("text", "action", "reward_terms")
        )


class AppsWorld(World):
    """Phone tasks from ``apps.train_suite`` (train, demo) and ``apps.eval_suite`` (val, test)."""

    default_max_turns = 20

    def __init__(self, cfg: Any, policy: Any) -> None:
        super().__init__(cfg, policy)
        from gui.apps.suite import load_suites, parse_suite
        from vlagent.worlds.apps_tasks import GENERATED_SUITES

        a: AppsConfig = cfg.apps
        self._suites = {}
        for name, value, half in (("train", a.train_suite, 0), ("eval", a.eval_suite, 1)):
            if value in GENERATED_SUITES:
                generated = GENERATED_SUITES[value](a.train_seeds, a.heldout_seeds)[half]
                self._suites[name] = parse_suite(generated, f"{value}:{name}")
            else:
                self._suites[name] = load_suites(value)
        self.codec = GuiActionCodec.for_family(policy.family, style="json")

    def suite(self, split: Split) -> Any:
        """The task suite of ``split`` (train and demo: the training suite)."""
        return self._suites["train" if split in ("train", "demo") else "eval"]

    def task(self, task_id: str) -> Any:
        """The task ``task_id`` of the training or the held-out suite."""
        train = self.suite("train")
        return train.get(task_id) if task_id in train.ids else self.suite("test").get(task_id)

    def make_env(self, split: Split) -> Any:
        from gui.apps.env import PhoneEnv, TaskBudgetLimit

        return TaskBudgetLimit(PhoneEnv(self.suite(split), reward=dict(self.cfg.apps.reward)))

    def adapter(self) -> AppsAdapter:
        return AppsAdapter(self.policy.processor, self.codec, self.cfg.apps)

    def demonstrator(self) -> ActDemonstrator:
        """The ``gui.apps`` oracle (``gui.apps.evaluate.POLICIES``) plays each episode."""
        from gui.apps.evaluate import POLICIES

        return ActDemonstrator(
            self.codec, lambda t: POLICIES["oracle"](self.task(t.task_id), t.seed)
        )

    def num_tasks(self, split: Split) -> int | None:
        return len(self.suite(split).ids)

    def task_ids(self, split: Split, start: int, count: int) -> list[Any]:
        ids = self.suite(split).ids
        return [ids[i % len(ids)] for i in range(start, start + count)]

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """Success per task template and the rate of turns that parsed into an action."""
        return {
            "format_rate": format_rate(trajectories),
            **success_by(trajectories, lambda t: t.extras.get("template", "?")),
        }

    def categories(self, traj: Trajectory) -> dict[str, str]:
        """The episode's task template (``set_toggles``, ``add_contact`` …)."""
        return {"template": str(traj.extras.get("template") or "?")}

    def save_pictures(self, trajectories: Sequence[Trajectory], folder: Path, name: str) -> None:
        """Per episode: its screens side by side with each turn's action drawn, and a JSON
        record of the turns (text, action, reward terms)."""
        save_turn_pictures(trajectories, folder, name)


def annotate_turn(image: np.ndarray, turn: Turn, index: int) -> np.ndarray:
    """Copy of a screenshot (uint8 (H, W, 3)) with the turn's action drawn and captioned.

    Returns:
        ``uint8 (H + 28, W, 3)``: a point as a red crosshair (normalized → pixels), a swipe as
        a line, and a two-line caption (step and action; outcome) under the image.
    """
    from PIL import Image, ImageDraw

    h, w = image.shape[:2]
    canvas = Image.new("RGB", (w, h + 28), (20, 20, 20))
    canvas.paste(Image.fromarray(np.asarray(image, dtype=np.uint8)), (0, 0))
    draw = ImageDraw.Draw(canvas)
    act = turn.action if isinstance(turn.action, dict) else {}
    red = (230, 30, 30)
    if act.get("point") is not None:
        x, y = act["point"][0] * (w - 1), act["point"][1] * (h - 1)
        r = max(4, w // 40)
        draw.ellipse((x - r, y - r, x + r, y + r), outline=red, width=2)
        draw.line((x - 2 * r, y, x + 2 * r, y), fill=red, width=1)
        draw.line((x, y - 2 * r, x, y + 2 * r), fill=red, width=1)
    if act.get("start") is not None and act.get("end") is not None:
        (x0, y0), (x1, y1) = act["start"], act["end"]
        draw.line((x0 * w, y0 * h, x1 * w, y1 * h), fill=red, width=3)
    what = f"invalid: {act.get('reason', '')}" if act.get("type") == "invalid" else act.get("type")
    outcome = turn.info.get("status", "crashed") if turn.info else "crashed"
    draw.text((3, h + 2), f"{index}: {what}"[:60], fill=(255, 255, 255))
    draw.text(
        (3, h + 14), f"{outcome}{' (invalid)' if turn.invalid else ''}"[:60], fill=(200, 200, 200)
    )
    return np.asarray(canvas)
