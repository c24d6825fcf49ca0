"""Trajectories flattened into rows for the training forward: one row per segment.

A :class:`RowBatch` holds U distinct prompts, which prompt each of N rows continues, and the
continuations right padded to T tokens. Advantages are per row ([N]) when every policy token of
a row has the same advantage (the usual case), else per token ([N, T]).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from vlagent.batching import PromptBatch
from vlagent.rollout.trajectory import Prompt, Trajectory


def batch_prompts(prompts: Sequence[Prompt], pad_id: int) -> PromptBatch:
    """Left-pad U prompts into one processor-style batch.

    Returns:
        ``input_ids`` / ``attention_mask`` / ``mm_token_type_ids`` [U, P], ``pixel_values``
        [sum patches, D], ``image_grid_thw`` [sum I, 3]; frames: each prompt's current frame.
    """
    width = max(len(p) for p in prompts)
    u = len(prompts)
    ids = torch.full((u, width), pad_id, dtype=torch.long)
    att = torch.zeros(u, width, dtype=torch.long)
    mm = torch.zeros(u, width, dtype=torch.long)
    for i, p in enumerate(prompts):
        n = len(p)
        ids[i, width - n :] = p.input_ids
        att[i, width - n :] = 1
        mm[i, width - n :] = p.mm_token_type_ids
    inputs = {
        "input_ids": ids,
        "attention_mask": att,
        "mm_token_type_ids": mm,
        "pixel_values": torch.cat([p.pixel_values for p in prompts], dim=0),
        "image_grid_thw": torch.cat([p.image_grid_thw for p in prompts], dim=0),
    }
    return PromptBatch(inputs=inputs, frames=[p.frame for p in prompts])


@dataclasses.dataclass
class RowBatch:
    """N rows ready for the loss.

    Attributes:
        prompts: the U distinct prompts; row_prompt: [N] index of each row's prompt.
        ids: [N, T] continuation ids (right padded); mm: [N, T] image-placeholder flags.
        valid: [N, T] 1 on real continuation tokens (attention), mask: [N, T] loss mask.
        old_logp: [N, T] behaviour log-probs (0 off the mask).
        advantages: [N] or [N, T].
        group_ids: [N] GRPO group of each row's trajectory; traj_index: [N] its trajectory;
            segment_index: [N] the segment of that trajectory the row holds.
        truncated: [N] the row's last turn hit its token budget without eos.
        images: per row, the continuation's images (pixel_values, grid_thw).
    """

    prompts: list[Prompt]
    row_prompt: torch.Tensor
    ids: torch.Tensor
    mm: torch.Tensor
    valid: torch.Tensor
    mask: torch.Tensor
    old_logp: torch.Tensor
    advantages: torch.Tensor
    group_ids: torch.Tensor
    traj_index: torch.Tensor
    segment_index: torch.Tensor
    truncated: torch.Tensor
    images: list[list[tuple[torch.Tensor, list[int]]]]

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def text_only(self) -> bool:
        return not any(self.images)

    def select(self, rows: torch.Tensor | Sequence[int]) -> RowBatch:
        """The rows at ``rows``, keeping only the prompts they continue."""
        idx = torch.as_tensor(rows, dtype=torch.long)
        used, remap = torch.unique(self.row_prompt[idx], return_inverse=True)
        return RowBatch(
            prompts=[self.prompts[i] for i in used.tolist()],
            row_prompt=remap.reshape(-1),
            ids=self.ids[idx],
            mm=self.mm[idx],
            valid=self.valid[idx],
            mask=self.mask[idx],
            old_logp=self.old_logp[idx],
            advantages=self.advantages[idx],
            group_ids=self.group_ids[idx],
            traj_index=self.traj_index[idx],
            segment_index=self.segment_index[idx],
            truncated=self.truncated[idx],
            images=[self.images[i] for i in idx.tolist()],
        )


def build_rows(
    trajectories: Sequence[Trajectory],
    turn_advantages: Sequence[Sequence[float]] | None,
    pad_id: int,
) -> RowBatch:
    """Flatten trajectories into rows (every segment that holds a policy token).

    An episode a backend error ended (``error`` set, reward NaN) contributes no rows: its
    tokens get no loss and do not count in the loss normalizer.

    Args:
        trajectories: finished episodes.
        turn_advantages: per trajectory, one advantage per turn (broadcast to the turn's
            tokens); None gives advantage 0 (SFT, or before credit: see ``with_advantages``).
        pad_id: padding id of the continuations.
    """
    prompts: list[Prompt] = []
    where: dict[int, int] = {}
    rows = []  # (traj index, segment index, segment)
    for ti, traj in enumerate(trajectories):
        if traj.error is not None:
            continue
        for si, seg in enumerate(traj.segments):
            if not any(seg.loss_mask):
                continue
            if id(seg.prompt) not in where:
                where[id(seg.prompt)] = len(prompts)
                prompts.append(seg.prompt)
            rows.append((ti, si, seg))
    n = len(rows)
    width = max((len(r[2]) for r in rows), default=1)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    mm = torch.zeros(n, width, dtype=torch.long)
    valid = torch.zeros(n, width)
    mask = torch.zeros(n, width)
    old = torch.zeros(n, width)
    truncated = []
    for i, (ti, si, seg) in enumerate(rows):
        c = len(seg)
        ids[i, :c] = torch.tensor(seg.ids, dtype=torch.long)
        mm[i, :c] = torch.tensor(seg.mm, dtype=torch.long)
        valid[i, :c] = 1.0
        mask[i, :c] = torch.tensor(seg.loss_mask)
        old[i, :c] = torch.tensor(seg.logprobs) * mask[i, :c]
        last = [t for t in trajectories[ti].turns if t.segment == si]
        truncated.append(bool(last and last[-1].truncated))
    batch = RowBatch(
        prompts=prompts,
        row_prompt=torch.tensor([where[id(r[2].prompt)] for r in rows], dtype=torch.long),
        ids=ids,
        mm=mm,
        valid=valid,
        mask=mask,
        old_logp=old,
        advantages=torch.zeros(n),
        group_ids=torch.tensor([trajectories[r[0]].group_id for r in rows], dtype=torch.long),
        traj_index=torch.tensor([r[0] for r in rows], dtype=torch.long),
        segment_index=torch.tensor([r[1] for r in rows], dtype=torch.long),
        truncated=torch.tensor(truncated, dtype=torch.bool),
        images=[list(r[2].images) for r in rows],
    )
    if turn_advantages is None:
        return batch
    return with_advantages(batch, trajectories, turn_advantages)


def with_advantages(
    rows: RowBatch,
    trajectories: Sequence[Trajectory],
    turn_advantages: Sequence[Sequence[float]],
) -> RowBatch:
    """``rows`` with each turn's advantage broadcast to the turn's tokens.

    Returns:
        A copy whose ``advantages`` are [N] when each row's policy tokens agree (the usual
        case; GSPO needs it), else [N, T].
    """
    n, width = rows.ids.shape
    adv_t = torch.zeros(n, width)
    for i, (ti, si) in enumerate(
        zip(rows.traj_index.tolist(), rows.segment_index.tolist(), strict=True)
    ):
        traj = trajectories[ti]
        for turn, a in zip(traj.turns, turn_advantages[ti], strict=True):
            if turn.segment == si:
                adv_t[i, turn.start : turn.end] = float(a)
    mask = rows.mask
    pos = (mask > 0).float().argmax(dim=1)  # [N] first policy token of each row
    first = adv_t.gather(1, pos[:, None]).squeeze(1) * (mask.sum(1) > 0)
    uniform = bool(((adv_t - first[:, None]).abs() * mask).max() < 1e-12) if n else True
    return dataclasses.replace(rows, advantages=first if uniform else adv_t)
