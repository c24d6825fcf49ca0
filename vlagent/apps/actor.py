"""The VLM actor: batched prompts → sampled text (+ behaviour log-probs) → GUI actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gui.apps.oracle import parse_a11y
from vlagent.apps.history import SYSTEM_PROMPT, TurnContext, encode_turns
from vlagent.apps.rollout import Decision, Episode
from vlagent.codec.gui_actions import GuiActionCodec
from vlagent.rollout.hf import generate


def element_boxes(obs: dict[str, Any]) -> list[tuple[float, float, float, float]] | None:
    """Normalized boxes of the observation's a11y elements (for AndroidWorld ``index``)."""
    text = obs.get("a11y")
    if not isinstance(text, str):
        return None
    try:
        _, elements = parse_a11y(text)
    except ValueError:
        return None
    return [tuple(e.box) for e in elements if len(e.box) == 4]  # type: ignore[misc]


class VLMActor:
    """Samples one completion per active episode from a policy and parses it.

    Args:
        policy: a loaded ``Policy``.
        codec: text <-> action codec (its space must match ``policy.family``).
        temperature: sampling temperature (ignored when ``greedy``).
        max_new_tokens: completion budget per turn.
        greedy: argmax decoding (evaluation).
        seed: seeds the sampler; each turn uses the next seed.
        system: system prompt of every turn.
    """

    def __init__(
        self,
        policy: Any,
        codec: GuiActionCodec | None = None,
        *,
        temperature: float = 1.0,
        max_new_tokens: int = 32,
        greedy: bool = False,
        seed: int = 0,
        system: str | None = SYSTEM_PROMPT,
    ) -> None:
        self.policy = policy
        self.codec = codec or GuiActionCodec.for_family(policy.family)
        self.temperature, self.max_new_tokens, self.greedy = temperature, max_new_tokens, greedy
        self.seed, self.system = seed, system
        self._calls = 0

    def act(
        self,
        episodes: Sequence[Episode],
        contexts: Sequence[TurnContext],
        observations: Sequence[dict[str, Any]],
    ) -> list[Decision]:
        prompts = encode_turns(self.policy.processor, contexts, self.system)
        roll = generate(
            self.policy,
            prompts,
            group_size=1,
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            greedy=self.greedy,
            generator_seed=self.seed * 100_003 + self._calls,
        )
        self._calls += 1
        out = []
        tok = self.policy.tokenizer
        for i, obs in enumerate(observations):
            # the policy tokens are the prefix up to eos (a sampled pad token also ends it)
            n = int(roll.mask[i].cumprod(0).sum())
            ids = roll.completion_ids[i, :n].tolist()
            text = tok.decode(ids, skip_special_tokens=True)
            frame = prompts.frames[i]
            out.append(
                Decision(
                    text=text,
                    action=self.codec.parse(text, frame, element_boxes(obs)),
                    completion_ids=ids,
                    logprobs=roll.behaviour_logprobs[i, :n].tolist(),
                    frame=frame,
                )
            )
        return out
