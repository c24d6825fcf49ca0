"""Load triton before any MuJoCo renderer (here and in ``tests/sim/conftest.py``).

Import order: triton's ``libtriton.so`` (loaded by ``torch._dynamo``, which transformers'
generation code imports) segfaults when it is loaded after Mesa's EGL / OSMesa has been
initialized in the same process (both bring their own LLVM). ``vlagent`` loads the policy before
any MuJoCo renderer, so real runs never meet this; a test session that renders a scene before
its first model load would. Loading it first in the folders whose tests render makes the
suite independent of file order (e.g. ``pytest tests/embodied tests/vlagent/worlds/test_robot_world.py``). It lives in
these folders, not in ``tests/conftest.py``: ``--doctest-modules`` collects that file as a
module named ``conftest`` after ``tests/bench/conftest.py`` took the name.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("triton") is not None:
    import torch._dynamo  # noqa: F401
