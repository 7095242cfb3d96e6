"""Node graphs and their launch arguments, as pure data (no launch/rclpy imports).

One table per graph is read by both launchers, so they can never drift apart:
* launch/robofollow_sim.launch.py (real ROS 2 launch, for a ROS 2 install), and
* vla_bridge.launcher (`vla-bridge launch robofollow_sim ...`, for the PyPI wheels).

An argument either sets node parameters (`sets`: "node.param" strings) or chooses the Python
interpreter of a node (`NodeSpec.python_arg`; empty = the launcher's own interpreter), so a
node can run from another virtualenv (e.g. LIBERO needs mujoco 3.3.7).

Argument defaults equal the values in the graph's params file (a test checks it), so
launching without arguments gives exactly the params file.
"""
from __future__ import annotations

from dataclasses import dataclass, field

PACKAGE = "vla_bridge"

# Parameter types an argument may carry; launchers render values as typed YAML, so a
# string parameter such as `tasks` stays a string even when the value looks like a number.
ARG_TYPES = ("str", "int", "float", "bool")


@dataclass(frozen=True)
class LaunchArg:
    name: str
    default: str  # as typed on a command line
    description: str
    type: str = "str"  # one of ARG_TYPES: the type of the parameters it sets
    sets: tuple[str, ...] = ()  # "node.param" targets; empty for interpreter arguments


@dataclass(frozen=True)
class NodeSpec:
    name: str  # ROS node name (also the key in the params file)
    module: str  # run as `python -m module`; also the console script's module
    executable: str  # console script installed in lib/vla_bridge (for launch_ros)
    python_arg: str | None = None  # launch argument naming this node's interpreter


@dataclass(frozen=True)
class GraphSpec:
    name: str
    params_file: str  # relative to the package share dir (or the source tree)
    nodes: tuple[NodeSpec, ...]
    args: tuple[LaunchArg, ...]
    end_node: str  # when it exits, the whole graph stops and its exit code is the result
    description: str = ""
    env: dict[str, str] = field(default_factory=dict)  # extra environment for every node

    def node(self, name: str) -> NodeSpec:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"graph {self.name!r} has no node {name!r}; nodes: "
                       f"{[n.name for n in self.nodes]}")

    def arg(self, name: str) -> LaunchArg:
        for arg in self.args:
            if arg.name == name:
                return arg
        raise KeyError(name)

    def arg_names(self) -> list[str]:
        return [a.name for a in self.args]


FASTDDS_PROFILE = "config/fastdds_profile.xml"  # relative to the share dir

SIM = NodeSpec("sim_node", "vla_bridge.sim_nodes.sim_node", "sim_node", python_arg="sim_python")
POLICY = NodeSpec("policy_node", "vla_bridge.policy_nodes.policy_node", "policy_node",
                  python_arg="policy_python")
EVALUATOR = NodeSpec("evaluator_node", "vla_bridge.evaluator_node", "evaluator_node")

ROBOFOLLOW_SIM = GraphSpec(
    name="robofollow_sim",
    description="RoboFollow in simulation: sim node, policy node, evaluator (lock-step).",
    params_file="config/robofollow_sim.yaml",
    nodes=(SIM, POLICY, EVALUATOR),
    end_node="evaluator_node",
    args=(
        LaunchArg("scene", "scene1", "RoboFollow scene (scene1..scene4)",
                  sets=("sim_node.scene", "evaluator_node.scene")),
        LaunchArg("levels", "L0", "comma-separated instruction levels, e.g. L0,L1",
                  sets=("evaluator_node.levels",)),
        LaunchArg("tasks", "",
                  "comma-separated task ids; they override scene/levels (empty = by levels)",
                  sets=("evaluator_node.tasks",)),
        LaunchArg("rounds", "1", "episodes per task", type="int",
                  sets=("evaluator_node.rounds",)),
        LaunchArg("seed", "42", "base seed of the episodes", type="int",
                  sets=("evaluator_node.base_seed",)),
        LaunchArg("output", "runs/latest", "run directory (results, summary, report)",
                  sets=("evaluator_node.output",)),
        LaunchArg("policy", "oracle", "policy backend of the policy node",
                  sets=("policy_node.backend",)),
        LaunchArg("lock_step", "true", "advance the sim only when the action has arrived",
                  type="bool", sets=("sim_node.lock_step",)),
        LaunchArg("resume", "true", "skip episodes already in the output's results.jsonl",
                  type="bool", sets=("evaluator_node.resume",)),
        LaunchArg("empty_language", "false", "withhold the instruction (empty-language control)",
                  type="bool", sets=("evaluator_node.empty_language",)),
        LaunchArg("max_policy_calls", "10", "policy calls per episode", type="int",
                  sets=("evaluator_node.max_policy_calls",)),
        LaunchArg("max_actions_per_call", "50", "actions executed per policy call", type="int",
                  sets=("evaluator_node.max_actions_per_call",)),
        LaunchArg("chunk_size", "50", "actions the policy returns per call", type="int",
                  sets=("policy_node.chunk_size",)),
        LaunchArg("episode_timeout", "300.0", "seconds without progress before an episode fails",
                  type="float", sets=("evaluator_node.episode_timeout",)),
        LaunchArg("cue_protocol", "",
                  "visual-cue protocol: '' (off), original, authorized, conflict, no_language "
                  "(needs image_source cued)", sets=("evaluator_node.cue_protocol",)),
        LaunchArg("cue_family", "", "visual-cue family F1..F8 (or text, geometric, ...)",
                  sets=("evaluator_node.cue_family",)),
        LaunchArg("cue_variant", "", "variant of the cue family (empty = the family's default)",
                  sets=("evaluator_node.cue_variant",)),
        LaunchArg("image_source", "raw",
                  "images the policy reads: raw, or cued (the evaluator's cue overlay)",
                  sets=("policy_node.image_source",)),
        LaunchArg("oracle_follow", "language",
                  "task the oracle plans under a cue protocol: language or cue",
                  sets=("policy_node.follow",)),
        LaunchArg("sim_python", "", "Python interpreter of the sim node (empty = this one)"),
        LaunchArg("policy_python", "",
                  "Python interpreter of the policy node (empty = this one)"),
    ),
)

GRAPHS: dict[str, GraphSpec] = {ROBOFOLLOW_SIM.name: ROBOFOLLOW_SIM}


def get_graph(name: str) -> GraphSpec:
    """The graph called `name` (a launch file's name without .launch.py also works)."""
    key = name.removesuffix(".launch.py")
    if key not in GRAPHS:
        raise KeyError(f"unknown graph {name!r}; known graphs: {sorted(GRAPHS)}")
    return GRAPHS[key]
