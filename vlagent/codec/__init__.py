"""Codecs: model text <-> actions and answers, per model family's coordinate convention."""

from vlagent.codec.grounding import (
    ANSWER_FORMATS,
    Answer,
    AnswerFormat,
    GroundingCodec,
    ParseError,
    coord_space_for,
)

__all__ = [
    "ANSWER_FORMATS",
    "Answer",
    "AnswerFormat",
    "GroundingCodec",
    "ParseError",
    "coord_space_for",
]
