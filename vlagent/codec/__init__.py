"""Codecs: model text <-> actions and answers, per model family's coordinate convention."""

from vlagent.codec.grounding import (
    ANSWER_FORMATS,
    Answer,
    AnswerFormat,
    GroundingCodec,
    ParseError,
    coord_space_for,
)
from vlagent.codec.gui_actions import ACTION_STYLES, ActionStyle, GuiActionCodec

__all__ = [
    "ACTION_STYLES",
    "ANSWER_FORMATS",
    "ActionStyle",
    "Answer",
    "AnswerFormat",
    "GroundingCodec",
    "GuiActionCodec",
    "ParseError",
    "coord_space_for",
]
