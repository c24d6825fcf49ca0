"""``RobotScene``: a seeded table-top pick-and-place scene with a mocap suction gripper.

``RobotScene(buttons=True)`` adds the push buttons of :data:`BUTTONS` (the ``press`` task); a
button's travel (how far its cap is pressed down) is :meth:`RobotScene.button_travel`.

Coordinates: world frame in metres, z up, table top at z = 0, origin at the table centre.
Actions: ``(dx, dy, dz, gripper)``, each in [-1, 1] (values outside are clipped);
``dx, dy, dz`` scale to at most ``max_step`` metres per call, the end effector is clipped to
``WORKSPACE_LO``..``WORKSPACE_HI``; ``gripper > 0`` means closed, ``<= 0`` open. Closing (the
open -> closed transition) while a cube's centre is within the grasp region of the end
effector activates that cube's equality weld to the gripper; opening deactivates it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from sim.robot.errors import RobotActionError, RobotSceneError  # noqa: E402
from sim.robot.mjcf import (  # noqa: E402
    BUTTON_RGBA,
    BUTTON_TOP,
    CUBE_HALF,
    CUBE_RGBA,
    FLOOR_Z,
    HOUSING_RADIUS,
    ZONE_HALF,
    ZONE_RGBA,
    scene_xml,
)
from sim.robot.render import OffscreenRenderer  # noqa: E402

CUBES: tuple[str, ...] = tuple(CUBE_RGBA)
ZONES: tuple[str, ...] = tuple(ZONE_RGBA)
BUTTONS: tuple[str, ...] = tuple(BUTTON_RGBA)
FIXED_CAMERAS: tuple[str, ...] = ("front", "top")
CAMERAS: tuple[str, ...] = (*FIXED_CAMERAS, "wrist")  # wrist: rides on the gripper
WORKSPACE_LO = np.array([-0.25, -0.25, CUBE_HALF])
WORKSPACE_HI = np.array([0.25, 0.25, 0.30])
PLACE_LO, PLACE_HI = -0.2, 0.2  # xy range of seeded cube and zone centres, m
GRASP_XY, GRASP_Z = 0.025, 0.035  # grasp region half extents around the end effector, m
EE_HOME = np.array([0.0, 0.0, 0.15])
BUTTON_ZONE_SEP = ZONE_HALF + HOUSING_RADIUS + 0.005  # m, inf-norm, button centre to zone centre
BUTTON_CUBE_SEP = HOUSING_RADIUS + CUBE_HALF * 2**0.5 + 0.01  # m, clear of a cube at any yaw
PARK_XY = ((1.0, -1.5), (1.2, -1.5), (1.4, -1.5))
"""Where cubes left off the table rest (one spot per cube of ``CUBES``): on the floor, behind the
front camera and outside the top camera's view, so no fixed camera sees them (tested)."""
PARK_ZONE_XY = ((-1.0, -1.5), (-1.2, -1.5))
"""Where zones left off the table lie (one spot per zone of ``ZONES``): on the floor, behind the
front camera and outside the top camera's view (tested), away from ``PARK_XY`` so a parked cube
never lies over a parked zone."""
_STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION  # time, qpos, qvel, act, warmstart, mocap, eq


@dataclass(frozen=True)
class SceneSnapshot:
    """Everything that determines the future: MuJoCo integration state, weld data, gripper."""

    state: np.ndarray  # mj_getState(..., mjSTATE_INTEGRATION), float64 (n,)
    eq_data: np.ndarray  # model.eq_data, (n_eq, mjNEQDATA): weld relposes set at grasp time
    closed: bool
    held: int  # index into CUBES, -1 when nothing is held


