"""Web GUI environments: MiniWoB++ tasks in headless Chromium (``MiniWoBEnv``).

Importing ``gui.web`` registers ``vlagent/MiniWoB-v0`` and loads nothing else (no selenium, no
miniwob, no browser): ``gymnasium.make("vlagent/MiniWoB-v0", tasks="miniwob")`` builds one.
Needs ``apt-get install -y chromium chromium-driver; pip install 'vlagent[web]'``.
"""

from __future__ import annotations

import gymnasium

from gui.web.errors import WebBackendError, WebError, WebTaskError, WebUnavailable
from gui.web.suite import MINIWOB_SUITE, task_ids

ENV_ID = "vlagent/MiniWoB-v0"
"""Gymnasium id of :class:`gui.web.miniwob_env.MiniWoBEnv`."""

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="gui.web.miniwob_env:MiniWoBEnv")

__all__ = [
    "ENV_ID",
    "MINIWOB_SUITE",
    "WebBackendError",
    "WebError",
    "WebTaskError",
    "WebUnavailable",
    "task_ids",
]
