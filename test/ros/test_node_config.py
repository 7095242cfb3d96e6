"""Each node's parameters are written once, in its config dataclass (vla_bridge/ros/node_config.py),
and everything that repeats them is checked against it, for every graph of
vla_bridge/ros/launch_args.py and every choice of its role (``hardware``):

* the params files (config/*.yaml, ``<node>: ros__parameters:``): each entry names a parameter
  of the node's config (or ROS's own ``use_sim_time``) with a value of the field's type, as
  exact as rclpy is (an int is not a float); a value other than the config's default is an
  override (the file's value is what runs), listed by ``test_params_file_overrides_are_listed``,
  not an error;
* the launch arguments: each ``sets`` target (and each role argument's parameter) is a field of
  that node's config, of the argument's type, and the argument's default is the value the node
  gets without it (the params file's, else the config's default);
* README.md's node table (``| node | code | config | test |``): a row for every node of every
  graph, naming the node's module file and its config classes, and no path that does not exist.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from vla_bridge.evaluation.benchmark import BENCHMARKS
from vla_bridge.ros import node_config as NC
from vla_bridge.ros.launch_args import GRAPHS, GraphSpec
from vla_bridge.ros.launcher import parse_value

REPO = Path(__file__).resolve().parents[2]
MAPPED_FOLDERS = ("sim_nodes", "policy_nodes", "robot_nodes")  # setup.py: vla_bridge.<folder>


def all_graph_nodes() -> list[NC.GraphNode]:
    return [node for graph in GRAPHS.values() for node in NC.graph_nodes(graph)]


def where(node: NC.GraphNode) -> str:
    return f"{node.graph}{'[hardware=' + node.role + ']' if node.role else ''} {node.spec.name}"


def entries(node: NC.GraphNode) -> dict:
    return NC.file_params(REPO / node.params_file, node.spec.name)


def config(node: NC.GraphNode) -> type:
    return NC.config_of(node.spec.module, entries(node))


# ------------------------------------------------------------------------------ the checks


def an(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def params_entries_problems(label: str, config_cls, values: dict) -> tuple[list[str], list[str]]:
    """(errors, overrides) of a node's params-file ``values`` against its config."""
    infos = {p.name: p for p in NC.describe(config_cls)}
    errors, overrides = [], []
    for name, value in values.items():
        kind = NC.ROS_OWN.get(name) or (infos[name].type if name in infos else None)
        if kind is None:
            errors.append(f"{label}: {name!r} is no parameter of {config_cls.__name__}")
        elif NC.ros_type(value) != kind:
            got = NC.ros_type(value) or type(value).__name__
            errors.append(f"{label}: {name} = {value!r} is {an(got)}, the parameter {an(kind)}")
        elif name in infos and value != infos[name].default:
            overrides.append(f"{label}: {name} = {value!r} (default {infos[name].default!r})")
    return errors, overrides


def launch_arg_problems(graph: GraphSpec) -> list[str]:
    """Each argument's targets against the configs of the nodes they set (see module doc)."""
    problems = []
    by_name = {n.spec.name: n for n in NC.graph_nodes(graph) if not n.role}
    targets = [(arg, *t.split(".", 1), by_name.get(t.split(".", 1)[0]))
               for arg in graph.args for t in arg.sets]
    targets += [(graph.arg(a), node.spec.name, param, node)  # role arguments
                for node in NC.graph_nodes(graph) if node.role
                for a, param in node.arg_params.items()]
    for arg, node_name, param, node in targets:
        label = f"{graph.name}: argument {arg.name!r} -> {node_name}.{param}"
        if node is None:
            problems.append(f"{label}: the graph runs no node {node_name!r}")
            continue
        infos = {p.name: p for p in NC.describe(config(node))}
        if param not in infos:
            problems.append(f"{label}: no parameter of {config(node).__name__}")
            continue
        info = infos[param]
        if arg.type != info.type:
            problems.append(f"{label}: the argument is {an(arg.type)}, the parameter "
                            f"{an(info.type)}")
            continue
        gets = {**entries(node), **node.fixed}.get(param, info.default)
        default = parse_value(arg, arg.default)
        if NC.ros_type(default) != NC.ros_type(gets) or default != gets:
            source = node.params_file if param in entries(node) else "the config default"
            problems.append(f"{label}: default {arg.default!r}, but without the argument the node "
                            f"gets {gets!r} ({source})")
    return problems


