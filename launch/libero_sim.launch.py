"""LIBERO's task suites in LIBERO's own environments, for a ROS 2 install:

    ros2 launch vla_bridge libero_sim.launch.py suite:=libero_spatial,libero_object inits:=0-49

sim node with the libero backend (run by `sim_python`, default this checkout's
.venv-libero: robosuite 1.4.0 needs mujoco 3.3.7, `bash scripts/setup.sh libero` builds it),
policy node (default: the privileged LIBERO oracle) and LIBERO evaluator. The arguments,
nodes and params file come from vla_bridge.ros.launch_args (the table `vla-bridge launch
libero_sim` uses). The graph ends when the evaluator exits.
"""
from vla_bridge.ros.launch_args import LIBERO_SIM
from vla_bridge.ros.ros_launch import graph_launch_description


def generate_launch_description():
    return graph_launch_description(LIBERO_SIM)
