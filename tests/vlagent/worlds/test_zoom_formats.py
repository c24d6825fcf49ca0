"""Every answer format of the codec has a zoom-world answer hint (a format without one made
the zoom world raise KeyError when tools were on)."""

from __future__ import annotations

import pytest

from vlagent.codec.grounding import ANSWER_FORMATS
from vlagent.world_config import ToolsConfig
from vlagent.worlds.zoom import system_prompt


@pytest.mark.parametrize("fmt", ANSWER_FORMATS)
@pytest.mark.parametrize("style", ["schema", "short"])
def test_every_format_has_a_tool_prompt(fmt, style):
    text = system_prompt(ToolsConfig(system_prompt=style), fmt)
    assert text and "latest image" in text
