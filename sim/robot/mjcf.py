"""The MJCF text of the table-top scene (no asset files).

World frame: metres, z up, table top at ``z = 0``, table centred on the origin. The gripper and
the two target zones are mocap bodies, so their poses live in ``MjData.mocap_pos`` (part of the
state a snapshot saves) rather than in the model.

Contact groups: the table and the cubes collide with each other (``contype = conaffinity = 1``);
the gripper and the zones collide with nothing. Grasping is an equality weld between the gripper
body and a cube, switched on by the scene (a suction-style gripper), which avoids the jitter of
a kinematic mocap body pushing against a welded cube.
"""

from __future__ import annotations

CUBE_HALF = 0.02  # cube half side, m
ZONE_HALF = 0.05  # target zone half side, m
TABLE_HALF = 0.35  # table half side, m

CUBE_RGBA = {"red": "0.85 0.1 0.1 1", "green": "0.1 0.75 0.15 1", "blue": "0.1 0.2 0.85 1"}
ZONE_RGBA = {"green": "0.45 0.9 0.45 1", "blue": "0.45 0.55 0.95 1"}


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


def _weld(name: str) -> str:
    return f'<weld name="grasp_{name}" body1="gripper" body2="cube_{name}" active="false"/>'


def scene_xml() -> str:
    """Return the MJCF string: table, mocap gripper, cubes red/green/blue, zones green/blue."""
    cubes = "".join(_cube(n, x) for n, x in zip(CUBE_RGBA, (-0.1, 0.0, 0.1), strict=True))
    zones = "".join(_zone(n, x) for n, x in zip(ZONE_RGBA, (-0.1, 0.1), strict=True))
    welds = "\n    ".join(_weld(n) for n in CUBE_RGBA)
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
    <geom name="floor" type="plane" pos="0 0 -0.4" size="2 2 0.1" rgba="0.3 0.3 0.3 1"/>
    <geom name="table" type="box" pos="0 0 -0.02" size="{TABLE_HALF} {TABLE_HALF} 0.02"
          rgba="0.75 0.65 0.5 1" friction="1 0.01 0.001"/>
    <body name="gripper" mocap="true" pos="0 0 0.15">
      <geom name="gripper_palm" type="box" size="0.025 0.012 0.006" pos="0 0 0.03"
            rgba="0.35 0.35 0.38 1" contype="0" conaffinity="0"/>
      <geom name="gripper_finger_l" type="box" size="0.004 0.01 0.02" pos="-0.02 0 0.01"
            rgba="0.35 0.35 0.38 1" contype="0" conaffinity="0"/>
      <geom name="gripper_finger_r" type="box" size="0.004 0.01 0.02" pos="0.02 0 0.01"
            rgba="0.35 0.35 0.38 1" contype="0" conaffinity="0"/>
      <site name="ee" pos="0 0 0" size="0.005" rgba="1 1 0 1"/>
    </body>{zones}{cubes}
  </worldbody>
  <equality>
    {welds}
  </equality>
</mujoco>
"""
