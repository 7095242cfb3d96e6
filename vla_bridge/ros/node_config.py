"""A node's parameters, written once: one frozen dataclass per node whose fields are the
parameters, each with its type (the annotation), its default and one line of help
(``param``). The node declares its parameters from it (``declare``), and the params files,
the launch-argument table, ``--help`` and the README's node table are checked against it
(test/ros/test_node_config.py), so a default lives in one place.

    @dataclass(frozen=True)
    class RecorderConfig:
        output: str = param("runs/latest", "the run directory: bags go to <output>/bags/")

    config = declare(node, RecorderConfig)   # a RecorderConfig with the node's values

A node whose parameters depend on one of them (the evaluator: the engine's and its benchmark's)
gets its config class from a function of its params-file values (``combine`` makes one class of
several). ``NODE_CONFIGS`` says where each node module's config lives; ``config_of`` resolves
it for the checks and ``vla-bridge params``.

No rclpy at import: the checks and the CLI read the tables without a ROS graph.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from importlib import import_module

#: the parameter types a config may hold (ROS 2 scalar parameters), by annotation
TYPES = {"str": str, "int": int, "float": float, "bool": bool}
#: parameters every ROS 2 node has without declaring them (a params file may set them)
ROS_OWN = {"use_sim_time": "bool"}

#: where each node's config lives, by its module (launch_args.NodeSpec.module): "module:Name"
#: of a config dataclass, or of a function that takes the node's params-file values ({} for
#: none) and returns one (test/ros/test_node_config.py checks every node of every graph has one).
NODE_CONFIGS = {
    "vla_bridge.policy_nodes.policy_node": "vla_bridge.policy_nodes.policy_node:PolicyConfig",
    "vla_bridge.evaluation.evaluator_node":
        "vla_bridge.evaluation.evaluator_node:evaluator_config",
    "vla_bridge.data.recorder_node": "vla_bridge.data.recorder_node:RecorderConfig",
    "vla_bridge.data.viewer_node": "vla_bridge.data.viewer_node:ViewerConfig",
    "vla_bridge.sim_nodes.sim_node": "vla_bridge.sim_nodes.sim_node:SimConfig",
    "vla_bridge.robot_nodes.piper.piper_node":
        "vla_bridge.robot_nodes.piper.piper_node:PiperConfig",
    "vla_bridge.robot_nodes.realsense.realsense_node":
        "vla_bridge.robot_nodes.realsense.realsense_node:RealSenseConfig",
    "vla_bridge.robot_nodes.tracker.tracker_node":
        "vla_bridge.robot_nodes.tracker.tracker_node:TrackerNodeConfig",
}


def param(default, help: str):  # noqa: A002 - "help" is the name the tables use
    """A config field: its default and one line of help."""
    if type(default).__name__ not in TYPES:
        raise TypeError(f"a node parameter is a str, int, float or bool, got {default!r}")
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class ParamInfo:
    name: str
    type: str  # a key of TYPES
    default: object
    help: str

    def line(self) -> str:
        """``name (type, default X): help``, as ``--help`` lists it."""
        return f"{self.name} ({self.type}, default {self.default!r}): {self.help}"


def describe(config_cls) -> list[ParamInfo]:
    """The parameters of a config dataclass, in declaration order."""
    infos = []
    for f in dataclasses.fields(config_cls):
        kind = f.type if isinstance(f.type, str) else f.type.__name__
        if kind not in TYPES:
            raise TypeError(f"{config_cls.__name__}.{f.name}: type {kind!r} is not one of "
                            f"{sorted(TYPES)}")
        if "help" not in f.metadata:
            raise TypeError(f"{config_cls.__name__}.{f.name} has no help (use param())")
        if ros_type(f.default) != kind:  # rclpy types a parameter by its default's type
            raise TypeError(f"{config_cls.__name__}.{f.name}: default {f.default!r} is not a "
                            f"{kind}")
        infos.append(ParamInfo(f.name, kind, f.default, f.metadata["help"]))
    return infos


def defaults(config_cls) -> dict:
    """{name: default} of a config dataclass."""
    return {p.name: p.default for p in describe(config_cls)}


def help_text(config_cls) -> str:
    """One line per parameter (``ParamInfo.line``)."""
    return "\n".join(p.line() for p in describe(config_cls))


def ros_type(value) -> str | None:
    """The TYPES key ROS 2 gives a params-file value (rclpy is exact: 1 is an int, not a
    float; True is a bool, not an int), None for anything else (lists, mappings)."""
    for name in ("bool", "int", "float", "str"):  # bool first: it is an int subclass
        if type(value) is TYPES[name]:
            return name
    return None


def combine(name: str, *config_classes) -> type:
    """One frozen config dataclass with the fields of ``config_classes`` in order (a name in two
    of them is refused); ``parts(result)`` gives them back."""
    fields, seen = [], {}
    for cls in config_classes:
        for f in dataclasses.fields(cls):
            if f.name in seen:
                raise TypeError(f"{name}: parameter {f.name!r} is in both "
                                f"{seen[f.name].__name__} and {cls.__name__}")
            seen[f.name] = cls
            fields.append((f.name, f.type, field(default=f.default, metadata=f.metadata)))
    combined = dataclasses.make_dataclass(name, fields, frozen=True)
    combined.__config_parts__ = tuple(config_classes)
    return combined


def parts(config_cls) -> tuple:
    """The config classes ``config_cls`` was combined from (itself when it was not)."""
    return getattr(config_cls, "__config_parts__", (config_cls,))


def load(reference: str):
    """The object a "module:Name" reference names (ImportError, AttributeError)."""
    module, _, name = reference.partition(":")
    return getattr(import_module(module), name)


def config_of(module: str, values: dict | None = None) -> type:
    """The config class of the node run as ``module`` (NODE_CONFIGS), for its params-file
    ``values``; KeyError for a module NODE_CONFIGS does not name, ImportError or
    AttributeError for a module or name that does not exist."""
    target = load(NODE_CONFIGS[module])
    config_cls = target if isinstance(target, type) else target(dict(values or {}))
    describe(config_cls)  # TypeError for a field without a type or help
    return config_cls


@dataclass(frozen=True)
class GraphNode:
    """A node as a graph runs it: its own, or one its role's choice swaps in (launch_args.ROLES)."""
    graph: str
    spec: object  # launch_args.NodeSpec
    params_file: str  # relative to the share dir
    fixed: dict  # parameters the role's choice fixes (RoleChoice.params)
    arg_params: dict  # launch argument -> parameter, set when given (RoleChoice.arg_params)
    role: str = ""  # the role's value that runs it ("": the graph's own node)


