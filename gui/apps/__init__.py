"""Interactive app tasks: the synthetic phone's task templates, suites, envs and oracle.

Importing this package loads no android-env and no PIL; :mod:`gui.apps.android_env` imports
android-env when used.

>>> from gui.apps import PhoneEnv
>>> env = PhoneEnv()
>>> obs, info = env.reset(seed=0, options={"task_id": "basic-add-contact-0"})
>>> obs["instruction"]
'Add a contact named Ana Lima with phone number 555-0101.'
"""

from __future__ import annotations

from gui.apps.env import PhoneEnv, execute_on_phone, make_phone_desktop_env, make_phone_env
from gui.apps.episode import RewardConfig, TaskBudgetLimit, resolve_task
from gui.apps.errors import AppEnvError, AppsError, TaskSuiteError
from gui.apps.spaces import GuiActionSpace, observation_space
from gui.apps.suite import BUILTIN_SUITES, TaskSpec, TaskSuite, load_suite, load_suites, parse_suite
from gui.apps.tasks import TEMPLATES, PhoneTask, TaskStatus, TaskTemplate, make_task

__all__ = [
    "BUILTIN_SUITES",
    "TEMPLATES",
    "AppEnvError",
    "AppsError",
    "GuiActionSpace",
    "PhoneEnv",
    "PhoneTask",
    "RewardConfig",
    "TaskBudgetLimit",
    "TaskSpec",
    "TaskStatus",
    "TaskSuite",
    "TaskSuiteError",
    "TaskTemplate",
    "execute_on_phone",
    "load_suite",
    "load_suites",
    "make_phone_desktop_env",
    "make_phone_env",
    "make_task",
    "observation_space",
    "parse_suite",
    "resolve_task",
]
