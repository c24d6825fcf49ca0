"""A multi-turn "thinking with images" episode as token ids, images and masks.

One trajectory is one conversation: the first user turn (system prompt, observation_0, the
instruction), then alternating assistant turns (sampled or forced) and observation turns (tool
results as new user turns, or error texts). Token ids are appended exactly as sampled
(token-in-token-out), so the ids the trainer scores are the ids the sampler produced.

Shapes: L = conversation length in tokens, I = number of images.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from perception_tools.tools import ToolContext
from vlagent.codec import Answer, ParseError


@dataclasses.dataclass(frozen=True, eq=False)
class EpisodeSpec:
    """One episode to run: a screenshot (full resolution), its instruction and ground truth.

    Attributes:
        image: uint8 HxWx3 original screenshot (observation_0).
        instruction: the task text.
        target_box_norm: target (x0, y0, x1, y1) normalized in the original, or None.
        key: the screen's source key. group_id: episodes of one screen share it (GRPO).
    """

    image: np.ndarray
    instruction: str
    target_box_norm: tuple[float, float, float, float] | None = None
    key: int = 0
    group_id: int = 0


@dataclasses.dataclass
class TurnInfo:
    """One assistant turn and what followed it.

    Attributes:
        start: index in ``input_ids`` of the turn's first generated token.
        end: one past its last token (the eos, when it ended with one).
        text: the turn decoded (special tokens removed).
        kind: "tool" (a tool call that ran), "tool_error" (a malformed or failed call, answered
            with an error text), "answer" (final answer) or "over_limit".
        tool_call: the parsed call ``{"name", "arguments"}`` or None.
        observation_text: the text of the observation turn that followed ("" if none).
        new_image: index of the image the turn's tool call added, or None.
    """

    start: int
    end: int
    text: str
    kind: str
    tool_call: dict[str, Any] | None = None
    observation_text: str = ""
    new_image: int | None = None


@dataclasses.dataclass
class Trajectory:
    """Token ids, images, masks and outcome of one multi-turn episode.

    Attributes:
        input_ids: [L] ids of the whole conversation.
        mm_token_type_ids: [L] 1 on image placeholder tokens, else 0.
        loss_mask: [L] 1 only on tokens the policy generated (assistant turns incl. their eos);
            all 0 when the trajectory is masked out (over-limit with ``over_limit=mask``).
        behaviour_logprobs: [L] log-prob of each generated token under the sampler's
            distribution; 0 on observation tokens and for forced (off-policy) turns.
        images: I uint8 HxWx3 arrays: ``images[0]`` is the full-resolution screenshot, which the
            processor shows the model at its pixel budget; ``images[i]`` the i-th tool result.
        pixel_values: per image, its processor rows [patches_i, D].
        image_grid_thw: [I, 3] (t, h, w) patch grid per image.
        ctx: the tools' context: frame and ``CropMap`` (place in the original) per observation.
        turns: one ``TurnInfo`` per assistant turn.
        instruction: the task instruction.
        target_box_norm: target (x0, y0, x1, y1) normalized in the ORIGINAL image, or None.
        key: the screen's source key; group_id: the GRPO group (same screen).
        answer: the parsed final answer (point in ORIGINAL normalized coords), a ParseError, or
            None when the episode ended without an answer turn.
        answer_observation: observation the answer's numbers were read in, or None.
        reward: total reward (NaN until scored); reward_terms: named terms summing to it.
        correct: the answer's point lies in the target box (set when scored).
        done: the episode is finished (answer given or a limit hit).
        over_limit: a limit ended it; limit_reason: which (max_turns, max_images,
            max_turn_tokens, max_episode_tokens).
        masked: loss_mask was zeroed because of the limit (``over_limit=mask``).
    """

    input_ids: list[int]
    mm_token_type_ids: list[int]
    loss_mask: list[float]
    behaviour_logprobs: list[float]
    images: list[np.ndarray]
    pixel_values: list[torch.Tensor]
    image_grid_thw: list[list[int]]
    ctx: ToolContext
    instruction: str
    target_box_norm: tuple[float, float, float, float] | None = None
    key: int = 0
    group_id: int = 0
    turns: list[TurnInfo] = dataclasses.field(default_factory=list)
    answer: Answer | ParseError | None = None
    answer_observation: int | None = None
    reward: float = float("nan")
    reward_terms: dict[str, float] = dataclasses.field(default_factory=dict)
    correct: bool = False
    done: bool = False
    over_limit: bool = False
    limit_reason: str | None = None
    masked: bool = False

    # ------------------------------------------------------------------ building (the loop)
    def append(
        self,
        ids: list[int],
        *,
        policy: bool,
        logprobs: list[float] | None = None,
        mm: list[int] | None = None,
    ) -> None:
        """Append ``ids``: policy tokens get loss_mask 1 (and their log-probs), others 0."""
        self.input_ids.extend(ids)
        self.mm_token_type_ids.extend(mm if mm is not None else [0] * len(ids))
        self.loss_mask.extend([1.0 if policy else 0.0] * len(ids))
        self.behaviour_logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))

    def add_image(self, image: np.ndarray, pixel_values: torch.Tensor, grid_thw: list[int]) -> int:
        """Record a new observation image; returns its index."""
        self.images.append(image)
        self.pixel_values.append(pixel_values)
        self.image_grid_thw.append(list(grid_thw))
        return len(self.images) - 1

    def finish(self, reason: str | None = None, *, mask: bool = False) -> None:
        """End the episode; ``reason`` flags it over-limit, ``mask`` zeroes its loss mask."""
        self.done = True
        if reason is not None:
            self.over_limit, self.limit_reason = True, reason
            if mask:
                self.masked = True
                self.loss_mask = [0.0] * len(self.loss_mask)

    # ------------------------------------------------------------------------- reading
    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def n_images(self) -> int:
        return len(self.images)

    @property
    def n_generated(self) -> int:
        """Tokens the policy generated (or was forced to) over all assistant turns."""
        return sum(t.end - t.start for t in self.turns)

    @property
    def n_tool_calls(self) -> int:
        """Tool calls that ran without error."""
        return sum(t.kind == "tool" for t in self.turns)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """Every well-formed call the policy made, in order (including ones that failed)."""
        return [t.tool_call for t in self.turns if t.tool_call is not None]

    @property
    def zoom_boxes_norm(self) -> list[tuple[float, float, float, float]]:
        """Crop region of each successful zoom, normalized in the ORIGINAL image."""
        return [
            self.ctx.crops[t.new_image].box_in_original_norm
            for t in self.turns
            if t.kind == "tool" and t.new_image is not None
        ]

    def tensors(self) -> dict[str, torch.Tensor]:
        """``input_ids`` [L], ``mm_token_type_ids`` [L], ``loss_mask`` [L],
        ``behaviour_logprobs`` [L], ``pixel_values`` [sum patches, D], ``image_grid_thw`` [I, 3]."""
        return {
            "input_ids": torch.tensor(self.input_ids, dtype=torch.long),
            "mm_token_type_ids": torch.tensor(self.mm_token_type_ids, dtype=torch.long),
            "loss_mask": torch.tensor(self.loss_mask, dtype=torch.float32),
            "behaviour_logprobs": torch.tensor(self.behaviour_logprobs, dtype=torch.float32),
            "pixel_values": torch.cat(self.pixel_values, dim=0),
            "image_grid_thw": torch.tensor(self.image_grid_thw, dtype=torch.long),
        }


def pack(
    trajectories: list[Trajectory], pad_id: int, side: str = "right"
) -> dict[str, torch.Tensor]:
    """Batch trajectories for one forward pass (padding on ``side``).

    Returns:
        ``input_ids`` [B, L], ``attention_mask`` [B, L], ``mm_token_type_ids`` [B, L],
        ``loss_mask`` [B, L], ``behaviour_logprobs`` [B, L] (0 on padding),
        ``pixel_values`` [sum of patches, D] in row order, ``image_grid_thw`` [sum I, 3].
    """
    if side not in ("left", "right"):
        raise ValueError(f"pack: side must be 'left' or 'right', got {side!r}")
    length = max(len(t) for t in trajectories)
    b = len(trajectories)
    out = {
        "input_ids": torch.full((b, length), pad_id, dtype=torch.long),
        "attention_mask": torch.zeros(b, length, dtype=torch.long),
        "mm_token_type_ids": torch.zeros(b, length, dtype=torch.long),
        "loss_mask": torch.zeros(b, length),
        "behaviour_logprobs": torch.zeros(b, length),
    }
    for i, t in enumerate(trajectories):
        n = len(t)
        cols = slice(0, n) if side == "right" else slice(length - n, length)
        out["input_ids"][i, cols] = torch.tensor(t.input_ids)
        out["attention_mask"][i, cols] = 1
        out["mm_token_type_ids"][i, cols] = torch.tensor(t.mm_token_type_ids)
        out["loss_mask"][i, cols] = torch.tensor(t.loss_mask)
        out["behaviour_logprobs"][i, cols] = torch.tensor(t.behaviour_logprobs)
    out["pixel_values"] = torch.cat([p for t in trajectories for p in t.pixel_values], dim=0)
    out["image_grid_thw"] = torch.tensor(
        [g for t in trajectories for g in t.image_grid_thw], dtype=torch.long
    )
    return out
