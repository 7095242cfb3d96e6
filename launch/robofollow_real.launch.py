"""RoboFollow pilot trials on the real PiPER pair, for a ROS 2 install: PiPER node + RealSense
node + marker tracker + policy node + evaluator.

    ros2 launch vla_bridge robofollow_real.launch.py tasks:=L0_pickup_yellow_block_3 rounds:=5 \
        camera_serials:=cam_high:SERIAL,cam_left_wrist:SERIAL,cam_right_wrist:SERIAL

The arguments, nodes and params file come from vla_bridge.ros.launch_args (the same table the
package's own launcher, `vla-bridge launch robofollow_real`, uses), params from
config/robofollow_real.yaml. The graph ends when the evaluator exits. Same structure as
robofollow_sim.launch.py (docs/real_hardware.md is the runbook).
"""
from vla_bridge.ros.launch_args import ROBOFOLLOW_REAL
from vla_bridge.ros.ros_launch import graph_launch_description


def generate_launch_description():
    return graph_launch_description(ROBOFOLLOW_REAL)
