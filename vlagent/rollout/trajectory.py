"""The one trajectory type every world produces and every recipe consumes.

A trajectory is one episode: the model's context as token ids and images, the loss mask (1 only
on tokens the policy generated), behaviour log-probs, and per turn the reward and its named
terms as the env reported them. Its context is one or more :class:`Segment`\\ s — a segment is
what the model reads in one forward pass:

- single-turn grounding: one segment (prompt + answer);
- thinking with images: one segment that grows (prompt + answer + tool observation + answer …);
- multi-step apps: one segment per turn (each turn re-prompts with the recent screenshots).

Segments whose prompts are equal share one :class:`Prompt` object, which the sampler and the
training forward use to encode the image and prefill the prompt once per group (prefix sharing).

Shapes: P prompt tokens, C continuation tokens, I images.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from perception_tools.geometry import Frame


@dataclasses.dataclass(eq=False)
class Prompt:
    """One tokenized prompt (processor output of one row, unpadded).

    Attributes:
        input_ids: [P] token ids (chat template applied, image pads expanded).
        mm_token_type_ids: [P] 1 on image placeholder tokens.
        pixel_values: [patches, D] rows of all the prompt's images, in order.
        image_grid_thw: [I, 3] patch grid per image.
        frames: per image, original and resized size; ``frames[-1]`` is the current screen,
            whose coordinate space answers are written in.
        key: content key: prompts with equal keys are equal (used to share one object).
    """

    input_ids: torch.Tensor
    mm_token_type_ids: torch.Tensor
    pixel_values: torch.Tensor
    image_grid_thw: torch.Tensor
    frames: list[Frame]
    key: str = ""

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def frame(self) -> Frame:
        """The frame of the current (last) image."""
        return self.frames[-1]


@dataclasses.dataclass
class Segment:
    """A prompt and everything appended after it (policy turns and observation turns).

    Attributes:
        prompt: the shared prompt.
        ids: [C] continuation ids.
        mm: [C] 1 on image placeholders inside the continuation (tool results).
        loss_mask: [C] 1 on tokens the policy generated (each turn up to and including eos).
        logprobs: [C] behaviour log-probs of policy tokens under the sampler's distribution;
            0 on observation tokens and on forced (demonstration) turns.
        images: (pixel_values [patches, D], grid_thw [3]) of each continuation image, in order.
    """

    prompt: Prompt
    ids: list[int] = dataclasses.field(default_factory=list)
    mm: list[int] = dataclasses.field(default_factory=list)
    loss_mask: list[float] = dataclasses.field(default_factory=list)
    logprobs: list[float] = dataclasses.field(default_factory=list)
    images: list[tuple[torch.Tensor, list[int]]] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def append(
        self,
        ids: list[int],
        *,
        policy: bool,
        logprobs: list[float] | None = None,
        mm: list[int] | None = None,
    ) -> tuple[int, int]:
        """Append ``ids`` (policy tokens get loss 1); returns their [start, end) span."""
        start = len(self.ids)
        self.ids.extend(ids)
        self.mm.extend(mm if mm is not None else [0] * len(ids))
        self.loss_mask.extend([1.0 if policy else 0.0] * len(ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))
        return start, len(self.ids)

    @property
    def text_only(self) -> bool:
        """The continuation holds no image (the shared-prefix forward applies)."""
        return not self.images


@dataclasses.dataclass
class Turn:
    """One policy turn and what it led to.

    Attributes:
        segment: index of the segment holding the turn's tokens; start/end: their span.
        text: the turn decoded (special tokens removed).
        kind: ``env`` (sent to ``env.step``), ``tool`` (a tool call that ran), ``tool_error``
            (a bad call, answered with an error text) or ``over_limit`` (no eos in budget).
        action: what the adapter read from the text (env action mapping, tool call, …).
        reward: this turn's reward; reward_terms: its named terms (they sum to ``reward``).
        info: the env's step info (``{}`` for tool turns).
        obs_key: key of the observation the turn acted on (equal keys = equal env state).
        invalid: the env (or the codec) marked the action invalid.
        truncated: the turn hit its token budget without eos.
    """

    segment: int
    start: int
    end: int
    text: str
    kind: str = "env"
    action: Any = None
    reward: float = 0.0
    reward_terms: dict[str, float] = dataclasses.field(default_factory=dict)
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    obs_key: str = ""
    invalid: bool = False
    truncated: bool = False


@dataclasses.dataclass
class Trajectory:
    """One episode of any world.

    Attributes:
        task_id, seed: what the env was reset with; group_id: GRPO group (same reset).
        segments, turns: the context and the policy turns.
        instruction: the task text.
        status: running | terminated | truncated | over_limit | error.
        success: the env's task checker said success.
        masked: no loss and no part in group statistics (e.g. over-limit with ``mask``).
        error: why a backend failure ended the episode (reward NaN), else None.
        info: the last env info (``reset`` info until the first step).
        policy_version: optimizer steps of the policy that sampled it.
        extras: world-specific records (parsed answer, tool context, screens for pictures).
    """

    task_id: Any
    seed: int = 0
    group_id: int = 0
    segments: list[Segment] = dataclasses.field(default_factory=list)
    turns: list[Turn] = dataclasses.field(default_factory=list)
    instruction: str = ""
    status: str = "running"
    success: bool = False
    masked: bool = False
    error: str | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    policy_version: int = 0
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.status != "running"

    @property
    def segment(self) -> Segment:
        """The segment the next turn continues."""
        return self.segments[-1]

    @property
    def reward(self) -> float:
        """Sum of the turn rewards; NaN for an episode a backend error ended."""
        if self.error is not None or not self.turns:
            return math.nan
        return float(sum(t.reward for t in self.turns))

    @property
    def reward_terms(self) -> dict[str, float]:
        """Each named term summed over turns (the terms sum to ``reward``)."""
        out: dict[str, float] = {}
        for t in self.turns:
            for k, v in t.reward_terms.items():
                out[k] = out.get(k, 0.0) + float(v)
        return out

    @property
    def n_generated(self) -> int:
        """Tokens of all policy turns."""
        return sum(t.end - t.start for t in self.turns)

    @property
    def truncated_turn(self) -> bool:
        """Some turn hit its token budget without eos."""
        return any(t.truncated for t in self.turns)

    def mask_out(self) -> None:
        """Exclude the episode from training: loss mask 0 everywhere, no advantage."""
        self.masked = True
        for s in self.segments:
            s.loss_mask = [0.0] * len(s.loss_mask)
