"""The robot and its surroundings, as pure numpy: what one joint command means.

* ``kinematics``: the PiPER chain (config/piper/kinematics.json), forward kinematics, the
  SDK's DH table, joint limits, damped-least-squares IK, rotation helpers;
* ``workcell``: where the two arms stand, the table height, the home command;
* ``cameras``: the three cameras' mounts and their pinhole models at a joint state;
* ``world``: world-state snapshots (objects and tool centre points);
* ``episode_record``: those snapshots over an episode (the scorers' input), saved and loaded;
* ``limits``: joint-range, gripper and per-tick step rules (config/piper_safety.yaml), shared
  by the sim and the real arm's safety filter.

May import: ``vla_bridge.contract``, ``vla_bridge.paths``. No rclpy, no simulator, nothing
from ``ros``, ``benchmarks`` or ``evaluation``.
"""
