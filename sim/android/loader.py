"""Build android-env environments whose simulator may be ours; emulator config passthrough.

android-env's ``loader.load`` matches only its own simulator config types (emulator, fake),
so for :class:`~sim.android.simulator.SyntheticPhoneConfig` and
:class:`~sim.android.simulator.SeededFakeSimulatorConfig` :func:`load` wires the same parts in
the same order (task proto through android-env's task loader, ``TaskManager``,
``DeviceSettings``, ``Coordinator``, ``AndroidEnv``) around our simulator; any other config is
handed to android-env's ``loader.load`` unchanged (the emulator path).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from android_env import environment, loader
from android_env.components import config_classes
from android_env.components import coordinator as coordinator_lib
from android_env.components import device_settings as device_settings_lib
from android_env.components import task_manager as task_manager_lib
from android_env.proto import task_pb2

from sim.android.errors import AndroidConfigError
from sim.android.simulator import (
    SeededFakeSimulator,
    SeededFakeSimulatorConfig,
    SyntheticPhoneConfig,
    SyntheticPhoneSimulator,
)

TASKS_DIR = Path(__file__).parent / "tasks"
DEFAULT_TASK = TASKS_DIR / "phone.textproto"
"""The minimal task textproto shipped with the package."""


def task_config(path: str | Path | None = None) -> config_classes.FilesystemTaskConfig:
    """android-env's ``FilesystemTaskConfig`` for a textproto (default :data:`DEFAULT_TASK`).

    Raises:
        AndroidConfigError: the file does not exist.
    """
    path = Path(path) if path is not None else DEFAULT_TASK
    if not path.is_file():
        raise AndroidConfigError(f"android-env task file {str(path)!r} does not exist")
    return config_classes.FilesystemTaskConfig(path=str(path))


def read_task(config: config_classes.TaskConfig) -> task_pb2.Task:
    """The task proto, parsed by android-env's own task loader."""
    # android-env exposes no public task parser; its loader's is the one load() uses.
    return loader._load_task(config)  # noqa: SLF001


def build(
    config: config_classes.AndroidEnvConfig,
) -> tuple[environment.AndroidEnv, SyntheticPhoneSimulator | SeededFakeSimulator]:
    """An ``AndroidEnv`` around our simulator, and the simulator (for state and seeding).

    Raises:
        AndroidConfigError: ``config.simulator`` is not one of our simulator configs.
    """
    sim_config = config.simulator
    simulator: SyntheticPhoneSimulator | SeededFakeSimulator
    if isinstance(sim_config, SyntheticPhoneConfig):
        simulator = SyntheticPhoneSimulator(sim_config)
    elif isinstance(sim_config, SeededFakeSimulatorConfig):
        simulator = SeededFakeSimulator(sim_config)
    else:
        raise AndroidConfigError(
            f"build() takes SyntheticPhoneConfig or SeededFakeSimulatorConfig, got "
            f"{type(sim_config).__name__}; use load() for android-env's own configs"
        )
    task_manager = task_manager_lib.TaskManager(read_task(config.task), config=config.task_manager)
    device_settings = device_settings_lib.DeviceSettings(simulator)
    coordinator = coordinator_lib.Coordinator(
        simulator, task_manager, device_settings=device_settings, config=config.coordinator
    )
    env = environment.AndroidEnv(
        simulator=simulator, coordinator=coordinator, task_manager=task_manager
    )
    return env, simulator


def load(config: config_classes.AndroidEnvConfig) -> environment.AndroidEnv:
    """An ``AndroidEnv`` for ``config``: ours via :func:`build`, else android-env's loader."""
    if isinstance(config.simulator, (SyntheticPhoneConfig, SeededFakeSimulatorConfig)):
        return build(config)[0]
    return loader.load(config)


def emulator_config(
    avd_name: str,
    *,
    adb_path: str = "~/Android/Sdk/platform-tools/adb",
    emulator_path: str = "~/Android/Sdk/emulator/emulator",
    android_sdk_root: str = "~/Android/Sdk",
    android_avd_home: str = "~/.android/avd",
    grpc_port: int = 0,
    adb_port: int = 0,
    console_port: int = 0,
    adb_server_port: int = 5037,
    run_headless: bool = True,
    snapshot_name: str = "",
) -> config_classes.EmulatorConfig:
    """android-env's ``EmulatorConfig`` from the settings people actually change.

    Ports left at 0 let android-env launch the emulator; with ``grpc_port``, ``adb_port`` and
    ``console_port`` all set it attaches to a running one (android-env's convention).

    Raises:
        AndroidConfigError: an empty AVD name or a port outside [0, 65535].
    """
    if not avd_name and not (grpc_port and adb_port and console_port):
        raise AndroidConfigError(
            "emulator_config: give avd_name, or all three ports of a running emulator"
        )
    ports = {"grpc_port": grpc_port, "adb_port": adb_port, "console_port": console_port}
    for name, port in {**ports, "adb_server_port": adb_server_port}.items():
        if not 0 <= port <= 65535:
            raise AndroidConfigError(f"emulator_config: {name} {port} is not in [0, 65535]")
    launcher = config_classes.EmulatorLauncherConfig(
        emulator_path=emulator_path,
        android_sdk_root=android_sdk_root,
        avd_name=avd_name,
        android_avd_home=android_avd_home,
        snapshot_name=snapshot_name,
        run_headless=run_headless,
        adb_port=adb_port,
        emulator_console_port=console_port,
        grpc_port=grpc_port,
    )
    adb = config_classes.AdbControllerConfig(adb_path=adb_path, adb_server_port=adb_server_port)
    return config_classes.EmulatorConfig(emulator_launcher=launcher, adb_controller=adb)


def emulator_missing(config: config_classes.EmulatorConfig) -> str | None:
    """Why the emulator path cannot run here (missing binary), or ``None`` if it can."""
    adb = os.path.expanduser(config.adb_controller.adb_path)
    if not (Path(adb).is_file() or shutil.which(adb)):
        return f"adb not found at {adb!r}"
    launcher = config.emulator_launcher
    attach = launcher.grpc_port and launcher.adb_port and launcher.emulator_console_port
    emulator = os.path.expanduser(launcher.emulator_path)
    if not attach and not (Path(emulator).is_file() or shutil.which(emulator)):
        return f"emulator not found at {emulator!r}"
    return None
