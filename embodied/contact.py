"""Let the scene's gripper touch cubes, so that a cube can be pushed.

The ``sim.robot`` gripper collides with nothing (its MJCF sets ``contype = conaffinity = 0``):
a kinematic mocap body pressing on a welded cube jitters, and grasping is a weld, not friction.
For the push task the gripper must move a cube by contact instead, so :func:`enable_pusher`
switches on contacts between the gripper's geoms and the cubes of one scene's model (the push
env also keeps the gripper open, so no weld is ever active together with these contacts).

Contact parameters, measured on 400 straight full-speed pushes (25 layouts x 16 directions,
three actions of 0.05 m at the env's 40 substeps per action; ``solref`` of the pusher wins
through ``priority``):

================================  =============  ===================  ===========
pusher contacts                   went through   slid off sideways    cube tipped
================================  =============  ===================  ===========
none (the scene as it is)         100 %          0 % (never moved)    0 %
MuJoCo default solref 0.02 s      34 %           50 %                 13 %
solref 2 timesteps, margin 0      0 %            8.5 %                1.3 %
solref 2 timesteps, margin 3 mm   0 %            9.2 %                0 %
solref 2 timesteps, margin 5 mm   0 %            18 %                 0.5 %
================================  =============  ===================  ===========

With a 3 mm margin the scripted push controller solves 99 % of 300 episodes within 25 steps
(92 % with no margin, whose more frequent tipping costs re-approaches; 98 % with 5 mm).
Pusher friction 0.1 (instead of the cubes' 1) lets the fingers slide along a cube face rather
than drag it round (27.8 % slid off with friction 1 and a 5 mm margin).
"""

from __future__ import annotations

from sim.robot import RobotScene

PUSHER_GEOMS: tuple[str, ...] = ("gripper_palm", "gripper_finger_l", "gripper_finger_r")
PUSHER_MARGIN = 0.003  # m; contacts start this far out, see the module docstring
PUSHER_FRICTION = 0.1  # sliding friction of pusher-cube contacts


def enable_pusher(scene: RobotScene) -> None:
    """Make the gripper's geoms collide with the cubes of ``scene`` (in place, this model only).

    Sets, for the gripper body and its geoms: ``contype = conaffinity = 1`` (the cubes' and the
    table's group; the workspace floor keeps the fingers above the table), ``solref`` time
    constant ``2 * timestep`` with critical damping, and ``margin = PUSHER_MARGIN``.
    """
    m = scene.model
    body = m.body("gripper").id
    m.body_contype[body] = 1
    m.body_conaffinity[body] = 1
    for name in PUSHER_GEOMS:
        g = m.geom(name).id
        m.geom_contype[g] = 1
        m.geom_conaffinity[g] = 1
        m.geom_solref[g] = (2.0 * m.opt.timestep, 1.0)
        m.geom_margin[g] = PUSHER_MARGIN
        m.geom_friction[g, 0] = PUSHER_FRICTION
        m.geom_priority[g] = 1  # above the cubes' 0: this geom's friction and solref apply