def readme_rows(text: str) -> list[list[str]]:
    """The cells of each row of README's node table."""
    lines = text.splitlines()
    start = lines.index("| node | code | config | test |")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def named_paths(cell: str) -> list[str]:
    """The paths a cell names in backticks: those with a slash from the repository root, a bare
    file name (``episodes.py``) beside the path before it."""
    paths = []
    for token in re.findall(r"`([^`]+)`", cell):
        if "/" in token:
            paths.append(token)
        elif re.fullmatch(r"[\w.-]+\.(py|yaml|json|md)", token) and paths:
            folder = paths[-1] if paths[-1].endswith("/") else str(Path(paths[-1]).parent) + "/"
            paths.append(folder + token)
    return paths


def module_file(module: str) -> str:
    parts = module.split(".")
    if parts[1] in MAPPED_FOLDERS:
        parts = parts[1:]
    return "/".join(parts) + ".py"


def readme_problems(text: str, nodes: list[NC.GraphNode]) -> list[str]:
    rows = readme_rows(text)
    problems = []
    for row in rows:
        name = re.findall(r"`([^`]+)`", row[0])[0]
        problems += [f"README row {name!r}: {path} does not exist" for cell in row[1:]
                     for path in named_paths(cell) if not (REPO / path).exists()]
    for node in nodes:
        mine = [r for r in rows if re.findall(r"`([^`]+)`", r[0])[:1] == [node.spec.name]]
        if not mine:
            problems.append(f"README lists no {node.spec.name!r} ({where(node)})")
            continue
        code = module_file(node.spec.module)
        row = next((r for r in mine if code in named_paths(r[1])), None)
        if row is None:
            problems.append(f"README's {node.spec.name!r} rows name no {code} ({where(node)})")
            continue
        for part in NC.parts(config(node)):
            if f"`{part.__name__}`" not in row[2]:
                problems.append(f"README's {node.spec.name!r} row: its config column names no "
                                f"`{part.__name__}` ({where(node)})")
    return problems


# ------------------------------------------------------------------------------- the tests


def test_every_node_of_every_graph_has_a_config_entry():
    missing = sorted({n.spec.module for n in all_graph_nodes()} - set(NC.NODE_CONFIGS))
    assert missing == [], f"name their config classes in node_config.NODE_CONFIGS: {missing}"


def test_each_node_declares_typed_documented_parameters():
    for node in all_graph_nodes():
        infos = NC.describe(config(node))  # TypeError: an untyped or undocumented field
        assert infos and all(p.help.strip() and "\n" not in p.help for p in infos), where(node)
        assert getattr(config(node), "__dataclass_params__").frozen, where(node)


def test_the_evaluator_config_is_the_engines_then_the_benchmarks():
    from vla_bridge.evaluation.benchmark import benchmark_class
    from vla_bridge.evaluation.episodes import EngineConfig
    from vla_bridge.evaluation.evaluator_node import evaluator_config
    for name in BENCHMARKS:
        cls = evaluator_config({"benchmark": name})  # TypeError: a name in both
        assert NC.parts(cls) == (EngineConfig, benchmark_class(name).Config)
        assert list(NC.defaults(cls)) == [*NC.defaults(EngineConfig),
                                          *NC.defaults(benchmark_class(name).Config)]
    assert evaluator_config() is evaluator_config({"benchmark": "robofollow"})


def test_params_files_name_parameters_of_the_right_type():
    errors = []
    for node in all_graph_nodes():
        errors += params_entries_problems(f"{node.params_file} {where(node)}", config(node),
                                          {**entries(node), **node.fixed})[0]
    assert errors == []


def test_params_files_name_only_nodes_their_graphs_run():
    runs: dict[str, set] = {}
    for node in all_graph_nodes():
        runs.setdefault(node.params_file, set()).add(node.spec.name)
    for params_file, names in runs.items():
        import yaml
        sections = set(yaml.safe_load((REPO / params_file).read_text()))
        assert {s.lstrip("/") for s in sections} <= names, params_file


