"""RoboFollow in simulation: sim node + policy node + evaluator, for a ROS 2 install.

    ros2 launch vla_bridge robofollow_sim.launch.py levels:=L0,L1 rounds:=2 policy:=oracle

The arguments, nodes and params file come from vla_bridge.launch_args (the same table the
package's own launcher, `vla-bridge launch robofollow_sim`, uses). The graph ends when the
evaluator exits.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, RegisterEventHandler,
                            SetEnvironmentVariable, Shutdown)
from launch.event_handlers import OnProcessExit
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from vla_bridge.launch_args import FASTDDS_PROFILE, PACKAGE, ROBOFOLLOW_SIM

GRAPH = ROBOFOLLOW_SIM
# launch_ros would YAML-parse substituted values; a typed ParameterValue keeps e.g.
# tasks:=12 a string, as the node declares it.
VALUE_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


def argument_overrides(node_name):
    """{parameter: value from its launch argument} for one node."""
    overrides = {}
    for arg in GRAPH.args:
        for target in arg.sets:
            node, param = target.split(".", 1)
            if node == node_name:
                overrides[param] = ParameterValue(LaunchConfiguration(arg.name),
                                                  value_type=VALUE_TYPES[arg.type])
    return overrides


def graph_node(spec, params_file):
    # An interpreter argument (e.g. sim_python:=/opt/libero/bin/python) prefixes the
    # console script, so the node runs from that virtualenv; empty means no prefix.
    prefix = LaunchConfiguration(spec.python_arg) if spec.python_arg else None
    return Node(package=PACKAGE, executable=spec.executable, name=spec.name, output="screen",
                parameters=[params_file, argument_overrides(spec.name)], prefix=prefix)


def generate_launch_description():
    share = get_package_share_directory(PACKAGE)
    params_file = os.path.join(share, GRAPH.params_file)
    actions = [DeclareLaunchArgument(arg.name, default_value=arg.default,
                                     description=arg.description) for arg in GRAPH.args]
    actions += [
        SetEnvironmentVariable("FASTDDS_DEFAULT_PROFILES_FILE",
                               os.path.join(share, FASTDDS_PROFILE)),
        SetEnvironmentVariable("MUJOCO_GL", EnvironmentVariable("MUJOCO_GL", default_value="egl")),
        SetEnvironmentVariable("PYTHONUNBUFFERED", "1"),
    ]
    nodes = {spec.name: graph_node(spec, params_file) for spec in GRAPH.nodes}
    actions += list(nodes.values())
    actions.append(RegisterEventHandler(OnProcessExit(
        target_action=nodes[GRAPH.end_node],
        on_exit=[Shutdown(reason=f"{GRAPH.end_node} finished")])))
    return LaunchDescription(actions)
