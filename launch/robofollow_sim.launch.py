"""RoboFollow in simulation: sim node + policy node + evaluator, for a ROS 2 install.

    ros2 launch vla_bridge robofollow_sim.launch.py levels:=L0,L1 rounds:=2 policy:=oracle

The arguments, nodes and params file come from vla_bridge.ros.launch_args (the same table the
package's own launcher, `vla-bridge launch robofollow_sim`, uses). The graph ends when the
evaluator exits.

Sim or hardware is a launch argument: `hardware:=fake_piper` (or `piper`) runs the robot role's
nodes of launch_args.ROLES (PiPER node, RealSense node, marker tracker, with their parameters
from config/robofollow_real.yaml) instead of the sim node; policy and evaluator are unchanged.
"""
from vla_bridge.ros.launch_args import ROBOFOLLOW_SIM
from vla_bridge.ros.ros_launch import graph_launch_description


def generate_launch_description():
    return graph_launch_description(ROBOFOLLOW_SIM)