def graph_nodes(graph) -> list[GraphNode]:
    """Every node ``graph`` (a launch_args.GraphSpec) can run, optional ones and every role
    choice's included."""
    from vla_bridge.ros.launch_args import ROLES

    out = [GraphNode(graph.name, spec, graph.params_file, {}, {}) for spec in graph.nodes]
    role = ROLES.get(graph.name)
    for value, choice in (role.choices.items() if role else ()):
        for spec in choice.nodes:
            arg_params = {arg: target.split(".", 1)[1] for arg, target in choice.arg_params
                          if target.split(".", 1)[0] == spec.name}
            out.append(GraphNode(graph.name, spec, choice.params_file or graph.params_file,
                                 dict(choice.params.get(spec.name, {})), arg_params, value))
    return out


def preflight(spec, params_file, overrides: dict) -> None:
    """A node's own check of its parameters (``NodeSpec.preflight``, "module:function") with
    its config's defaults, its params file's values and the launch's ``overrides``, before any
    node starts; ValueError naming the node."""
    file_values = file_params(params_file, spec.name)
    params = {**defaults(config_of(spec.module, file_values)), **file_values, **overrides}
    try:
        load(spec.preflight)(params)
    except ValueError as exc:
        raise ValueError(f"{spec.name}: {exc}") from None


def file_params(path, node: str) -> dict:
    """``node``'s ``ros__parameters`` in the ROS 2 params file at ``path`` ({}: none); its key
    is the node's name, with or without the leading slash."""
    import yaml
    from pathlib import Path

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    entry = data.get(node, data.get(f"/{node}")) or {}
    return dict(entry.get("ros__parameters") or {})


def declare(node, config_cls):
    """Declare the config's parameters on an rclpy node (with their help as the descriptor's
    description) and return the config holding the values the node was given. A parameter the
    node has declared already keeps its value (the evaluator declares its ``benchmark`` first,
    to know which config to declare)."""
    from rcl_interfaces.msg import ParameterDescriptor

    values = {}
    for p in describe(config_cls):
        if node.has_parameter(p.name):
            values[p.name] = node.get_parameter(p.name).value
            continue
        descriptor = ParameterDescriptor(name=p.name, description=p.help)
        values[p.name] = node.declare_parameter(p.name, p.default, descriptor).value
    return config_cls(**values)
