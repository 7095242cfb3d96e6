"""The architecture the folder tree promises, checked by reading every module's imports.

Layers, bottom-up (each package's __init__ docstring says the same):

    foundation   vla_bridge.contract, vla_bridge.paths   the shared vocabulary, imports nothing of ours
    embodiment   kinematics, workcell, cameras, world state, the episode record
    ros          messages, QoS, launch graphs, the own launcher, DDS helpers   (+ embodiment)
    benchmarks   RoboFollow, INT-ACT, LIBERO-VIFO: pure logic                    (+ embodiment)
    nodes        sim_nodes, policy_nodes, robot_nodes: siblings, none imports another
                                                                                (+ ros, benchmarks)
    evaluation   the run engine: run directory, episodes, evaluator nodes        (+ nodes)
    data         recording, bags, export, demos, training, the live viewer      (+ evaluation)
    vqa          LIBERO-VIFO's Part I-A: cue questions to a VLM                 (+ evaluation)
    reporting    reports, paired statistics, the pilot report and console        (+ data, vqa)
    tools        cli, perf, campaign (Ray orchestration of whole graphs)        (anything)

ROS client libraries and message packages are imported only by `ros/`, node modules
(`*_node.py`), `perf/` and the few ROS shells listed in ROS_SHELLS; everything else is pure
logic that tests drive without DDS. Imports inside functions count too.
"""
from __future__ import annotations

import ast
import functools
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAPPED_FOLDERS = ("sim_nodes", "policy_nodes", "robot_nodes")  # setup.py maps them under vla_bridge
NODE_PACKAGES = {f"vla_bridge.{folder}" for folder in MAPPED_FOLDERS}

LAYERS = ("foundation", "embodiment", "ros", "benchmarks", "nodes", "evaluation", "data", "vqa",
          "reporting", "tools")
_BELOW_NODES = {"foundation", "embodiment", "ros", "benchmarks"}
_ENGINE = _BELOW_NODES | {"nodes", "evaluation"}
ALLOWED = {
    "foundation": {"foundation"},
    "embodiment": {"foundation", "embodiment"},
    "ros": {"foundation", "embodiment", "ros"},
    "benchmarks": {"foundation", "embodiment", "benchmarks"},
    "nodes": _BELOW_NODES | {"nodes"},  # and only its own node folder (node_folder)
    "evaluation": _ENGINE,
    "data": _ENGINE | {"data"},
    "vqa": _ENGINE | {"vqa"},
    "reporting": _ENGINE | {"data", "vqa", "reporting"},
    "tools": set(LAYERS),
}
ROS_PACKAGES = {"rclpy", "rosgraph_msgs", "sensor_msgs", "std_msgs", "std_srvs", "geometry_msgs",
                "trajectory_msgs", "visualization_msgs", "builtin_interfaces", "rosidl_runtime_py"}
# Modules outside ros/ and *_node.py that talk to ROS, and why.
ROS_SHELLS = {
    "vla_bridge.robot_nodes.realsense.realsense_io": "loads rclpy before pyrealsense2 (shared-library order)",
    "vla_bridge.evaluation.cues.overlay": "the evaluator's overlay: cued images in and out as messages",
}
MAX_MODULE_LINES = 600


def layer_of(module: str) -> str | None:
    """The layer of a vla_bridge module name (None: not ours)."""
    parts = module.split(".")
    if parts[0] != "vla_bridge":
        return None
    if len(parts) == 1 or parts[1] in ("contract", "paths"):
        return "foundation"
    if ".".join(parts[:2]) in NODE_PACKAGES:
        return "nodes"
    return {"embodiment": "embodiment", "ros": "ros", "benchmarks": "benchmarks",
            "evaluation": "evaluation", "data": "data", "vqa": "vqa", "reporting": "reporting",
            "cli": "tools", "perf": "tools", "campaign": "tools"}.get(parts[1], "unknown")


