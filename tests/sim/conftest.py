"""Load triton before the robot scene's renderer: see ``tests/embodied/conftest.py``."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("triton") is not None:
    import torch._dynamo  # noqa: F401
