"""The MJCF text of the table-top scene (no asset files).

World frame: metres, z up, table top at ``z = 0``, table centred on the origin. The gripper, the
two target zones and the button housings are mocap bodies, so their poses live in
``MjData.mocap_pos`` (part of the state a snapshot saves) rather than in the model.

Contact groups: the table and the cubes collide with each other (``contype = conaffinity = 1``);
the zones collide with nothing. In the default scene the gripper collides with nothing either.
Grasping is an equality weld between the gripper body and a cube, switched on by the scene (a
suction-style gripper), which avoids the jitter of a kinematic mocap body pushing against a
welded cube.

The button scene (``scene_xml(buttons=True)``, the ``press`` task) adds ``BUTTONS``: each is a
mocap housing on the table with a cap on a vertical slide joint (a spring holds it up, travel
``BUTTON_TRAVEL``). The caps and, in that scene only, the gripper's geoms use contact group 2,
so the fingers press caps and still pass through cubes and the table. A cap's rest top is low
enough that the fingers, at the workspace floor, push it exactly to the end of its travel: the
joint limit never has to fight the kinematic gripper.

The ``wrist`` camera rides on the gripper body (a camera adds no physics: every scene's state
and fixed-camera images are the same as without it).
"""

from __future__ import annotations

CUBE_HALF = 0.02  # cube half side, m
ZONE_HALF = 0.05  # target zone half side, m
TABLE_HALF = 0.35  # table half side, m
FINGER_TIP = 0.01  # m, the fingers' lowest point below the end effector (gripper origin)
FLOOR_Z = -0.4  # m, the floor plane under the table (where cubes and zones off the table rest)

CUBE_RGBA = {"red": "0.85 0.1 0.1 1", "green": "0.1 0.75 0.15 1", "blue": "0.1 0.2 0.85 1"}
ZONE_RGBA = {"green": "0.45 0.9 0.45 1", "blue": "0.45 0.55 0.95 1"}
BUTTON_RGBA = {"yellow": "0.95 0.85 0.1 1", "purple": "0.6 0.15 0.75 1", "cyan": "0.1 0.8 0.85 1"}

BUTTON_RADIUS = 0.034  # cap radius, m: the fingers (x = +-0.02 about the gripper) land on it
HOUSING_RADIUS = 0.04  # housing radius, m
HOUSING_HEIGHT = 0.012  # housing height above the table, m
CAP_HALF = 0.008  # cap half height, m
BUTTON_TOP = 0.035  # m, the cap's top face above the table at rest (spring relaxed)
BUTTON_TRAVEL = BUTTON_TOP - (CUBE_HALF - FINGER_TIP)  # 0.025 m: to the fingers at the floor
# (the workspace floor is end effector z = CUBE_HALF, so the fingers reach down to z = 0.01)
BUTTON_STIFFNESS = 50.0  # N/m, the spring that holds the cap up
WRIST_CAMERA = 'pos="0 -0.05 0.1" xyaxes="1 0 0 0 0.707 0.707" fovy="75"'  # down, 45 deg forward


def _cube(name: str, x: float) -> str:
    return f"""
    <body name="cube_{name}" pos="{x} 0 {CUBE_HALF}">
      <freejoint name="cube_{name}"/>
      <geom name="cube_{name}" type="box" size="{CUBE_HALF} {CUBE_HALF} {CUBE_HALF}"
            rgba="{CUBE_RGBA[name]}" mass="0.05" friction="1 0.01 0.001"/>
    </body>"""


def _zone(name: str, x: float) -> str:
    return f"""
    <body name="zone_{name}" mocap="true" pos="{x} 0.15 0.0005">
      <geom name="zone_{name}" type="box" size="{ZONE_HALF} {ZONE_HALF} 0.0005"
            rgba="{ZONE_RGBA[name]}" contype="0" conaffinity="0"/>
    </body>"""


