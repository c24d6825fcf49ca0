"""What the policy sees on each turn of an episode, and how a batch of turns is tokenized.

A turn's prompt is one user message: the last ``keep_images`` screenshots (oldest first, the
current screen last) and a text with the instruction and the earlier actions as text, e.g.::

    Task: Turn on Wi-Fi.
    Previous actions: 1. open_app Settings
    The last image is the current screen. Reply with one JSON action.

Screenshots are resized to ``screen_width`` x ``screen_height`` first (fewer visual tokens);
actions are written in the model's coordinate space of the *current* screenshot (``frame``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from perception_tools.geometry import Frame
from vlagent.apps.config import HistoryConfig
from vlagent.batching import PromptBatch, image_frame

SYSTEM_PROMPT = (
    "You operate a phone. Each turn, answer with one JSON action, e.g. "
    '{"action_type":"click","x":500,"y":170}, {"action_type":"open_app","app_name":"Settings"}'
    ' or {"action_type":"status","goal_status":"complete"}. Coordinates are in [0, 1000).'
)


@dataclasses.dataclass(frozen=True)
class TurnContext:
    """Everything one turn's prompt is built from.

    Attributes:
        images: the last k screenshots, uint8 (H, W, 3) each, already resized, current last.
        text: the user text (instruction + past actions).
    """

    images: tuple[np.ndarray, ...]
    text: str


def resize_screen(image: np.ndarray, cfg: HistoryConfig) -> np.ndarray:
    """The screenshot at the configured size (uint8 (h, w, 3)); unchanged when a side is 0."""
    if not cfg.screen_width or not cfg.screen_height:
        return np.asarray(image, dtype=np.uint8)
    from PIL import Image

    pil = Image.fromarray(np.asarray(image, dtype=np.uint8))
    return np.asarray(pil.resize((cfg.screen_width, cfg.screen_height), Image.BILINEAR))


def turn_text(instruction: str, past_actions: Sequence[str], cfg: HistoryConfig) -> str:
    """The user text of a turn: instruction, the most recent past actions, the request."""
    shown = list(past_actions)[-cfg.max_text_turns :] if cfg.max_text_turns else []
    first = len(past_actions) - len(shown) + 1
    listed = "; ".join(f"{first + i}. {a}" for i, a in enumerate(shown)) or "none"
    return (
        f"Task: {instruction}\nPrevious actions: {listed}\n"
        "The last image is the current screen. Reply with one JSON action."
    )


def turn_context(
    instruction: str, screens: Sequence[np.ndarray], past_actions: Sequence[str], cfg: HistoryConfig
) -> TurnContext:
    """The context of the next turn.

    Args:
        instruction: the task instruction.
        screens: every screenshot of the episode so far (resized), the current one last.
        past_actions: text of every earlier action (see ``render_history_action``).
        cfg: history settings.
    """
    images = tuple(screens[-cfg.keep_images :])
    return TurnContext(images=images, text=turn_text(instruction, past_actions, cfg))


def chat_text(processor: Any, ctx: TurnContext, system: str | None = SYSTEM_PROMPT) -> str:
    """The rendered chat prompt (with the generation prompt) of one turn."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in ctx.images]
    content.append({"type": "text", "text": ctx.text})
    msgs: list[dict[str, Any]] = []
    if system:
        msgs.append({"role": "system", "content": [{"type": "text", "text": system}]})
    msgs.append({"role": "user", "content": content})
    return processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)


def encode_turns(
    processor: Any, contexts: Sequence[TurnContext], system: str | None = SYSTEM_PROMPT
) -> PromptBatch:
    """Tokenize B turn prompts (each with 1..k images) through the processor.

    Returns:
        A PromptBatch of B rows (left padded); ``frames[i]`` is the frame of row i's *current*
        (last) screenshot. Rows may hold several images, so do not ``select_prompts`` it.
    """
    from PIL import Image

    texts = [chat_text(processor, c, system) for c in contexts]
    images = [Image.fromarray(im) for c in contexts for im in c.images]
    enc = processor(text=texts, images=images, return_tensors="pt", padding=True)
    frames: list[Frame] = [
        image_frame(processor, c.images[-1].shape[1], c.images[-1].shape[0]) for c in contexts
    ]
    return PromptBatch(inputs=dict(enc), frames=frames)
