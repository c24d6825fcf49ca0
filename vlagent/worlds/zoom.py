"""World ``zoom``: thinking with images (DeepEyes / Mini-o3 style) on high-resolution screens.

Env: the grounding env (``task`` section) on a high-resolution level, seen at ``task.pixel_budget``.
Adapter: the policy may call ``zoom_in`` (``tools.names``) several times; each call's crop comes
back as a new image turn that continues the same conversation (token-in-token-out: sampled ids
are appended as they are, an observation turn appends only its own suffix ids); the final
answer is mapped back to normalized coordinates of the ORIGINAL screenshot and sent to
``env.step``, which scores it. Tools never step the env. After the episodes end, the tool-use
terms (``tools.reward``: a bonus only when right, a cost per extra call, optional zoom evidence
and curiosity) are added to each episode's last turn, beside the env's answer terms.

Coordinates: tool boxes and answers are in the model's space of the observation they refer to
([0, 1000) for Qwen2/3-VL, resized pixels for Qwen2.5-VL).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perception_tools.crop import CropMap, ToolResult
from perception_tools.geometry import Frame, GeometryError, box_area, intersection_area
from perception_tools.tools import ToolContext, call_tool, tool_schemas
from rewards import RewardResult, episode_reward, group_tool_rates, point_in_box
from rewards.tool_use import TOOL_TERMS
from vlagent.codec import Answer, GroundingCodec, coord_space_for
from vlagent.codec.tool_calls import answer_source, parse_tool_call
from vlagent.errors import ConfigError
from vlagent.rollout.runner import Decision
from vlagent.rollout.tokens import (
    ChatTokens,
    PromptCache,
    encode_image,
    observation_ids,
    patch_factor,
    pixel_budget,
)
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.world_config import ToolsConfig
from vlagent.worlds.grounding import GroundingWorld
from vlagent.worlds.zoom_traces import cluster_box, demo_texts

_ANSWER_HINT = {
    "qwen_json": 'When you know the answer, reply with {"point_2d": [x, y]} in the coordinates '
    "of the latest image.",
    "think_answer": 'When you know the answer, reply with <answer>{"point": [x, y]}</answer> in '
    "the coordinates of the latest image.",
    "uitars": "When you know the answer, reply with Action: click(start_box='(x,y)') in the "
    "coordinates of the latest image.",
    "qwen_box": "When you know the answer, reply with <|box_start|>(x0,y0),(x1,y1)<|box_end|> "
    "in the coordinates of the latest image.",
}


def system_prompt(tools: ToolsConfig, answer_format: str) -> str | None:
    """The system text for ``tools.system_prompt`` (None without tools).

    ``schema``: the answer hint only; the tool block comes from the chat template, which gets
    the schemas as ``tools=`` (:func:`prompt_tools`). ``short``: a one-line tool description
    (for tiny models), no ``tools=``. ``none``: no system text.
    """
    if not tools.enabled or tools.system_prompt == "none":
        return None
    if tools.system_prompt == "short":
        names = ", ".join(tools.names)
        return (
            f"Tools: {names}. Call one as "
            '<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [x0, y0, x1, y1]}}</tool_call> '
            "to see a region enlarged. " + _ANSWER_HINT[answer_format]
        )
    return _ANSWER_HINT[answer_format]


def prompt_tools(tools: ToolsConfig) -> list[dict[str, Any]] | None:
    """The ``tools=`` the chat template gets: the schemas of ``tools.names`` when
    ``tools.system_prompt`` is ``schema``, else None."""
    if not tools.enabled or tools.system_prompt != "schema":
        return None
    return tool_schemas(tools.names)


class ZoomAdapter:
    """Tool calls continue the conversation; the final answer steps the env.

    ``traj.extras``: ``images`` (observation arrays, [0] the screenshot), ``ctx`` (the tools'
    frames and crop maps), ``new_image`` (per turn, the image its call added, or None),
    ``answer`` and ``answer_observation``, ``target_box_norm``.
    """

    def __init__(
        self,
        policy: Any,
        tools: ToolsConfig,
        codec: GroundingCodec,
        answer_format: str,
        max_images: int,
    ) -> None:
        self.processor, self.tools, self.codec = policy.processor, tools, codec
        self.tokenizer = policy.tokenizer
        self.tokens = ChatTokens.of(policy.processor)
        self.space = coord_space_for(policy.family)
        self.budget = pixel_budget(policy.processor)
        self.factor = patch_factor(policy.processor)
        self.system = system_prompt(tools, answer_format)
        self.tool_schemas = prompt_tools(tools)
        self.max_images = max_images
        self.prompts = PromptCache(policy.processor)

    def start_context(self, frame: Frame) -> ToolContext:
        """The tools' context of an episode whose only observation is the screenshot."""
        return ToolContext(
            space=self.space,
            frames=(frame,),
            crops=(CropMap(),),
            min_side_px=self.tools.min_side_px,
            max_aspect=self.tools.max_aspect,
            pixel_budget=self.budget,
            factor=self.factor,
        )

    def start(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        instruction = str(obs["instruction"])
        prompt = self.prompts.get([obs["image"]], instruction, self.system, self.tool_schemas)
        traj.segments = [Segment(prompt)]
        traj.extras.update(
            images=[obs["image"]],
            ctx=self.start_context(prompt.frame),
            new_image=[],
            target_box_norm=info.get("target_box_norm"),
        )

    def read(self, traj: Trajectory, turn: Turn, last: bool) -> Decision:
        x = traj.extras
        x["new_image"].append(None)
        parsed = parse_tool_call(turn.text) if self.tools.enabled else None
        if parsed is None:
            action = self._answer(traj, turn.text).to_action()
            return Decision("env", {**action, "completion": turn.text})
        if last:  # no turn or token left to use the tool's answer (the runner names which)
            return Decision("over_limit", parsed.call)
        result = self._call(traj, parsed)
        seg = traj.segment
        if result.error is None and result.image is not None:
            if len(x["images"]) >= self.max_images:
                return Decision("over_limit", parsed.call, "max_images")
            enc = encode_image(self.processor, result.image)
            x["images"].append(result.image)
            seg.images.append((enc.pixel_values, list(enc.grid_thw)))
            x["new_image"][-1] = len(x["images"]) - 1
            x["ctx"] = x["ctx"].observe(result, frame=enc.frame)
            kind, n_tokens, text = "tool", enc.n_tokens, result.text
        else:
            kind, n_tokens, text = "tool_error", None, f"Error: {result.text}"
        if parsed.n_calls > 1:
            text += f" (only the first of {parsed.n_calls} tool calls ran)"
        ids, mm = observation_ids(self.tokens, self.tokenizer, text, n_tokens)
        seg.append(ids, policy=False, mm=mm)
        return Decision(kind, parsed.call)

    def _call(self, traj: Trajectory, parsed: Any) -> ToolResult:
        if parsed.call is None:
            return ToolResult(image=None, text=parsed.error or "bad tool call", error=parsed.error)
        name = parsed.call["name"]
        if name not in self.tools.names:
            why = f"unknown tool {name[:40]!r}; known: {', '.join(self.tools.names)}"
            return ToolResult(image=None, text=why, error=why)
        try:
            return call_tool(parsed.call, traj.extras["images"], traj.extras["ctx"])
        except GeometryError as exc:  # ToolError too: never let a tool end a rollout
            return ToolResult(image=None, text=str(exc)[:200], error=str(exc)[:200])

    def _answer(self, traj: Trajectory, text: str) -> Any:
        """Parse the final answer in its observation's space; map it to ORIGINAL normalized."""
        ctx = traj.extras["ctx"]
        obs = answer_source(text, ctx.n_observations)
        if obs is None:
            obs = ctx.n_observations - 1 if self.tools.answer_observation == "latest" else 0
        parsed = self.codec.parse(text, ctx.frame(obs))
        if isinstance(parsed, Answer):
            crop = ctx.crops[obs]
            point = crop.to_original(parsed.point_norm) if parsed.point_norm else None
            box = crop.to_original(parsed.box_norm) if parsed.box_norm else None
            parsed = dataclasses.replace(parsed, point_norm=point, box_norm=box)
        traj.extras["answer"], traj.extras["answer_observation"] = parsed, obs
        return parsed

    def observe(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        raise AssertionError("the grounding env ends after the answer")

    def finish(self, trajectories: Sequence[Trajectory]) -> None:
        """Add the tool-use terms to each answered episode's last turn."""
        cfg = self.tools.reward.to_reward_config()
        calls = [n_tool_calls(t) for t in trajectories]
        rates = group_tool_rates(calls, [t.group_id for t in trajectories])
        for t, n, rate in zip(trajectories, calls, rates, strict=True):
            target = t.extras.get("target_box_norm")
            if t.error is not None or not t.turns or target is None:
                continue
            last = t.turns[-1]
            answer_terms = {k: v for k, v in last.reward_terms.items() if k != "over_limit"}
            point = getattr(t.extras.get("answer"), "point_norm", None)
            correct = point_in_box(point, target).value > 0.0
            result = episode_reward(
                RewardResult(float(sum(answer_terms.values())), answer_terms),
                n,
                zoom_boxes_norm(t),
                target,
                cfg,
                correct=correct,
                group_tool_rate=float(rate),
                n_tool_errors=sum(x.kind == "tool_error" for x in t.turns),
            )
            for k, v in result.terms.items():
                if k in TOOL_TERMS:
                    last.reward_terms[k] = float(v)
            last.reward = float(sum(last.reward_terms.values()))


def n_tool_calls(traj: Trajectory) -> int:
    """Tool calls that ran without error."""
    return sum(t.kind == "tool" for t in traj.turns)


def zoom_boxes_norm(traj: Trajectory) -> list[tuple[float, float, float, float]]:
    """Crop region of each successful zoom, normalized in the ORIGINAL image."""
    ctx = traj.extras.get("ctx")
    return [
        ctx.crops[i].box_in_original_norm for i in traj.extras.get("new_image", []) if i is not None
    ]


class ZoomDemonstrator:
    """Replays a zoom trace (tools on) or the direct answer (tools off) of the task's screen."""

    def __init__(self, world: ZoomWorld, adapter: ZoomAdapter) -> None:
        self.world, self.adapter = world, adapter

    def text(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> str | None:
        if "demo" not in traj.extras:
            sample = self.world.sample(traj.task_id)
            rng = np.random.default_rng(int(sample.meta.get("seed", 0)))
            traj.extras["demo"] = demo_texts(self.adapter, sample, rng, self.world.cfg.tools)
        texts = traj.extras["demo"]
        k = len(traj.turns)
        return texts[k] if k < len(texts) else None


def _contains(outer: Sequence[float], inner: Sequence[float]) -> bool:
    return intersection_area(outer, inner) >= box_area(inner) * (1.0 - 1e-6)


class ZoomWorld(GroundingWorld):
    """Grounding screens with visual tools; four turns by default."""

    default_max_turns = 4

    def __init__(self, cfg: Any, policy: Any) -> None:
        if cfg.task.prompt_order != "image_first":
            raise ConfigError(
                f"task.prompt_order={cfg.task.prompt_order!r}: the zoom world writes its "
                "multi-turn prompts image first; use image_first (or world=grounding)"
            )
        if cfg.task.answer_label != "fixed":
            raise ConfigError(
                f"task.answer_label={cfg.task.answer_label!r}: the zoom world's traces write "
                "a fixed label; use fixed (or world=grounding)"
            )
        if cfg.task.describe_mix > 0:
            raise ConfigError(
                f"task.describe_mix={cfg.task.describe_mix}: describe tasks are single-turn; "
                "use world=grounding (or describe_mix=0)"
            )
        super().__init__(cfg, policy)
        self._adapter: ZoomAdapter | None = None

    def adapter(self) -> ZoomAdapter:  # type: ignore[override]
        if self._adapter is None:  # one adapter: its prompt cache outlives a rollout
            self._adapter = ZoomAdapter(
                self.policy,
                self.cfg.tools,
                self.codec,
                self.cfg.task.answer_format,
                self.cfg.loop.max_images,
            )
        return self._adapter

    def demonstrator(self) -> ZoomDemonstrator:  # type: ignore[override]
        return ZoomDemonstrator(self, self.adapter())

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """Accuracy, tool calls and zoom quality: how often the first zoom holds the target or
        covers its colour cluster, and the accuracy when the last zoom holds the target."""
        out = super().summarize(trajectories)
        n = max(1, len(trajectories))
        zoomed = [t for t in trajectories if zoom_boxes_norm(t)]
        has_target = on_cluster = 0
        for t in zoomed:
            first = zoom_boxes_norm(t)[0]
            has_target += _contains(first, t.extras["target_box_norm"])
            cluster = cluster_box(self.sample(t.task_id))
            if cluster is not None:
                on_cluster += intersection_area(first, cluster) >= 0.5 * box_area(cluster)
        good = [t for t in zoomed if _contains(zoom_boxes_norm(t)[-1], t.extras["target_box_norm"])]
        out.update(
            tool_calls=sum(n_tool_calls(t) for t in trajectories) / n,
            tool_errors=sum(x.kind == "tool_error" for t in trajectories for x in t.turns) / n,
            zoom_rate=len(zoomed) / n,
            zoom_has_target=has_target / n,
            zoom_on_cluster=on_cluster / n,
            acc_given_target_zoom=(sum(t.success for t in good) / len(good)) if good else 0.0,
        )
        return out

    def categories(self, traj: Trajectory) -> dict[str, str]:
        """The grounding categories plus ``tool_calls``: how many zooms ran (0, 1, 2+)."""
        calls = n_tool_calls(traj)
        return {**super().categories(traj), "tool_calls": "2+" if calls >= 2 else str(calls)}

    def save_pictures(self, trajectories: Sequence[Trajectory], folder: Path, name: str) -> None:
        from vlagent.viz import save_png
        from vlagent.worlds.zoom_viz import render_episode

        for k, t in enumerate(trajectories):
            if t.turns and "ctx" in t.extras:
                save_png(render_episode(t), Path(folder) / f"{name}_{k:02d}.png")