def _button(name: str, x: float) -> str:
    """Housing (mocap, visual only) with a sprung cap on a slide joint; joint qpos = -travel."""
    return f"""
    <body name="button_{name}" mocap="true" pos="{x} -0.15 0">
      <geom name="housing_{name}" type="cylinder" size="{HOUSING_RADIUS} {HOUSING_HEIGHT / 2}"
            pos="0 0 {HOUSING_HEIGHT / 2}" rgba="0.2 0.2 0.22 1" contype="0" conaffinity="0"/>
      <body name="cap_{name}" pos="0 0 {BUTTON_TOP - CAP_HALF}" gravcomp="1">
        <joint name="button_{name}" type="slide" axis="0 0 1" limited="true"
               range="{-BUTTON_TRAVEL} 0" stiffness="{BUTTON_STIFFNESS}" damping="2"
               solreflimit="0.004 1"/>
        <geom name="cap_{name}" type="cylinder" size="{BUTTON_RADIUS} {CAP_HALF}" mass="0.02"
              rgba="{BUTTON_RGBA[name]}" contype="2" conaffinity="2" solref="0.004 1" priority="1"
              friction="0.1 0.005 0.0001"/>
      </body>
    </body>"""


def _weld(name: str) -> str:
    return f'<weld name="grasp_{name}" body1="gripper" body2="cube_{name}" active="false"/>'


def scene_xml(buttons: bool = False) -> str:
    """Return the MJCF string: table, mocap gripper (with the ``wrist`` camera), cubes
    red/green/blue, zones green/blue, and with ``buttons`` the buttons of ``BUTTON_RGBA``."""
    cubes = "".join(_cube(n, x) for n, x in zip(CUBE_RGBA, (-0.1, 0.0, 0.1), strict=True))
    zones = "".join(_zone(n, x) for n, x in zip(ZONE_RGBA, (-0.1, 0.1), strict=True))
    welds = "\n    ".join(_weld(n) for n in CUBE_RGBA)
    extra = ""
    group = 'contype="0" conaffinity="0"'
    if buttons:
        extra = "".join(_button(n, x) for n, x in zip(BUTTON_RGBA, (-0.1, 0.0, 0.1), strict=True))
        group = 'contype="2" conaffinity="2"'
    return f"""
<mujoco model="vlagent_tabletop">
  <option timestep="0.002" integrator="implicitfast"/>
  <visual>
    <global offwidth="640" offheight="640"/>
    <quality shadowsize="0"/>
  </visual>
  <worldbody>
    <light name="top" pos="0 0 1.5" dir="0 0 -1" diffuse="0.8 0.8 0.8" castshadow="false"/>
    <camera name="front" pos="0 -0.62 0.52" xyaxes="1 0 0 0 0.64 0.77"/>
    <camera name="top" pos="0 0 0.75" xyaxes="1 0 0 0 1 0"/>
    <geom name="floor" type="plane" pos="0 0 {FLOOR_Z}" size="2 2 0.1" rgba="0.3 0.3 0.3 1"/>
    <geom name="table" type="box" pos="0 0 -0.02" size="{TABLE_HALF} {TABLE_HALF} 0.02"
          rgba="0.75 0.65 0.5 1" friction="1 0.01 0.001"/>
    <body name="gripper" mocap="true" pos="0 0 0.15">
      <geom name="gripper_palm" type="box" size="0.025 0.012 0.006" pos="0 0 0.03"
            rgba="0.35 0.35 0.38 1" {group}/>
      <geom name="gripper_finger_l" type="box" size="0.004 0.01 0.02" pos="-0.02 0 0.01"
            rgba="0.35 0.35 0.38 1" {group}/>
      <geom name="gripper_finger_r" type="box" size="0.004 0.01 0.02" pos="0.02 0 0.01"
            rgba="0.35 0.35 0.38 1" {group}/>
      <site name="ee" pos="0 0 0" size="0.005" rgba="1 1 0 1"/>
      <camera name="wrist" {WRIST_CAMERA}/>
    </body>{zones}{cubes}{extra}
  </worldbody>
  <equality>
    {welds}
  </equality>
</mujoco>
"""
