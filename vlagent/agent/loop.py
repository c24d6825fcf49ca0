"""The multi-turn agent loop: generate, call a tool, append its image as a new user turn, repeat.

Token-in-token-out: the first user turn is tokenized once by the processor; after that, each
assistant turn appends exactly the sampled ids (up to and including ``<|im_end|>``) and each
observation appends only its own suffix ids (``tokens.observation_ids``). Nothing is re-rendered,
so the ids the trainer scores are the ids the sampler saw.

Episodes advance in lockstep: per round, every unfinished episode of a chunk of
``loop.batch_size`` is left-padded into one ``generate`` call (all of its images passed in row
order); finished episodes drop out. A round's ``max_new_tokens`` is the largest remaining
allowance in the chunk, and each row is cut to its own allowance afterwards.

Coordinates: tool boxes and answers are in the model's space of the observation they refer to
(``ToolContext.space``: [0, 1000) for Qwen2/3-VL, resized pixels for Qwen2.5-VL); answers are
mapped back to normalized coordinates of the ORIGINAL screenshot with that observation's
``CropMap``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from perception_tools.crop import CropMap, ToolResult
from perception_tools.geometry import Frame, GeometryError
from perception_tools.tools import ToolContext, call_tool
from vlagent.agent.config import LoopConfig, ToolsConfig
from vlagent.agent.parse import ToolCallParse, answer_source, parse_tool_call
from vlagent.agent.tokens import (
    ChatTokens,
    FirstTurn,
    encode_first_turn,
    encode_image,
    observation_ids,
    patch_factor,
    pixel_budget,
    set_pixel_budget,
    system_prompt,
)
from vlagent.agent.trajectory import EpisodeSpec, Trajectory, TurnInfo, pack
from vlagent.batching import mask_logits
from vlagent.codec import Answer, GroundingCodec, coord_space_for
from vlagent.rollout.hf import eos_ids


class AgentRuntime:
    """Everything one policy needs to run episodes: tokens, codec, tool context, limits.

    Args:
        policy: a loaded ``Policy``; its processor's ``max_pixels`` is set to ``pixel_budget_px``.
        tools: which tools and how answers are read.
        loop: limits and sampling.
        answer_format: the codec format of final answers.
        pixel_budget_px: processor ``max_pixels`` for every observation (0 keeps the processor's).
    """

    def __init__(
        self,
        policy: Any,
        tools: ToolsConfig,
        loop: LoopConfig,
        answer_format: str = "qwen_json",
        pixel_budget_px: int = 0,
    ) -> None:
        set_pixel_budget(policy.processor, pixel_budget_px)
        self.policy, self.tools, self.loop = policy, tools, loop
        self.tokenizer = policy.tokenizer
        self.tokens = ChatTokens.of(policy.processor)
        self.codec = GroundingCodec.for_family(policy.family, fmt=answer_format)  # type: ignore[arg-type]
        self.space = coord_space_for(policy.family)
        self.budget = pixel_budget(policy.processor)
        self.factor = patch_factor(policy.processor)
        self.system = system_prompt(tools, answer_format)
        self.eos = set(eos_ids(policy)) | {self.tokens.eos_id}

    # --------------------------------------------------------------------------- start
    def start_context(self, frame: Frame) -> ToolContext:
        """The tools' context of an episode whose only observation is the screenshot.

        Args:
            frame: the screenshot's original size and the size the processor resizes it to.
        """
        return ToolContext(
            space=self.space,
            frames=(frame,),
            crops=(CropMap(),),
            min_side_px=self.tools.min_side_px,
            max_aspect=self.tools.max_aspect,
            pixel_budget=self.budget,
            factor=self.factor,
        )

    def encode_first(self, spec: EpisodeSpec) -> FirstTurn:
        return encode_first_turn(self.policy.processor, spec.image, spec.instruction, self.system)

    def start(self, spec: EpisodeSpec, first: FirstTurn | None = None) -> Trajectory:
        """A trajectory holding only the first user turn (loss mask 0)."""
        first = first if first is not None else self.encode_first(spec)
        n = len(first.input_ids)
        return Trajectory(
            input_ids=list(first.input_ids),
            mm_token_type_ids=list(first.mm_token_type_ids),
            loss_mask=[0.0] * n,
            behaviour_logprobs=[0.0] * n,
            images=[spec.image],
            pixel_values=[first.image.pixel_values],
            image_grid_thw=[list(first.image.grid_thw)],
            ctx=self.start_context(first.image.frame),
            instruction=spec.instruction,
            target_box_norm=spec.target_box_norm,
            key=spec.key,
            group_id=spec.group_id,
        )

    # ----------------------------------------------------------------------------- run
    def run(
        self,
        specs: Sequence[EpisodeSpec],
        *,
        seed: int | None = None,
        greedy: bool = False,
        forced: Sequence[Sequence[str]] | None = None,
    ) -> list[Trajectory]:
        """Run episodes to the end (answer or limit).

        Args:
            specs: the episodes.
            seed: seeds torch's RNG before each sampling round (reproducible rollouts).
            greedy: argmax decoding (evaluation).
            forced: per episode, assistant texts replayed as its first turns (SFT traces,
                probes); those turns are off-policy (behaviour log-probs 0). Later turns are
                generated.

        Returns:
            One trajectory per spec, in order.
        """
        cache: dict[tuple[int, str], FirstTurn] = {}
        trajs = []
        for spec in specs:
            key = (id(spec.image), spec.instruction)
            if key not in cache:
                cache[key] = self.encode_first(spec)
            trajs.append(self.start(spec, cache[key]))
        forced = forced if forced is not None else [()] * len(specs)
        if len(forced) != len(specs):
            raise ValueError(f"run: {len(forced)} forced lists for {len(specs)} episodes")
        for lo in range(0, len(trajs), self.loop.batch_size):
            chunk = list(range(lo, min(lo + self.loop.batch_size, len(trajs))))
            for round_ in range(self.loop.max_turns):
                active = [i for i in chunk if not trajs[i].done]
                if not active:
                    break
                to_sample = []
                for i in active:
                    k = len(trajs[i].turns)
                    if k < len(forced[i]):
                        self._forced_turn(trajs[i], forced[i][k])
                    else:
                        to_sample.append(i)
                if to_sample:
                    rseed = None if seed is None else seed * 7_919 + lo * 104_729 + round_
                    self._sampled_round([trajs[i] for i in to_sample], greedy, rseed)
        return trajs

    def _allowance(self, traj: Trajectory) -> int:
        return min(self.loop.max_turn_tokens, self.loop.max_episode_tokens - traj.n_generated)

    def _forced_turn(self, traj: Trajectory, text: str) -> None:
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        ids.append(self.tokens.eos_id)
        allowance = self._allowance(traj)
        hit = len(ids) <= allowance
        self.after_turn(traj, ids[:allowance], None, hit, allowance)

    @torch.no_grad()
    def _sampled_round(self, trajs: list[Trajectory], greedy: bool, seed: int | None) -> None:
        allow = [self._allowance(t) for t in trajs]
        rows = self.sample(trajs, max(allow), greedy=greedy, seed=seed)
        for t, a, (ids, logps) in zip(trajs, allow, rows, strict=True):
            hit = bool(ids) and ids[-1] in self.eos and len(ids) <= a
            self.after_turn(t, ids[:a], logps[:a], hit, a)

    @torch.no_grad()
    def sample(
        self,
        trajs: list[Trajectory],
        max_new: int,
        *,
        greedy: bool = False,
        seed: int | None = None,
    ) -> list[tuple[list[int], list[float]]]:
        """One assistant turn for each trajectory (left padded, one ``generate`` call).

        Returns:
            Per trajectory: the new ids up to and including the first eos (all ``max_new`` if
            none), and their behaviour log-probs under softmax(mask(logits) / temperature)
            (temperature 1 when greedy).
        """
        model = self.policy.model
        device = next(model.parameters()).device
        batch = pack(trajs, self.tokens.pad_id, side="left")
        keys = (
            "input_ids",
            "attention_mask",
            "mm_token_type_ids",
            "pixel_values",
            "image_grid_thw",
        )
        inputs = {k: batch[k].to(device) for k in keys}
        if seed is not None:
            torch.manual_seed(seed)
        # Every sampling knob explicit: a checkpoint's generation_config must not reshape the
        # distribution behind the behaviour log-probs.
        knobs: dict[str, Any] = {"repetition_penalty": 1.0}
        if not greedy:
            knobs.update(temperature=self.loop.temperature, top_k=0, top_p=1.0)
        forbidden = list(self.tokens.forbidden)
        was_training = model.training
        model.eval()
        out = model.generate(
            **inputs,
            do_sample=not greedy,
            max_new_tokens=max_new,
            return_dict_in_generate=True,
            output_logits=True,
            pad_token_id=self.tokens.pad_id,
            eos_token_id=sorted(self.eos),
            suppress_tokens=forbidden or None,
            **knobs,
        )
        if was_training:
            model.train()
        new = out.sequences[:, inputs["input_ids"].shape[1] :]  # [N, T]
        scale = 1.0 if greedy else self.loop.temperature
        steps = []
        for t, logits in enumerate(out.logits):  # per step: [N, V], never a [N, T, V] tensor
            logp = torch.log_softmax(mask_logits(logits.float(), forbidden) / scale, dim=-1)
            steps.append(logp.gather(-1, new[:, t : t + 1]).squeeze(-1))
        logps = torch.stack(steps, dim=1).cpu()  # [N, T]
        rows = []
        for i, row in enumerate(new.cpu().tolist()):
            end = next((j + 1 for j, v in enumerate(row) if v in self.eos), len(row))
            rows.append((row[:end], logps[i, :end].tolist()))
        return rows

    # ----------------------------------------------------------------------- one turn
    def after_turn(
        self,
        traj: Trajectory,
        ids: list[int],
        logps: list[float] | None,
        hit_eos: bool,
        allowance: int,
    ) -> None:
        """Append an assistant turn's ids (loss 1) and act on it: tool call, answer or limit.

        Args:
            ids: the turn's ids, its eos included when it ended with one.
            logps: behaviour log-probs of ``ids`` (None for a forced, off-policy turn).
            hit_eos: the turn ended with eos within its allowance.
            allowance: the most tokens the turn was allowed.
        """
        start = len(traj)
        traj.append(ids, policy=True, logprobs=logps)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        turn = TurnInfo(start=start, end=len(traj), text=text, kind="answer")
        traj.turns.append(turn)
        mask = self.loop.over_limit == "mask"
        if not hit_eos:
            turn.kind = "over_limit"
            full = allowance >= self.loop.max_turn_tokens
            traj.finish("max_turn_tokens" if full else "max_episode_tokens", mask=mask)
            return
        parsed = parse_tool_call(text) if self.tools.enabled else None
        if parsed is None:
            self._read_answer(traj, text)
            traj.finish()
            return
        turn.tool_call = parsed.call
        for limit, hit in (
            ("max_turns", len(traj.turns) >= self.loop.max_turns),
            ("max_episode_tokens", traj.n_generated >= self.loop.max_episode_tokens),
        ):
            if hit:  # no turn or token left to use the tool's answer
                turn.kind = "over_limit"
                traj.finish(limit, mask=mask)
                return
        result = self._call(traj, parsed)
        if result.error is None and result.image is not None:
            if traj.n_images >= self.loop.max_images:
                turn.kind = "over_limit"
                traj.finish("max_images", mask=mask)
                return
            enc = encode_image(self.policy.processor, result.image)
            turn.new_image = traj.add_image(result.image, enc.pixel_values, enc.grid_thw)
            traj.ctx = traj.ctx.observe(result, frame=enc.frame)
            turn.kind, n_tokens, obs_text = "tool", enc.n_tokens, result.text
        else:
            turn.kind, n_tokens, obs_text = "tool_error", None, f"Error: {result.text}"
        if parsed.n_calls > 1:
            obs_text += f" (only the first of {parsed.n_calls} tool calls ran)"
        turn.observation_text = obs_text
        obs_ids, mm = observation_ids(self.tokens, self.tokenizer, obs_text, n_tokens)
        traj.append(obs_ids, policy=False, mm=mm)

    def _call(self, traj: Trajectory, parsed: ToolCallParse) -> ToolResult:
        if parsed.call is None:
            return ToolResult(image=None, text=parsed.error or "bad tool call", error=parsed.error)
        name = parsed.call["name"]
        if name not in self.tools.names:
            why = f"unknown tool {name[:40]!r}; known: {', '.join(self.tools.names)}"
            return ToolResult(image=None, text=why, error=why)
        try:
            return call_tool(parsed.call, traj.images, traj.ctx)
        except GeometryError as exc:  # ToolError too: never let a tool end a rollout
            return ToolResult(image=None, text=str(exc)[:200], error=str(exc)[:200])

    def _read_answer(self, traj: Trajectory, text: str) -> None:
        """Parse the final answer in its observation's space; map it to ORIGINAL normalized."""
        n_obs = traj.ctx.n_observations
        obs = answer_source(text, n_obs)
        if obs is None:
            obs = n_obs - 1 if self.tools.answer_observation == "latest" else 0
        parsed = self.codec.parse(text, traj.ctx.frame(obs))
        if isinstance(parsed, Answer):
            crop = traj.ctx.crops[obs]
            point = crop.to_original(parsed.point_norm) if parsed.point_norm else None
            box = crop.to_original(parsed.box_norm) if parsed.box_norm else None
            parsed = Answer(point_norm=point, box_norm=box, text=parsed.text)  # type: ignore[arg-type]
        traj.answer, traj.answer_observation = parsed, obs
