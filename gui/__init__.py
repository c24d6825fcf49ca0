"""GUI environments (gymnasium), registered by string entry point.

Importing ``gui`` registers the env ids and loads nothing else: no PIL, no renderer, no
emulator. ``gymnasium.make("vlagent/GroundingSynthetic-v0", level="widgets")`` builds one.
"""

from __future__ import annotations

import gymnasium

_ENVS: dict[str, tuple[str, dict[str, object]]] = {
    "vlagent/GroundingSynthetic-v0": (
        "gui.grounding.env:make_synthetic_env",
        {"level": "basic"},
    ),
    "vlagent/GroundingScreenSpot-v0": ("gui.grounding.env:make_screenspot_env", {}),
    "vlagent/Phone-v0": ("gui.apps.env:make_phone_env", {}),
    "vlagent/PhoneDesktop-v0": ("gui.apps.env:make_phone_desktop_env", {}),
    "vlagent/AndroidFake-v0": ("gui.apps.android_env:make_android_fake_env", {}),
    "vlagent/AndroidSynthetic-v0": ("gui.apps.android_env:make_android_synthetic_env", {}),
    "vlagent/DesktopOSWorld-v0": ("gui.osworld.env:DesktopEnv", {"tasks": "local"}),
    "vlagent/MiniWoB-v0": ("gui.web.miniwob_env:MiniWoBEnv", {}),
}

for _env_id, (_entry_point, _kwargs) in _ENVS.items():
    if _env_id not in gymnasium.registry:
        gymnasium.register(id=_env_id, entry_point=_entry_point, kwargs=dict(_kwargs))


def registered_env_ids() -> tuple[str, ...]:
    """Ids of the envs this package registers with gymnasium.

    >>> registered_env_ids()[:2]
    ('vlagent/GroundingSynthetic-v0', 'vlagent/GroundingScreenSpot-v0')
    """
    return tuple(_ENVS)
