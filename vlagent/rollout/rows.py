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
        group_ids: [N] GRPO group of each row's trajectory; traj_index: [N] its trajectory.
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
            tokens); None gives advantage 0 (SFT).
        pad_id: padding id of the continuations.
    """
    prompts: list[Prompt] = []
    where: dict[int, int] = {}
    rows = []  # (traj index, segment, per-token advantage list)
    for ti, traj in enumerate(trajectories):
        if traj.error is not None:
            continue
        for si, seg in enumerate(traj.segments):
            if not any(seg.loss_mask):
                continue
            adv = [0.0] * len(seg)
            if turn_advantages is not None:
                for turn, a in zip(traj.turns, turn_advantages[ti], strict=True):
                    if turn.segment == si:
                        adv[turn.start : turn.end] = [float(a)] * (turn.end - turn.start)
            if id(seg.prompt) not in where:
                where[id(seg.prompt)] = len(prompts)
                prompts.append(seg.prompt)
            last = [t for t in traj.turns if t.segment == si]
            rows.append((ti, seg, adv, bool(last and last[-1].truncated)))
    n = len(rows)
    width = max((len(r[1]) for r in rows), default=1)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    mm = torch.zeros(n, width, dtype=torch.long)
    valid = torch.zeros(n, width)
    mask = torch.zeros(n, width)
    old = torch.zeros(n, width)
    adv_t = torch.zeros(n, width)
    for i, (_, seg, adv, _) in enumerate(rows):
        c = len(seg)
        ids[i, :c] = torch.tensor(seg.ids, dtype=torch.long)
        mm[i, :c] = torch.tensor(seg.mm, dtype=torch.long)
        valid[i, :c] = 1.0
        mask[i, :c] = torch.tensor(seg.loss_mask)
        old[i, :c] = torch.tensor(seg.logprobs) * mask[i, :c]
        adv_t[i, :c] = torch.tensor(adv)
    # Collapse to one advantage per row when each row's policy tokens agree (GSPO needs it).
    pos = (mask > 0).float().argmax(dim=1)  # [N] first policy token of each row
    first = adv_t.gather(1, pos[:, None]).squeeze(1) * (mask.sum(1) > 0)
    uniform = bool(((adv_t - first[:, None]).abs() * mask).max() < 1e-12) if n else True
    return RowBatch(
        prompts=prompts,
        row_prompt=torch.tensor([where[id(r[1].prompt)] for r in rows], dtype=torch.long),
        ids=ids,
        mm=mm,
        valid=valid,
        mask=mask,
        old_logp=old,
        advantages=first if uniform else adv_t,
        group_ids=torch.tensor([trajectories[r[0]].group_id for r in rows], dtype=torch.long),
        traj_index=torch.tensor([r[0] for r in rows], dtype=torch.long),
        truncated=torch.tensor([r[3] for r in rows], dtype=torch.bool),
        images=[list(r[1].images) for r in rows],
    )
