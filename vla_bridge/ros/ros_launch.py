"""Build a ROS 2 LaunchDescription from a graph of vla_bridge.ros.launch_args: the body shared by
launch/robofollow_sim.launch.py and launch/robofollow_real.launch.py.

launch / launch_ros are imported inside the functions: only a ROS 2 install has them, and the
pure modules of this package must import without them.
"""
import os

from vla_bridge.ros.launch_args import FASTDDS_PROFILE, PACKAGE, ROLES, TRUE_WORDS, ArgumentIn

# launch_ros would YAML-parse substituted values; a typed ParameterValue keeps e.g.
# tasks:=12 a string, as the node declares it.
VALUE_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


def argument_overrides(graph, node_name):
    """{parameter: value from its launch argument} for one node."""
    from launch.substitutions import LaunchConfiguration
    from launch_ros.parameter_descriptions import ParameterValue
    overrides = {}
    for arg in graph.args:
        for target in arg.sets:
            node, param = target.split(".", 1)
            if node == node_name:
                overrides[param] = ParameterValue(LaunchConfiguration(arg.name),
                                                  value_type=VALUE_TYPES[arg.type])
    return overrides


def role_parameters(graph, choice, node_name):
    """Parameters a role choice gives one of its nodes: fixed values and role arguments."""
    from launch.substitutions import LaunchConfiguration
    from launch_ros.parameter_descriptions import ParameterValue
    params = dict(choice.params.get(node_name, {}))
    for arg_name, target in choice.arg_params:
        node, param = target.split(".", 1)
        if node == node_name:
            arg = graph.arg(arg_name)
            params[param] = ParameterValue(LaunchConfiguration(arg_name),
                                           value_type=VALUE_TYPES[arg.type])
    return params


def graph_node(graph, spec, params_file, extra=None, condition=None):
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    # An interpreter argument (e.g. sim_python:=/opt/libero/bin/python) prefixes the
    # console script, so the node runs from that virtualenv; empty means no prefix.
    prefix = LaunchConfiguration(spec.python_arg) if spec.python_arg else None
    options = {}
    if condition is not None:
        options["condition"] = condition
    return Node(package=PACKAGE, executable=spec.executable, name=spec.name, output="screen",
                parameters=[params_file, {**argument_overrides(graph, spec.name), **(extra or {})}],
                prefix=prefix, **options)


def node_condition(role, spec):
    """When a node of the graph's own list runs: a replaced node only for the role's default,
    an optional node only when its argument is true (the recorder with record:=true) or one
    of its `enabled_when` values (the viewer with viewer:=foxglove)."""
    if spec.enabled_by is not None:
        return ArgumentIn(spec.enabled_by, spec.enabled_when or TRUE_WORDS)
    if role and spec.name in role.replaces:
        return ArgumentIn(role.arg, [role.default])
    return None


def role_groups(graph, share):
    """One group per non-default role choice, run only when the role's argument selects it."""
    from launch.actions import GroupAction
    role = ROLES.get(graph.name)
    if role is None:
        return []
    groups = []
    for value, choice in role.choices.items():
        params_file = os.path.join(share, choice.params_file or graph.params_file)
        nodes = [graph_node(graph, spec, params_file, role_parameters(graph, choice, spec.name))
                 for spec in choice.nodes]
        groups.append(GroupAction(nodes, condition=ArgumentIn(role.arg, [value])))
    return groups


def graph_launch_description(graph):
    """The LaunchDescription of one graph of vla_bridge.ros.launch_args."""
    from ament_index_python.packages import get_package_share_directory
    from launch import LaunchDescription
    from launch.actions import (DeclareLaunchArgument, RegisterEventHandler,
                                SetEnvironmentVariable, Shutdown)
    from launch.event_handlers import OnProcessExit
    from launch.substitutions import EnvironmentVariable
    share = get_package_share_directory(PACKAGE)
    params_file = os.path.join(share, graph.params_file)
    actions = [DeclareLaunchArgument(arg.name, default_value=arg.default,
                                     description=arg.description) for arg in graph.args]
    actions += [
        SetEnvironmentVariable("FASTDDS_DEFAULT_PROFILES_FILE",
                               os.path.join(share, FASTDDS_PROFILE)),
        SetEnvironmentVariable("MUJOCO_GL", EnvironmentVariable("MUJOCO_GL", default_value="egl")),
        SetEnvironmentVariable("PYTHONUNBUFFERED", "1"),
    ]
    role = ROLES.get(graph.name)
    nodes = {spec.name: graph_node(graph, spec, params_file, condition=node_condition(role, spec))
             for spec in graph.nodes}
    actions += list(nodes.values())
    actions += role_groups(graph, share)
    actions.append(RegisterEventHandler(OnProcessExit(
        target_action=nodes[graph.end_node],
        on_exit=[Shutdown(reason=f"{graph.end_node} finished")])))
    return LaunchDescription(actions)