def test_params_file_overrides_are_listed(capsys):
    """A value other than the default is what runs (kept in the file, the code default stays):
    listed here, never an error."""
    seen, overrides = set(), []
    for node in all_graph_nodes():
        key = (node.params_file, node.spec.name, config(node))
        if key not in seen:
            seen.add(key)
            overrides += params_entries_problems(f"{node.params_file} {node.spec.name}",
                                                 config(node), entries(node))[1]
    with capsys.disabled():
        print("\nparams-file overrides of config defaults:\n  " + "\n  ".join(overrides))


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_launch_arguments_set_config_fields_with_their_defaults(graph):
    assert launch_arg_problems(GRAPHS[graph]) == []


def test_the_readme_node_table_lists_every_node_and_existing_paths():
    assert readme_problems((REPO / "README.md").read_text(), all_graph_nodes()) == []


# ------------------------------------------------------------------- the checks can fail


@dataclass(frozen=True)
class _Demo:
    rate: float = NC.param(0.5, "a float")
    count: int = NC.param(3, "an int")
    name: str = NC.param("a", "a string")


def test_the_checks_tell_an_override_from_an_error():
    errors, overrides = params_entries_problems("demo", _Demo, {
        "rate": 1, "count": 4, "name": "a", "flag": True, "use_sim_time": False})
    assert errors == ["demo: rate = 1 is an int, the parameter a float",
                      "demo: 'flag' is no parameter of _Demo"]
    assert overrides == ["demo: count = 4 (default 3)"]
    assert params_entries_problems("demo", _Demo, {"count": True})[0] == [
        "demo: count = True is a bool, the parameter an int"]


def test_a_default_of_another_type_than_its_field_is_refused():
    @dataclass(frozen=True)
    class Drifted:
        timeout: float = NC.param(300, "an int default: rclpy would type the parameter int")
    with pytest.raises(TypeError, match="Drifted.timeout: default 300 is not a float"):
        NC.describe(Drifted)


def test_the_launch_argument_check_catches_a_drifted_default():
    graph = GRAPHS["robofollow_sim"]
    drifted = GraphSpec(**{**graph.__dict__, "args": tuple(
        type(a)(**{**a.__dict__, "default": "40"}) if a.name == "chunk_size" else a
        for a in graph.args)})
    problems = launch_arg_problems(drifted)
    assert any("'chunk_size' -> policy_node.chunk_size: default '40'" in p for p in problems)
    assert any("-> evaluator_node.chunk_size: default '40'" in p for p in problems)


def test_the_readme_check_catches_a_missing_row_and_a_missing_path():
    text = (REPO / "README.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `recorder_node`"))
    gone = text.replace(row + "\n", "")
    assert any("README lists no 'recorder_node'" in p for p in readme_problems(gone, all_graph_nodes()))
    moved = text.replace(row, row.replace("vla_bridge/data/recorder_node.py",
                                          "vla_bridge/data/recorder.py"))
    problems = readme_problems(moved, all_graph_nodes())
    assert "README row 'recorder_node': vla_bridge/data/recorder.py does not exist" in problems


# ---------------------------------------------------------------------------- declare()


def test_declare_gives_the_values_the_node_was_given_and_keeps_declared_ones():
    rclpy = pytest.importorskip("rclpy")
    from rclpy.exceptions import InvalidParameterTypeException
    from rclpy.parameter import Parameter

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("node_config_test", context=context, parameter_overrides=[
            Parameter("count", value=7)])
        node.declare_parameter("name", "declared")
        got = NC.declare(node, _Demo)
        assert got == _Demo(rate=0.5, count=7, name="declared")
        assert node.describe_parameter("rate").description == "a float"
        node.destroy_node()
        # rclpy is as exact as the params-file check: an int for a float parameter is refused
        node = rclpy.create_node("node_config_test", context=context, parameter_overrides=[
            Parameter("rate", value=1)])
        with pytest.raises(InvalidParameterTypeException):
            NC.declare(node, _Demo)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