def node_folder(module: str) -> str | None:
    """sim_nodes, policy_nodes or robot_nodes for a node module (None: not a node module)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and ".".join(parts[:2]) in NODE_PACKAGES else None


def source_files(root: Path):
    """(module name, path) of every package module under root (the repository layout)."""
    for path in sorted((root / "vla_bridge").rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        yield ".".join(p for p in rel.parts if p != "__init__"), path
    for folder in MAPPED_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            yield ".".join(["vla_bridge", *[p for p in rel.parts if p != "__init__"]]), path


def imported_modules(module: str, path: Path, known: set[str]) -> set[str]:
    """Absolute names of the modules `path` imports (relative imports resolved); for
    `from pkg import name` that is pkg.name when that is one of our modules, else pkg."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for imported, level, aliases in _import_statements(path, path.stat().st_mtime_ns):
        if level is None:  # import a, b.c
            names.update(aliases)
            continue
        base = imported
        if level:
            parts = package.split(".")
            base = ".".join(parts[:len(parts) - level + 1] + ([base] if base else []))
        for alias in aliases:
            submodule = f"{base}.{alias}"
            names.add(submodule if submodule in known else base)
    return names


@functools.lru_cache(maxsize=None)
def _import_statements(path: Path, mtime_ns: int) -> tuple:
    """(module or "", level, names) of each `from` import in `path`, (None, None, names) of
    each plain import: the file parsed once however many checks read it (per version)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.append((None, None, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level, tuple(a.name for a in node.names)))
    return tuple(found)


def may_use_ros(module: str) -> bool:
    return (layer_of(module) in ("ros", "tools") or module.rsplit(".", 1)[-1].endswith("_node")
            or module in ROS_SHELLS)


def violations(root: Path) -> list[str]:
    """One line per import that breaks the layering."""
    known = {name for name, _ in source_files(root)}
    problems = []
    for module, path in source_files(root):
        layer = layer_of(module)
        for name in sorted(imported_modules(module, path, known)):
            if name.split(".")[0] in ROS_PACKAGES and not may_use_ros(module):
                problems.append(f"{module} ({layer}) imports ROS package {name}")
            target = layer_of(name)
            if target is not None and target not in ALLOWED.get(layer, set()):
                problems.append(f"{module} ({layer}) imports {name} ({target})")
            elif layer == target == "nodes" and node_folder(name) != node_folder(module):
                problems.append(f"{module} ({node_folder(module)}) imports {name} "
                                f"({node_folder(name)}): node folders are siblings")
    return problems


def import_cycles(root: Path) -> list[list[str]]:
    """Every strongly connected group of our modules that import each other, lazily or not
    (a package counts as importing what its __init__ imports)."""
    known = {name for name, _ in source_files(root)}
    graph = {m: sorted(imported_modules(m, p, known) & known - {m}) for m, p in source_files(root)}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(cycles)


def oversized_modules(root: Path) -> list[str]:
    return [f"{module}: {n} lines" for module, path in source_files(root)
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES]


# ------------------------------------------------------------------------------- tests


def test_every_module_has_a_known_layer():
    unknown = [m for m, _ in source_files(REPO) if layer_of(m) == "unknown"]
    assert not unknown, f"modules outside the layer table (add them to a package): {unknown}"


def test_the_repository_keeps_its_layering():
    assert violations(REPO) == []


def test_no_two_modules_import_each_other():
    assert import_cycles(REPO) == []


def test_no_module_is_over_600_lines():
    assert oversized_modules(REPO) == []


def test_every_package_says_what_lives_there_and_what_it_may_import():
    for init in sorted((REPO / "vla_bridge").rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert len(doc) > 80, f"{init.relative_to(REPO)}: no package docstring"
        if init.parent.parent == REPO / "vla_bridge":  # the top-level sub-packages
            assert "import" in doc, f"{init.relative_to(REPO)}: docstring omits what it may import"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for folder in MAPPED_FOLDERS:
        (tmp_path / folder).mkdir(exist_ok=True)
    return tmp_path


def test_the_check_catches_forbidden_imports(tmp_path):
    """The check fails on each kind of forbidden import, lazy or relative ones included."""
    root = _tree(tmp_path, {
        "vla_bridge/__init__.py": "",
        "vla_bridge/contract.py": "",
        "vla_bridge/ros/__init__.py": "",
        "vla_bridge/ros/launcher.py": "from vla_bridge.evaluation import run_dir\n",
        "vla_bridge/embodiment/__init__.py": "",
        "vla_bridge/embodiment/world.py": """
            def lazy():
                from vla_bridge.benchmarks.robofollow import tasks
            """,
        "vla_bridge/benchmarks/__init__.py": "",
        "vla_bridge/benchmarks/robofollow/__init__.py": "",
        "vla_bridge/benchmarks/robofollow/tasks.py": "import rclpy\nfrom ...ros import launcher\n",
        "vla_bridge/evaluation/__init__.py": "",
        "vla_bridge/evaluation/run_dir.py": "from vla_bridge import contract\n",
        "sim_nodes/sim_node.py": "import rclpy\nfrom vla_bridge.evaluation.run_dir import X\n",
    })
    found = violations(root)
    assert found == [
        "vla_bridge.benchmarks.robofollow.tasks (benchmarks) imports ROS package rclpy",
        "vla_bridge.benchmarks.robofollow.tasks (benchmarks) imports vla_bridge.ros.launcher (ros)",
        "vla_bridge.embodiment.world (embodiment) imports vla_bridge.benchmarks.robofollow.tasks "
        "(benchmarks)",
        "vla_bridge.ros.launcher (ros) imports vla_bridge.evaluation.run_dir (evaluation)",
        "vla_bridge.sim_nodes.sim_node (nodes) imports vla_bridge.evaluation.run_dir (evaluation)",
    ]


def test_the_check_allows_what_the_layers_allow(tmp_path):
    root = _tree(tmp_path, {
        "vla_bridge/__init__.py": "",
        "vla_bridge/contract.py": "",
        "vla_bridge/embodiment/__init__.py": "",
        "vla_bridge/embodiment/world.py": "from vla_bridge import contract\n",
        "vla_bridge/ros/__init__.py": "",
        "vla_bridge/ros/messages.py": "import rclpy\nfrom vla_bridge.embodiment import world\n",
        "vla_bridge/evaluation/__init__.py": "",
        "vla_bridge/evaluation/evaluator_node.py": "import rclpy\nfrom vla_bridge.ros import messages\n",
        "sim_nodes/sim_node.py": "from vla_bridge.ros.messages import image_to_msg\n",
    })
    assert violations(root) == []


def test_the_size_check_catches_a_long_module(tmp_path):
    root = _tree(tmp_path, {"vla_bridge/__init__.py": "",
                            "vla_bridge/report.py": "x = 1\n" * (MAX_MODULE_LINES + 1)})
    assert oversized_modules(root) == [f"vla_bridge.report: {MAX_MODULE_LINES + 1} lines"]


def test_the_check_catches_a_node_folder_importing_its_sibling(tmp_path):
    """sim_nodes importing policy_nodes (as sim_nodes.session once did for Observation) fails;
    a node folder importing within itself, or a layer below, passes."""
    root = _tree(tmp_path, {
        "vla_bridge/__init__.py": "",
        "vla_bridge/embodiment/__init__.py": "",
        "vla_bridge/embodiment/world.py": "",
        "sim_nodes/__init__.py": "",
        "sim_nodes/session.py": "from vla_bridge.policy_nodes.backend import Observation\n"
                                "from vla_bridge.embodiment.world import WorldState\n"
                                "from vla_bridge.sim_nodes.mujoco import backend\n",
        "sim_nodes/mujoco/__init__.py": "",
        "sim_nodes/mujoco/backend.py": "",
        "policy_nodes/__init__.py": "",
        "policy_nodes/backend.py": "",
    })
    assert violations(root) == [
        "vla_bridge.sim_nodes.session (sim_nodes) imports vla_bridge.policy_nodes.backend "
        "(policy_nodes): node folders are siblings"]


def test_the_cycle_check_catches_a_lazy_cycle(tmp_path):
    root = _tree(tmp_path, {
        "vla_bridge/__init__.py": "",
        "vla_bridge/benchmarks/__init__.py": "",
        "vla_bridge/benchmarks/a.py": "from vla_bridge.benchmarks import b\n",
        "vla_bridge/benchmarks/b.py": "def f():\n    from vla_bridge.benchmarks.a import g\n",
        "vla_bridge/benchmarks/c.py": "from vla_bridge.benchmarks import a\n",
    })
    assert import_cycles(root) == [["vla_bridge.benchmarks.a", "vla_bridge.benchmarks.b"]]