class RobotScene:
    """Table, mocap gripper, cubes ``CUBES``, target zones ``ZONES`` and, with ``buttons``, the
    push buttons ``BUTTONS``; see the module docstring."""

    def __init__(self, max_step: float = 0.02, substeps: int = 20, buttons: bool = False) -> None:
        if not max_step > 0 or not isinstance(substeps, int) or substeps < 1:
            raise RobotSceneError(
                f"need max_step > 0 and substeps >= 1, got {max_step}, {substeps}"
            )
        self.buttons: tuple[str, ...] = BUTTONS if buttons else ()
        self.model = mujoco.MjModel.from_xml_string(scene_xml(buttons=bool(buttons)))
        self.data = mujoco.MjData(self.model)
        self.max_step = float(max_step)
        self.substeps = substeps
        m = self.model
        self._mocap = {
            name: int(m.body_mocapid[m.body(name).id])
            for name in ("gripper", *(f"zone_{z}" for z in ZONES), *self._button_bodies())
        }
        self._bqadr = [int(m.jnt_qposadr[m.joint(f"button_{b}").id]) for b in self.buttons]
        self._qadr = [int(m.jnt_qposadr[m.joint(f"cube_{c}").id]) for c in CUBES]
        self._dadr = [int(m.jnt_dofadr[m.joint(f"cube_{c}").id]) for c in CUBES]
        self._eq = [m.equality(f"grasp_{c}").id for c in CUBES]
        self._eq_data0 = m.eq_data.copy()
        self._gripper_body = m.body("gripper").id
        self._cube_body = [m.body(f"cube_{c}").id for c in CUBES]
        self._state_size = mujoco.mj_stateSize(m, _STATE_SPEC)
        self._renderer: OffscreenRenderer | None = None
        self.closed = False
        self.held = -1
        self.reset(0)

    def _button_bodies(self) -> tuple[str, ...]:
        return tuple(f"button_{b}" for b in self.buttons)

    # ----------------------------------------------------------------------------- reset
    def reset(
        self,
        seed: int,
        cubes: Sequence[str] | None = None,
        zones: Sequence[str] | None = None,
    ) -> None:
        """Place zones and cubes at seeded, non-overlapping xy positions; same seed, same state.

        ``cubes`` names the cubes on the table (None: all of ``CUBES``); the others rest on the
        floor at ``PARK_XY``, out of every fixed camera's view. ``zones`` likewise names the
        zones on the table (None: all of ``ZONES``); the others lie on the floor at
        ``PARK_ZONE_XY``. The seeded draws do not depend on ``cubes`` or ``zones``: an object on
        the table sits where it sits in the full scene of that seed (and cubes and buttons keep
        clear of every zone's drawn place, parked or not).
        """
        on_table = CUBES if cubes is None else tuple(cubes)
        unknown = [c for c in on_table if c not in CUBES]
        if unknown or len(set(on_table)) != len(on_table):
            raise RobotSceneError(
                f"cubes must be distinct names of {list(CUBES)}, got {list(on_table)}"
            )
        zones_on = ZONES if zones is None else tuple(zones)
        unknown = [z for z in zones_on if z not in ZONES]
        if unknown or len(set(zones_on)) != len(zones_on):
            raise RobotSceneError(
                f"zones must be distinct names of {list(ZONES)}, got {list(zones_on)}"
            )
        rng = np.random.default_rng(seed)
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        m.eq_data[:] = self._eq_data0
        d.eq_active[:] = 0
        self.closed, self.held = False, -1
        zone_xy: list[np.ndarray] = []
        for _ in ZONES:
            zone_xy.append(_sample(rng, zone_xy, 2 * ZONE_HALF + 0.03, [], 0.0))
        cube_xy: list[np.ndarray] = []
        for _ in CUBES:
            cube_xy.append(_sample(rng, cube_xy, 4 * CUBE_HALF, zone_xy, ZONE_HALF + 2 * CUBE_HALF))
        for i, (name, xy) in enumerate(zip(ZONES, zone_xy, strict=True)):
            if name in zones_on:
                d.mocap_pos[self._mocap[f"zone_{name}"]] = [xy[0], xy[1], 0.0005]
            else:
                d.mocap_pos[self._mocap[f"zone_{name}"]] = [*PARK_ZONE_XY[i], FLOOR_Z + 0.0005]
        for i, xy in enumerate(cube_xy):
            yaw = rng.uniform(0.0, np.pi / 2)
            a = self._qadr[i]
            if CUBES[i] in on_table:
                d.qpos[a : a + 3] = [xy[0], xy[1], CUBE_HALF]
            else:
                d.qpos[a : a + 3] = [*PARK_XY[i], FLOOR_Z + CUBE_HALF]
            d.qpos[a + 3 : a + 7] = [np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]
        # buttons draw after everything else, so the other objects' layout is the same as in
        # the scene without buttons at every seed
        placed: list[np.ndarray] = []
        for name in self.buttons:
            xy = _sample(rng, placed, 2 * HOUSING_RADIUS + 0.02, zone_xy, BUTTON_ZONE_SEP, cube_xy)
            placed.append(xy)
            d.mocap_pos[self._mocap[f"button_{name}"]] = [xy[0], xy[1], 0.0]
        d.mocap_pos[self._mocap["gripper"]] = EE_HOME
        mujoco.mj_forward(m, d)

    # ---------------------------------------------------------------------------- acting
    def apply(self, action: Sequence[float] | np.ndarray, substeps: int | None = None) -> None:
        """Move the end effector by ``action[:3] * max_step`` (clipped), set the gripper, step.

        ``substeps``: MuJoCo steps the move is spread over (None: the scene's ``substeps``); a
        long move spread over more of them is slower, so it pushes cubes instead of flinging them.
        """
        if substeps is not None and (
            isinstance(substeps, bool) or not isinstance(substeps, int) or substeps < 1
        ):
            raise ValueError(f"substeps must be None or an int >= 1, got {substeps!r}")
        n = self.substeps if substeps is None else substeps
        a = _check_action(action)
        d = self.data
        g = self._mocap["gripper"]
        start = d.mocap_pos[g].copy()
        target = np.clip(start + a[:3] * self.max_step, WORKSPACE_LO, WORKSPACE_HI)
        closed = bool(a[3] > 0)
        if closed and not self.closed:
            self._grasp()
        elif not closed and self.closed and self.held >= 0:
            d.eq_active[self._eq[self.held]] = 0
            self.held = -1
        self.closed = closed
        for k in range(n):
            d.mocap_pos[g] = start + (target - start) * ((k + 1) / n)
            mujoco.mj_step(self.model, d)

    def _grasp(self) -> None:
        """Weld the nearest cube inside the grasp region to the gripper, at its current pose."""
        ee = self.ee_position()
        best, best_dist = -1, np.inf
        for i, pos in enumerate(self.cube_positions().values()):
            off = pos - ee
            inside = bool(np.all(np.abs(off[:2]) <= GRASP_XY)) and abs(off[2]) <= GRASP_Z
            if inside and (dist := float(np.linalg.norm(off))) < best_dist:
                best, best_dist = i, dist
        if best < 0:
            return
        d, m = self.data, self.model
        mujoco.mj_forward(m, d)  # xpos/xquat of the mocap body follow mocap_pos after forward
        gp, gq = d.xpos[self._gripper_body], d.xquat[self._gripper_body]
        cp, cq = d.xpos[self._cube_body[best]], d.xquat[self._cube_body[best]]
        inv_gq = np.empty(4)
        mujoco.mju_negQuat(inv_gq, gq)
        rel_pos, rel_quat = np.empty(3), np.empty(4)
        mujoco.mju_rotVecQuat(rel_pos, cp - gp, inv_gq)
        mujoco.mju_mulQuat(rel_quat, inv_gq, cq)
        eq = self._eq[best]
        m.eq_data[eq, 0:3] = 0.0  # anchor at the gripper origin
        m.eq_data[eq, 3:6] = rel_pos  # pose of body2 (cube) in body1 (gripper) frame
        m.eq_data[eq, 6:10] = rel_quat
        d.eq_active[eq] = 1
        self.held = best

    # ------------------------------------------------------------------------- snapshots
    def snapshot(self) -> SceneSnapshot:
        """Copy of the full simulation state (see :class:`SceneSnapshot`)."""
        state = np.empty(self._state_size)
        mujoco.mj_getState(self.model, self.data, state, _STATE_SPEC)
        return SceneSnapshot(state, self.model.eq_data.copy(), self.closed, self.held)

    def restore(self, snap: SceneSnapshot) -> None:
        """Return to ``snap``; the same actions afterwards give bit-identical states."""
        if not isinstance(snap, SceneSnapshot) or snap.state.shape != (self._state_size,):
            raise RobotSceneError(
                "restore() needs a SceneSnapshot taken from a RobotScene with the same buttons"
            )
        if snap.eq_data.shape != self.model.eq_data.shape:
            raise RobotSceneError("snapshot eq_data shape does not match this scene")
        mujoco.mj_setState(self.model, self.data, snap.state, _STATE_SPEC)
        self.model.eq_data[:] = snap.eq_data
        self.closed, self.held = snap.closed, snap.held
        mujoco.mj_forward(self.model, self.data)
        # mujoco < 3.17's mj_forward overwrites qacc_warmstart; set the state again so replays
        # stay bit-identical on every mujoco the extras pin (3.3.0 for Meta-World / LIBERO).
        mujoco.mj_setState(self.model, self.data, snap.state, _STATE_SPEC)

    # ---------------------------------------------------------------------------- reading
    def ee_position(self) -> np.ndarray:
        """End-effector (gripper origin) position, world frame, m, shape (3,)."""
        return self.data.mocap_pos[self._mocap["gripper"]].copy()

    def cube_positions(self) -> dict[str, np.ndarray]:
        """Cube centre positions, world frame, m: ``{name: (3,)}`` in ``CUBES`` order."""
        return {c: self.data.qpos[a : a + 3].copy() for c, a in zip(CUBES, self._qadr, strict=True)}

    def button_tops(self) -> dict[str, np.ndarray]:
        """Centre of each button cap's top face now (it moves down when pressed), world frame,
        m: ``{name: (3,)}`` in ``BUTTONS`` order; empty without buttons."""
        out = {}
        for name, a in zip(self.buttons, self._bqadr, strict=True):
            base = self.data.mocap_pos[self._mocap[f"button_{name}"]]
            out[name] = base + np.array([0.0, 0.0, BUTTON_TOP + self.data.qpos[a]])
        return out

    def button_travel(self, button: str) -> float:
        """How far ``button``'s cap is pressed down from rest, m (0 at rest, >= 0)."""
        if button not in self.buttons:
            raise RobotSceneError(
                f"unknown button {button!r}; this scene's buttons are {list(self.buttons)}"
                + ("" if self.buttons else " (build it with RobotScene(buttons=True))")
            )
        return max(0.0, -float(self.data.qpos[self._bqadr[self.buttons.index(button)]]))

    def zone_positions(self) -> dict[str, np.ndarray]:
        """Zone centre positions, world frame, m: ``{name: (3,)}`` in ``ZONES`` order."""
        return {z: self.data.mocap_pos[self._mocap[f"zone_{z}"]].copy() for z in ZONES}

    def in_zone(self, cube: str, zone: str) -> bool:
        """True when ``cube`` rests on the table (not held) with its centre over ``zone``."""
        if cube not in CUBES:
            raise RobotSceneError(f"unknown cube {cube!r}; cubes are {list(CUBES)}")
        if zone not in ZONES:
            raise RobotSceneError(f"unknown zone {zone!r}; zones are {list(ZONES)}")
        pos = self.cube_positions()[cube]
        off = pos[:2] - self.zone_positions()[zone][:2]
        resting = pos[2] <= CUBE_HALF + 0.01 and self.held != CUBES.index(cube)
        return bool(np.all(np.abs(off) <= ZONE_HALF) and resting)

    # -------------------------------------------------------------------------- rendering
    def render(self, width: int = 224, height: int = 224, camera: str = "front") -> np.ndarray:
        """RGB frame, uint8 (height, width, 3), from camera ``camera`` (one of ``CAMERAS``)."""
        if camera not in CAMERAS:
            raise RobotSceneError(f"unknown camera {camera!r}; cameras are {list(CAMERAS)}")
        if self._renderer is None:
            self._renderer = OffscreenRenderer(self.model)
        return self._renderer.render(self.data, width, height, camera)

    def close(self) -> None:
        """Free GL contexts (the scene stays usable; a later render makes new ones)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


def _check_action(action: Sequence[float] | np.ndarray) -> np.ndarray:
    """Validate and clip an action to a float64 (4,) array in [-1, 1]."""
    try:
        a = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise RobotActionError(f"action must be 4 numbers (dx, dy, dz, gripper): {exc}") from exc
    if a.shape != (4,):
        raise RobotActionError(
            f"action must have exactly 4 values (dx, dy, dz, gripper), got shape {a.shape}"
        )
    bad = [i for i in range(4) if not np.isfinite(a[i])]
    if bad:
        names = ", ".join(f"{('dx', 'dy', 'dz', 'gripper')[i]}={a[i]}" for i in bad)
        raise RobotActionError(f"action has non-finite values (NaN or inf): {names}")
    return np.clip(a, -1.0, 1.0)


def _sample(
    rng: np.random.Generator,
    same: list[np.ndarray],
    min_sep: float,
    avoid: list[np.ndarray],
    avoid_sep: float,
    cubes: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """Draw an xy in the placement square at least ``min_sep`` (inf-norm) from ``same``,
    ``avoid_sep`` from ``avoid`` and ``BUTTON_CUBE_SEP`` from ``cubes``."""
    for _ in range(1000):
        xy = rng.uniform(PLACE_LO, PLACE_HI, size=2)
        if (
            all(np.max(np.abs(xy - o)) >= min_sep for o in same)
            and all(np.max(np.abs(xy - o)) >= avoid_sep for o in avoid)
            and all(np.max(np.abs(xy - o)) >= BUTTON_CUBE_SEP for o in cubes)
        ):
            return xy
    raise RobotSceneError("could not place objects without overlap in 1000 draws")
