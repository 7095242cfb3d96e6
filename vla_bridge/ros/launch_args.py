"""Node graphs and their launch arguments, as pure data (no launch/rclpy imports).

One table per graph is read by both launchers, so they can never drift apart:
* launch/robofollow_sim.launch.py (real ROS 2 launch, for a ROS 2 install), and
* vla_bridge.ros.launcher (`vla-bridge launch robofollow_sim ...`, for the PyPI wheels).

An argument either sets node parameters (`sets`: "node.param" strings) or chooses the Python
interpreter of a node (`NodeSpec.python_arg`; empty = the launcher's own interpreter), so a
node can run from another virtualenv (e.g. LIBERO needs mujoco 3.3.7).

Argument defaults equal the values in the graph's params file (a test checks it), so
launching without arguments gives exactly the params file.

An argument that changes what an episode measures but is a policy-node or sim-node parameter
(chunk_size, action_horizon, temporal_ensemble, async_inference, image_source, lock_step,
observation_period, oracle_follow) sets the evaluator's parameter of the same name too: run.json
records it in the provenance and a resume that changes it is refused (evaluation.provenance).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from vla_bridge.paths import LIBERO_PYTHON

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
    # "module:function" returning the names a comma-separated value may hold (e.g. the LIBERO
    # catalog's suites); the launcher refuses any other name before anything starts
    names_from: str = ""


@dataclass(frozen=True)
class NodeSpec:
    name: str  # ROS node name (also the key in the params file)
    module: str  # run as `python -m module`; also the console script's module
    executable: str  # console script installed in lib/vla_bridge (for launch_ros)
    python_arg: str | None = None  # launch argument naming this node's interpreter
    # the own launcher restarts it when it dies (bounded; the evaluator fails only the
    # episode in flight): a node that keeps no state across episodes, i.e. the policy
    restartable: bool = False
    # watches the graph and feeds nothing into a run (the viewer): the own launcher restarts
    # it a few times, then lets it go; its death never stops the graph or fails an episode
    observer: bool = False
    enabled_by: str | None = None  # launch argument that adds this node (None: always)
    # the values of `enabled_by` that add it; None: a bool argument (TRUE_WORDS). With values,
    # the argument is a choice: "" (off) or one of them, anything else is refused
    enabled_when: tuple[str, ...] | None = None
    # "module:function" the launcher calls with the node's parameters (its config's defaults,
    # its params file, the launch's overrides) before any node starts: a ValueError refuses
    # the launch in one line (e.g. the realsense node's one probe table)
    preflight: str | None = None


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

# Chunk execution of the policy node (docs/policies.md), the same in both graphs.
# the cue arguments both graphs share (RoboFollow's and LIBERO's evaluators read the same names)
CUE_FAMILY_ARG = LaunchArg("cue_family", "", "visual-cue family F1..F8 (or text, geometric, ...)",
                           sets=("evaluator_node.cue_family",))
CUE_VARIANT_ARG = LaunchArg("cue_variant", "",
                            "variant of the cue family (empty = the family's default)",
                            sets=("evaluator_node.cue_variant",))
IMAGE_SOURCE_ARG = LaunchArg("image_source", "raw",
                             "images the policy reads: raw, or cued (the evaluator's cue overlay)",
                             sets=("policy_node.image_source", "evaluator_node.image_source"))

CHUNK_EXECUTION_ARGS = (
    LaunchArg("action_horizon", "50", "actions of each chunk the policy node publishes",
              type="int", sets=("policy_node.action_horizon", "evaluator_node.action_horizon")),
    LaunchArg("temporal_ensemble", "false",
              "ACT temporal ensembling of overlapping chunks (needs action_horizon < chunk_size)",
              type="bool",
              sets=("policy_node.temporal_ensemble", "evaluator_node.temporal_ensemble")),
    LaunchArg("async_inference", "false",
              "predict the next chunk while the current one executes and splice them",
              type="bool", sets=("policy_node.async_inference", "evaluator_node.async_inference")),
)

SIM = NodeSpec("sim_node", "vla_bridge.sim_nodes.sim_node", "sim_node", python_arg="sim_python")
POLICY = NodeSpec("policy_node", "vla_bridge.policy_nodes.policy_node", "policy_node",
                  python_arg="policy_python", restartable=True)
EVALUATOR = NodeSpec("evaluator_node", "vla_bridge.evaluation.evaluator_node", "evaluator_node")
RECORDER = NodeSpec("recorder_node", "vla_bridge.data.recorder_node", "recorder_node",
                    enabled_by="record")
# Recording, the same in both graphs: one rosbag2 bag (MCAP) per episode in the run directory.
RECORD_ARG = LaunchArg("record", "false",
                       "write one rosbag2 bag (MCAP) per episode into <output>/bags/",
                       type="bool", sets=("evaluator_node.record",))
# Perturbation axes of our own (benchmarks.perturbations), the same in both sim graphs: the
# evaluator sends the axis and level in every begin, the sim applies them (a real pilot
# gets the axis as an operator card: `vla-bridge perturb card`).
PERTURB_ARG = LaunchArg("perturb", "",
                        "a perturbation axis and level, AXIS:LEVEL: camera, lighting (1-4), "
                        "texture (1-2), image_noise, image_blur, initial_joints, object_jitter "
                        "(1-4), distractors (1-3, LIBERO's objects; mujoco only); '' = none "
                        "(docs/perturbations.md)",
                        sets=("evaluator_node.perturb",))
# Watching a run live, the same in both graphs: viewer:=foxglove serves the graph's topics to
# the Foxglove app over its WebSocket protocol (data/viewer_node.py).
VIEWER = NodeSpec("viewer_node", "vla_bridge.data.viewer_node", "viewer_node",
                  enabled_by="viewer", enabled_when=("foxglove",), observer=True)
VIEWER_ARGS = (
    LaunchArg("viewer", "", "live viewer: '' (off) or foxglove (a Foxglove WebSocket server "
              "on 127.0.0.1, see viewer_port)"),
    LaunchArg("viewer_port", "8765", "port of the viewer's WebSocket server", type="int",
              sets=("viewer_node.port",)),
)

ROBOFOLLOW_SIM = GraphSpec(
    name="robofollow_sim",
    description="RoboFollow in simulation: sim node, policy node, evaluator (lock-step).",
    params_file="config/robofollow_sim.yaml",
    nodes=(SIM, POLICY, EVALUATOR, RECORDER, VIEWER),
    end_node="evaluator_node",
    args=(
        LaunchArg("scene", "scene1", "RoboFollow scene (scene1..scene4)",
                  sets=("evaluator_node.scene",)),
        LaunchArg("levels", "L0", "comma-separated instruction levels, e.g. L0,L1",
                  sets=("evaluator_node.levels",)),
        LaunchArg("tasks", "",
                  "comma-separated task ids; they override scene/levels (empty = by levels)",
                  sets=("evaluator_node.tasks",)),
        LaunchArg("rounds", "1", "episodes per task", type="int",
                  sets=("evaluator_node.rounds",)),
        LaunchArg("seed", "42", "base seed of the episodes", type="int",
                  sets=("evaluator_node.base_seed",)),
        LaunchArg("output", "runs/latest",
                  "run directory (results, summary, report); created with missing parents",
                  sets=("evaluator_node.output", "recorder_node.output")),
        RECORD_ARG,
        PERTURB_ARG,
        *VIEWER_ARGS,
        LaunchArg("record_fps", "0",
                  "dense frames for datasets on /vla_bridge/record/*: every camera, the joints "
                  "and the executed target at this rate of sim time (a divisor of the 250 Hz "
                  "physics, e.g. 10); 0: off", type="int", sets=("sim_node.record_fps",)),
        LaunchArg("policy", "oracle", "policy backend of the policy node (run.json records it)",
                  sets=("policy_node.backend", "evaluator_node.policy")),
        LaunchArg("sim", "mujoco",
                  "simulator of the sim node: mujoco, or sapien (SAPIEN 3 / PhysX, the engine "
                  "RoboFollow was built on; the same workcell, scenes and cameras)",
                  sets=("sim_node.backend", "evaluator_node.sim")),
        LaunchArg("lock_step", "true", "advance the sim only when the action has arrived",
                  type="bool", sets=("sim_node.lock_step", "evaluator_node.lock_step")),
        LaunchArg("latency", "none",
                  "none, or charged: still lock-step, but each policy call's latency is charged "
                  "in sim time (the robot executes the previous chunk, or holds, meanwhile; "
                  "late actions of the new chunk are dropped)", sets=("evaluator_node.latency",)),
        LaunchArg("latency_ms", "measured",
                  "latency:=charged, per call: measured (the sim's wall-clock wait for the "
                  "chunk), MS (e.g. 100), uniform:LO:HI or normal:MEAN:STD (drawn from the "
                  "episode's seed), replay:RUN_DIR (the latencies that run's rows recorded)",
                  sets=("evaluator_node.latency_ms",)),
        LaunchArg("observation_period", "0",
                  "real time and latency:=charged: ticks of a chunk before the sim observes "
                  "again (charged: the rest runs during the next call's charged ticks); 0: real "
                  "time every 10, charged when the chunk is used up (plain lock-step always)",
                  type="int", sets=("sim_node.observation_period",
                                    "evaluator_node.observation_period")),
        LaunchArg("resume", "true", "skip episodes already in the output's results.jsonl",
                  type="bool", sets=("evaluator_node.resume",)),
        LaunchArg("empty_language", "false", "withhold the instruction (empty-language control)",
                  type="bool", sets=("evaluator_node.empty_language",)),
        LaunchArg("max_policy_calls", "10", "policy calls per episode", type="int",
                  sets=("evaluator_node.max_policy_calls",)),
        LaunchArg("max_actions_per_call", "50", "actions executed per policy call", type="int",
                  sets=("evaluator_node.max_actions_per_call",)),
        LaunchArg("chunk_size", "50", "actions the policy returns per call", type="int",
                  sets=("policy_node.chunk_size", "evaluator_node.chunk_size")),
        *CHUNK_EXECUTION_ARGS,
        LaunchArg("episode_timeout", "300.0", "seconds without progress before an episode fails",
                  type="float", sets=("evaluator_node.episode_timeout",)),
        LaunchArg("cue_protocol", "",
                  "visual-cue protocol: '' (off), original, authorized, conflict, no_language "
                  "(needs image_source cued)", sets=("evaluator_node.cue_protocol",)),
        CUE_FAMILY_ARG, CUE_VARIANT_ARG,
        LaunchArg("cue_render_ghosts", "true",
                  "F3 ghosts rendered by MuJoCo on a copy of the scene (false: projected boxes)",
                  type="bool", sets=("evaluator_node.cue_render_ghosts",)),
        LaunchArg("cue_placement", "overlay",
                  "where the cue appears: overlay (drawn into the policy's images) or scene (a "
                  "card standing in the sim's workspace; F1, F6, F8)",
                  sets=("evaluator_node.cue_placement",)),
        LaunchArg("cue_suite", "",
                  "'' (RoboFollow's tasks) or safety: the six safety-critical scenes, a safe "
                  "task paired with a hazardous one the cue shows (scene/levels are ignored; "
                  "tasks narrows them by scene name or hazardous task id)",
                  sets=("evaluator_node.cue_suite",)),
        LaunchArg("intact", "",
                  "INT-ACT's probing suite on Scene 2 (docs/intact.md): '' (off), all, or "
                  "comma-separated subcategories, categories or probe ids (scene, levels and "
                  "tasks are then ignored; sim:=mujoco, or hardware:=fake_piper|piper: "
                  "the synthetic cameras show the probes' table)",
                  sets=("evaluator_node.intact",)),
        IMAGE_SOURCE_ARG,
        LaunchArg("oracle_follow", "language",
                  "task the oracle plans under a cue protocol: language or cue",
                  sets=("policy_node.follow", "evaluator_node.oracle_follow")),
        LaunchArg("sim_python", "", "Python interpreter of the sim node (empty = this one)"),
        LaunchArg("policy_python", "",
                  "Python interpreter of the policy node (empty = this one)"),
    ),
)

GRAPHS: dict[str, GraphSpec] = {ROBOFOLLOW_SIM.name: ROBOFOLLOW_SIM}

# LIBERO's own task suites (#13): the sim node (backend libero) runs from LIBERO's own venv
# (robosuite 1.4.0 needs mujoco 3.3.7; `bash scripts/setup.sh libero` builds .venv-libero),
# the policy node and the evaluator (benchmark libero, config/libero_sim.yaml) from this one.
# The graph speaks the `libero_panda` embodiment.
LIBERO_VENV_PYTHON = str(LIBERO_PYTHON)
LIBERO_SIM = GraphSpec(
    name="libero_sim",
    description="LIBERO task suites (spatial, object, goal, 10) in LIBERO's own environments: "
                "sim node (backend libero, .venv-libero), policy node, evaluator (lock-step).",
    params_file="config/libero_sim.yaml",
    nodes=(SIM, POLICY, EVALUATOR, RECORDER, VIEWER),
    end_node="evaluator_node",
    args=(
        LaunchArg("suite", "libero_spatial",
                  "comma-separated LIBERO suites: libero_spatial, libero_object, libero_goal, "
                  "libero_10 (\"\" = those four), libero_90, and LIBERO-PRO's perturbations "
                  "of them (libero_goal_swap, libero_object_temp_x0.3, ...: docs/libero.md)",
                  sets=("evaluator_node.suites",),
                  names_from="vla_bridge.benchmarks.libero.protocol:load_catalog"),
        LaunchArg("tasks", "", "task numbers within each suite, e.g. 0-4 or 0,3 (\"\" = all)",
                  sets=("evaluator_node.tasks",)),
        LaunchArg("inits", "0", "initial states of each task, e.g. 0-49 (the full protocol)",
                  sets=("evaluator_node.inits",)),
        LaunchArg("seed", "7", "base seed (episode seed = seed + initial state)", type="int",
                  sets=("evaluator_node.seed",)),
        LaunchArg("output", "runs/libero", "run directory (results, summary, report)",
                  sets=("evaluator_node.output", "recorder_node.output")),
        RECORD_ARG,
        PERTURB_ARG,
        *VIEWER_ARGS,
        LaunchArg("resume", "true", "skip episodes already in the output's results.jsonl",
                  type="bool", sets=("evaluator_node.resume",)),
        LaunchArg("policy", "libero_oracle",
                  "policy backend (libero_oracle: privileged scripted; openpi?key_map=libero&...)",
                  sets=("policy_node.backend", "evaluator_node.policy")),
        LaunchArg("max_steps", "0", "step budget per episode (0: the suite's: 220/280/300/520; "
                  "a LIBERO-PRO suite's is its base suite's)",
                  type="int", sets=("evaluator_node.max_steps",)),
        LaunchArg("actions_per_call", "5",
                  "actions executed per policy call (openpi's LIBERO replanning: 5)", type="int",
                  sets=("evaluator_node.actions_per_call",)),
        LaunchArg("chunk_size", "5", "actions the policy returns per call", type="int",
                  sets=("policy_node.chunk_size", "policy_node.action_horizon",
                        "evaluator_node.chunk_size")),
        LaunchArg("episode_timeout", "300.0", "seconds without progress before an episode fails",
                  type="float", sets=("evaluator_node.episode_timeout",)),
        LaunchArg("cue_protocol", "",
                  "LIBERO-VIFO protocol: '' (off), original, authorized, conflict, no_language "
                  "(the policy sees the cue with image_source:=cued)",
                  sets=("evaluator_node.cue_protocol",)),
        CUE_FAMILY_ARG, CUE_VARIANT_ARG,
        IMAGE_SOURCE_ARG,
        LaunchArg("oracle_follow", "language",
                  "task the LIBERO oracle plans under a cue protocol: language or cue",
                  sets=("policy_node.follow", "evaluator_node.oracle_follow")),
        LaunchArg("sim_python", LIBERO_VENV_PYTHON,
                  "Python interpreter of the LIBERO sim node (default: this checkout's "
                  ".venv-libero, built by `bash scripts/setup.sh libero`)"),
        LaunchArg("policy_python", "", "Python interpreter of the policy node (empty = this one)"),
    ),
)
GRAPHS[LIBERO_SIM.name] = LIBERO_SIM


def get_graph(name: str) -> GraphSpec:
    """The graph called `name` (a launch file's name without .launch.py also works)."""
    key = name.removesuffix(".launch.py")
    if key not in GRAPHS:
        raise KeyError(f"unknown graph {name!r}; known graphs: {sorted(GRAPHS)}")
    return GRAPHS[key]

# ============================================================================== real hardware
# The real-robot graph, and "sim or hardware is a launch argument" for the sim graph. Kept in
# one block at the end of the table so the rows above can grow independently.

@dataclass(frozen=True)
class RoleChoice:
    """The nodes that fill a graph's robot role for one value of the role's argument."""
    nodes: tuple[NodeSpec, ...]
    params_file: str | None = None  # these nodes' params file; None = the graph's own
    params: dict = field(default_factory=dict)  # {node: {param: value}} fixed by this choice
    arg_params: tuple[tuple[str, str], ...] = ()  # (launch argument, "node.param") pairs


@dataclass(frozen=True)
class Role:
    """A launch argument choosing which nodes fill a role: `default` keeps the graph's own
    `replaces` nodes; another value swaps them for that choice's nodes."""
    arg: str
    default: str
    replaces: tuple[str, ...]
    choices: dict  # value -> RoleChoice

    def values(self) -> list[str]:
        return [self.default, *self.choices]


class ArgumentIn:
    """A ROS 2 launch condition as plain data (launch calls `evaluate(context)`): true when
    launch argument `name` has one of `values`. Used by the launch files for role choices."""

    def __init__(self, name: str, values):
        self.name, self.values = name, tuple(values)

    def evaluate(self, context) -> bool:
        return context.launch_configurations.get(self.name, "") in self.values

    def describe(self) -> str:
        return f"{self.name} in {list(self.values)}"


#: The robot role: the PiPER node owns the episode protocol (status and frames, as a sim node
#: does; robot_nodes/piper/episode.py), the tracker node only tracks (world state and its
#: latched status, contract.TOPIC_TRACKER_STATUS).
PIPER = NodeSpec("piper_node", "vla_bridge.robot_nodes.piper.piper_node", "piper_node")
REALSENSE = NodeSpec("realsense_node", "vla_bridge.robot_nodes.realsense.realsense_node", "realsense_node",
                     preflight="vla_bridge.robot_nodes.realsense.realsense_node:preflight")
TRACKER = NodeSpec("tracker_node", "vla_bridge.robot_nodes.tracker.tracker_node", "tracker_node")
ROBOT_NODES = (PIPER, REALSENSE, TRACKER)
REAL_PARAMS_FILE = "config/robofollow_real.yaml"
CAMERA_SOURCE_ARG = LaunchArg(
    "camera_source", "auto",
    "cameras from: auto (fake hardware without serials or recordings: synthetic), devices, "
    "playback, synthetic (MuJoCo renders of the workcell at the arms' joint states)",
    sets=("realsense_node.source",))

ROBOFOLLOW_REAL = GraphSpec(
    name="robofollow_real",
    description="RoboFollow pilot trials on the real PiPER pair: PiPER node, RealSense cameras, "
                "marker tracker, policy node, evaluator (wall clock).",
    params_file=REAL_PARAMS_FILE,
    nodes=(PIPER, REALSENSE, TRACKER, POLICY, EVALUATOR, RECORDER, VIEWER),
    end_node="evaluator_node",
    args=(
        LaunchArg("scene", "scene1", "RoboFollow scene of the suite", sets=("evaluator_node.scene",)),
        LaunchArg("levels", "L0", "comma-separated instruction levels", sets=("evaluator_node.levels",)),
        LaunchArg("tasks", "", "comma-separated task ids (override scene/levels)",
                  sets=("evaluator_node.tasks",)),
        LaunchArg("rounds", "1", "trials per task", type="int", sets=("evaluator_node.rounds",)),
        LaunchArg("seed", "42", "base seed (recorded with each trial)", type="int",
                  sets=("evaluator_node.base_seed",)),
        LaunchArg("output", "runs/real", "run directory; created with missing parents",
                  sets=("evaluator_node.output", "recorder_node.output")),
        RECORD_ARG,
        *VIEWER_ARGS,
        LaunchArg("resume", "true", "skip trials already in the output's results.jsonl",
                  type="bool", sets=("evaluator_node.resume",)),
        LaunchArg("policy", "hold", "policy backend (hold: keep the arms still)",
                  sets=("policy_node.backend", "evaluator_node.policy")),
        LaunchArg("max_policy_calls", "10", "policy calls per trial", type="int",
                  sets=("evaluator_node.max_policy_calls",)),
        LaunchArg("max_actions_per_call", "50", "actions executed per policy call", type="int",
                  sets=("evaluator_node.max_actions_per_call",)),
        LaunchArg("chunk_size", "50", "actions the policy returns per call", type="int",
                  sets=("policy_node.chunk_size", "evaluator_node.chunk_size")),
        *CHUNK_EXECUTION_ARGS,
        LaunchArg("episode_timeout", "120.0", "seconds without progress before a trial fails",
                  type="float", sets=("evaluator_node.episode_timeout",)),
        LaunchArg("use_fake_hardware", "false",
                  "drive the PiPER firmware emulator on virtual CAN instead of the arms",
                  type="bool",
                  sets=("piper_node.use_fake_hardware", "realsense_node.use_fake_hardware",
                        "evaluator_node.use_fake_hardware")),
        LaunchArg("fake_faults", "", "use_fake_hardware: bring-up faults the PiPER emulator "
                  "injects, comma-separated (`vla-bridge doctor --help` lists them)",
                  sets=("piper_node.fake_faults",)),
        LaunchArg("arms", "left,right", "arms of the PiPER node (left,right | left | right)",
                  sets=("piper_node.arms", "tracker_node.arms")),
        LaunchArg("camera_serials", "",
                  "cam_high:SERIAL,cam_left_wrist:SERIAL,cam_right_wrist:SERIAL",
                  sets=("realsense_node.serials",)),
        LaunchArg("camera_playback_dir", "",
                  "play the cameras from DIR/<camera>.db3 recordings instead of the devices",
                  sets=("realsense_node.playback_dir",)),
        CAMERA_SOURCE_ARG,
        LaunchArg("intact", "",
                  "INT-ACT's probes on Scene 2 (docs/intact.md): '' (off), all, or "
                  "comma-separated subcategories, categories or probe ids (scene, levels and "
                  "tasks are then ignored); synthetic cameras show their table, so they must "
                  "share one (`vla-bridge tasks --intact ... --card`)",
                  sets=("evaluator_node.intact", "realsense_node.synthetic_intact")),
        LaunchArg("calibration_file", "",
                  "table calibration to load (and write after calibrating); empty: calibrate "
                  "at start-up", sets=("tracker_node.calibration_file",)),
        LaunchArg("policy_python", "", "Python interpreter of the policy node (empty = this one)"),
    ),
)

_FAKE_PIPER = RoleChoice(nodes=ROBOT_NODES, params_file=REAL_PARAMS_FILE,
                         params={"piper_node": {"use_fake_hardware": True},
                                 "realsense_node": {"use_fake_hardware": True}},
                         arg_params=(("camera_playback_dir", "realsense_node.playback_dir"),
                                     ("camera_source", "realsense_node.source"),
                                     ("intact", "realsense_node.synthetic_intact")))
_PIPER = RoleChoice(nodes=ROBOT_NODES, params_file=REAL_PARAMS_FILE,
                    params={"piper_node": {"use_fake_hardware": False},
                            "realsense_node": {"use_fake_hardware": False}},
                    arg_params=_FAKE_PIPER.arg_params)

#: graph name -> the role its `hardware` argument chooses
ROLES: dict[str, Role] = {
    "robofollow_sim": Role(arg="hardware", default="sim", replaces=("sim_node",),
                           choices={"fake_piper": _FAKE_PIPER, "piper": _PIPER}),
}

# The sim graph gains the role's arguments (they set no parameter of the graph's own params
# file: the role's nodes take them, see RoleChoice.arg_params).
ROBOFOLLOW_SIM = GraphSpec(**{**ROBOFOLLOW_SIM.__dict__, "args": ROBOFOLLOW_SIM.args + (
    LaunchArg("hardware", "sim",
              "what fills the robot role: sim (MuJoCo), fake_piper (PiPER firmware emulator + "
              "RealSense + marker tracker, params from " + REAL_PARAMS_FILE + "), piper (the "
              "real pair)", sets=("evaluator_node.hardware",)),
    LaunchArg("camera_playback_dir", "",
              "hardware fake_piper|piper: cameras from DIR/<camera>.db3 recordings "
              "(empty: the devices of " + REAL_PARAMS_FILE + ")"),
    LaunchArg("camera_source", CAMERA_SOURCE_ARG.default,
              "hardware fake_piper|piper: " + CAMERA_SOURCE_ARG.description),
)})
GRAPHS[ROBOFOLLOW_SIM.name] = ROBOFOLLOW_SIM
GRAPHS[ROBOFOLLOW_REAL.name] = ROBOFOLLOW_REAL


@dataclass(frozen=True)
class ResolvedNode:
    """One node to run: its spec, params file (relative to the share dir), fixed parameters,
    and the launch arguments that set its parameters besides the graph's own `sets`."""
    spec: NodeSpec
    params_file: str
    params: dict
    arg_params: dict  # launch argument -> parameter name


def resolve_nodes(graph: GraphSpec, values: dict[str, str]) -> list[ResolvedNode]:
    """The nodes `graph` runs for the argument `values` (a role's choice swapped in)."""
    role = ROLES.get(graph.name)
    choice = values.get(role.arg, role.default) if role else None
    if role and choice != role.default and choice not in role.choices:
        raise ValueError(f"argument {role.arg!r} must be one of {role.values()}, got {choice!r}")
    out = []
    for node in graph.nodes:
        if not node_enabled(graph, node, values):
            continue
        if role and choice != role.default and node.name in role.replaces:
            picked = role.choices[choice]
            if node.name != role.replaces[0]:
                continue
            for spec in picked.nodes:  # in place of the first replaced node
                arg_params = {arg: target.split(".", 1)[1] for arg, target in picked.arg_params
                              if target.split(".", 1)[0] == spec.name}
                out.append(ResolvedNode(spec, picked.params_file or graph.params_file,
                                        dict(picked.params.get(spec.name, {})), arg_params))
            continue
        out.append(ResolvedNode(node, graph.params_file, {}, {}))
    return out


TRUE_WORDS = ("true", "True", "TRUE", "1", "yes")


def node_enabled(graph: GraphSpec, node: NodeSpec, values: dict[str, str]) -> bool:
    """False for an optional node whose `enabled_by` argument is not true (e.g. the recorder
    without record:=true), or not one of its `enabled_when` values (the viewer without
    viewer:=foxglove); ValueError for a value that is neither off nor one of those."""
    if node.enabled_by is None:
        return True
    value = values.get(node.enabled_by, graph.arg(node.enabled_by).default)
    if node.enabled_when is None:
        return value in TRUE_WORDS
    if value not in ("", *node.enabled_when):
        raise ValueError(f"argument {node.enabled_by!r} must be one of "
                         f"{['', *node.enabled_when]}, got {value!r}")
    return value in node.enabled_when
