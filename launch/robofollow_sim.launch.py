"""RoboFollow in simulation: sim node + policy node + evaluator, for a ROS 2 install.

    ros2 launch vla_bridge robofollow_sim.launch.py levels:=L0,L1 rounds:=2 policy:=oracle

The arguments, nodes and params file come from vla_bridge.launch_args (the same table the
package's own launcher, `vla-bridge launch robofollow_sim`, uses). The graph ends when the
evaluator exits.

Sim or hardware is a launch argument: `hardware:=fake_piper` (or `piper`) runs the robot role's
nodes of launch_args.ROLES (PiPER node, RealSense node, marker tracker, with their parameters
from config/robofollow_real.yaml) instead of the sim node; policy and evaluator are unchanged.
"""
import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, GroupAction, RegisterEventHandler,
                            SetEnvironmentVariable, Shutdown)
from launch.event_handlers import OnProcessExit
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from vla_bridge.launch_args import FASTDDS_PROFILE, PACKAGE, ROBOFOLLOW_SIM, ROLES, ArgumentIn

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


def role_parameters(choice, node_name):
    """Parameters a role choice gives one of its nodes: fixed values and role arguments."""
    params = dict(choice.params.get(node_name, {}))
    for arg_name, target in choice.arg_params:
        node, param = target.split(".", 1)
        if node == node_name:
            arg = GRAPH.arg(arg_name)
            params[param] = ParameterValue(LaunchConfiguration(arg_name),
                                           value_type=VALUE_TYPES[arg.type])
    return params


def graph_node(spec, params_file, extra=None, condition=None):
    # An interpreter argument (e.g. sim_python:=/opt/libero/bin/python) prefixes the
    # console script, so the node runs from that virtualenv; empty means no prefix.
    prefix = LaunchConfiguration(spec.python_arg) if spec.python_arg else None
    options = {"remappings": list(spec.remaps)} if getattr(spec, "remaps", ()) else {}
    if condition is not None:
        options["condition"] = condition
    return Node(package=PACKAGE, executable=spec.executable, name=spec.name, output="screen",
                parameters=[params_file, {**argument_overrides(spec.name), **(extra or {})}],
                prefix=prefix, **options)


def role_groups(share):
    """One group per non-default role choice, run only when the role's argument selects it."""
    role = ROLES.get(GRAPH.name)
    if role is None:
        return []
    groups = []
    for value, choice in role.choices.items():
        params_file = os.path.join(share, choice.params_file or GRAPH.params_file)
        nodes = [graph_node(spec, params_file, role_parameters(choice, spec.name))
                 for spec in choice.nodes]
        groups.append(GroupAction(nodes, condition=ArgumentIn(role.arg, [value])))
    return groups


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
    role = ROLES.get(GRAPH.name)
    nodes = {spec.name: graph_node(spec, params_file, condition=(
        ArgumentIn(role.arg, [role.default]) if role and spec.name in role.replaces else None))
        for spec in GRAPH.nodes}
    actions += list(nodes.values())
    actions += role_groups(share)
    actions.append(RegisterEventHandler(OnProcessExit(
        target_action=nodes[GRAPH.end_node],
        on_exit=[Shutdown(reason=f"{GRAPH.end_node} finished")])))
    return LaunchDescription(actions)
