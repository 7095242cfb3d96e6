"""vla_bridge.ros.launcher, the argument table and the ROS 2 launch file.

The process tests run a real two-node rclpy graph (test/support/launch_test_nodes: a talker
that is the end node and a listener) through the launcher in a subprocess, on this session's
ROS_DOMAIN_ID.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import py_compile
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import yaml

from vla_bridge.ros import launcher
from vla_bridge.ros.launch_args import GRAPHS, ROBOFOLLOW_SIM, get_graph

HERE = Path(__file__).resolve().parents[1]  # the test root
REPO = HERE.parent
LAUNCH_FILE = REPO / "launch" / "robofollow_sim.launch.py"

# ------------------------------------------------------------------ table and CLI mapping


def test_table_defaults_match_the_params_file():
    """Launching with no arguments must mean exactly the params file."""
    for graph in GRAPHS.values():
        params = yaml.safe_load((REPO / graph.params_file).read_text())
        for arg in graph.args:
            for target in arg.sets:
                node, param = target.split(".", 1)
                assert node in params, f"{graph.params_file} lacks node {node}"
                value = params[node]["ros__parameters"][param]
                assert launcher.parse_value(arg, arg.default) == value, (
                    f"{arg.name} default {arg.default!r} != {target} = {value!r}")


def test_graph_nodes_are_in_params_file_and_end_node_exists():
    for graph in GRAPHS.values():
        params = yaml.safe_load((REPO / graph.params_file).read_text())
        assert {n.name for n in graph.nodes} <= set(params)
        graph.node(graph.end_node)
        for node in graph.nodes:
            if node.python_arg:
                assert node.python_arg in graph.arg_names()


def test_cli_flags_map_one_to_one_onto_node_parameters():
    tokens = ["--scene", "scene1", "--levels", "L0,L1", "--rounds", "2", "--seed", "42",
              "--output", "runs/x", "--policy", "oracle", "tasks:=12", "lock_step:=false"]
    given, options = launcher.parse_command_line(ROBOFOLLOW_SIM, tokens)
    assert options == {"dry_run": False, "params_file": None, "timeout": None,
                       "max_restarts": launcher.MAX_RESTARTS}
    overrides = launcher.parameter_overrides(ROBOFOLLOW_SIM, given)
    assert overrides["evaluator_node"] == {"scene": "scene1", "levels": "L0,L1", "tasks": "12",
                                           "rounds": 2, "base_seed": 42, "output": "runs/x",
                                           "policy": "oracle",  # run.json's provenance
                                           "lock_step": False}
    assert overrides["sim_node"] == {"lock_step": False}  # the scene comes with each begin
    assert overrides["policy_node"] == {"backend": "oracle"}


def test_unknown_or_bad_arguments_are_clear():
    with pytest.raises(ValueError, match=r"unknown launch argument\(s\) \['--bogus'\].*"
                                         r"valid arguments: scene, levels"):
        launcher.parse_launch_args(ROBOFOLLOW_SIM, ["--bogus", "1"])
    with pytest.raises(ValueError, match="valid arguments"):
        launcher.parse_launch_args(ROBOFOLLOW_SIM, ["bogus:=1"])
    with pytest.raises(ValueError, match="'rounds' expects an int, got 'two'"):
        launcher.parse_launch_args(ROBOFOLLOW_SIM, ["--rounds", "two"])
    with pytest.raises(ValueError, match="'lock_step' expects true or false"):
        launcher.parse_launch_args(ROBOFOLLOW_SIM, ["lock_step:=maybe"])
    with pytest.raises(ValueError, match="--timeout must be > 0"):
        launcher.parse_command_line(ROBOFOLLOW_SIM, ["--timeout", "0"])
    with pytest.raises(KeyError, match="known graphs"):
        get_graph("nope")


def test_cli_reports_unknown_argument(capsys):
    from vla_bridge import cli

    assert cli.main(["launch", "robofollow_sim", "--bogus", "1"]) == 2
    err = capsys.readouterr().err
    assert "unknown launch argument(s) ['--bogus']" in err and "policy_python" in err


def test_dry_run_prints_commands(capsys, tmp_path):
    from vla_bridge import cli

    assert cli.main(["launch", "robofollow_sim", "--dry-run", "--levels", "L1"]) == 0
    out = capsys.readouterr().out
    for node in ROBOFOLLOW_SIM.nodes:
        # the recorder runs only with record:=true, the viewer only with viewer:=foxglove
        runs = node.enabled_by is None
        assert (f"-m {node.module} --ros-args --params-file" in out) == runs
        assert (f"-r __node:={node.name}" in out) == runs
    assert "'levels': 'L1'" in out
    assert [n.name for n in ROBOFOLLOW_SIM.nodes if n.enabled_by] == ["recorder_node",
                                                                     "viewer_node"]
    assert cli.main(["launch", "robofollow_sim", "--dry-run", "--record", "true"]) == 0
    out = capsys.readouterr().out
    assert "-m vla_bridge.data.recorder_node --ros-args" in out
    assert "viewer_node" not in out
    assert cli.main(["launch", "robofollow_sim", "--dry-run", "--viewer", "foxglove"]) == 0
    out = capsys.readouterr().out
    assert "-m vla_bridge.data.viewer_node --ros-args" in out
    assert "recorder_node" not in out


def test_node_commands_and_overrides_files(tmp_path):
    given = {"scene": "scene3", "lock_step": "false", "sim_python": sys.executable}
    commands = launcher.node_commands(ROBOFOLLOW_SIM, given, REPO, tmp_path)
    by_name = {c.name: c for c in commands}
    sim = by_name["sim_node"]
    assert sim.argv[:3] == [sys.executable, "-m", "vla_bridge.sim_nodes.sim_node"]
    assert sim.argv[sim.argv.index("--params-file") + 1] == str(REPO / ROBOFOLLOW_SIM.params_file)
    overrides = yaml.safe_load((tmp_path / "sim_node.overrides.yaml").read_text())
    assert overrides == {"/sim_node": {"ros__parameters": {"lock_step": False}}}
    assert sim.env["PYTHONUNBUFFERED"] == "1"
    assert sim.env["FASTDDS_DEFAULT_PROFILES_FILE"]  # conftest's or the shipped profile
    assert sim.env["RMW_IMPLEMENTATION"]


def test_foreign_interpreter_gets_a_clean_ros_environment(tmp_path):
    fake_python = tmp_path / "python"
    fake_python.write_text("#!/bin/sh\n")
    fake_python.chmod(0o755)
    base = {"_ROS_WHEELS_BOOTSTRAP_COMPLETE": "1",
            "LD_LIBRARY_PATH": os.pathsep.join([f"{sys.prefix}/lib", "/opt/other/lib"])}
    env = launcher.node_env(REPO, str(fake_python), base=base)
    assert "_ROS_WHEELS_BOOTSTRAP_COMPLETE" not in env
    assert env["LD_LIBRARY_PATH"] == "/opt/other/lib"
    same = launcher.node_env(REPO, sys.executable, base=base)
    assert same["_ROS_WHEELS_BOOTSTRAP_COMPLETE"] == "1"


def test_graph_node_modules_can_run_with_python_m():
    """`python -m module` only runs main() under a __main__ guard; check the modules that
    exist (the lead's nodes may not be written yet)."""
    checked = 0
    for node in ROBOFOLLOW_SIM.nodes:
        spec = importlib.util.find_spec(node.module.rsplit(".", 1)[0])
        path = Path(spec.submodule_search_locations[0]) / (node.module.rsplit(".", 1)[1] + ".py")
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text())
        guards = [n for n in tree.body
                  if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        assert guards, f"{path} needs `if __name__ == '__main__': sys.exit(main())`"
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
        checked += 1
    if not checked:
        pytest.skip("no graph node module exists yet")

# ---------------------------------------------------------------------- the launch file


def test_launch_file_compiles(tmp_path):
    py_compile.compile(str(LAUNCH_FILE), doraise=True, cfile=str(tmp_path / "launch.pyc"))


class _Recorder:
    """Stands in for a launch/launch_ros class: remembers its arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def _fake_launch_modules(share_dir: Path) -> dict[str, types.ModuleType]:
    classes = {
        "launch": ["LaunchDescription"],
        "launch.actions": ["DeclareLaunchArgument", "RegisterEventHandler",
                           "SetEnvironmentVariable", "Shutdown", "EmitEvent", "GroupAction"],
        "launch.event_handlers": ["OnProcessExit"],
        "launch.substitutions": ["EnvironmentVariable", "LaunchConfiguration"],
        "launch_ros": [],
        "launch_ros.actions": ["Node"],
        "launch_ros.parameter_descriptions": ["ParameterValue"],
    }
    modules = {}
    for name, members in classes.items():
        module = types.ModuleType(name)
        for member in members:
            setattr(module, member, type(member, (_Recorder,), {}))
        modules[name] = module
    ament = types.ModuleType("ament_index_python.packages")
    ament.get_package_share_directory = lambda package: str(share_dir)
    modules["ament_index_python.packages"] = ament
    return modules


def test_launch_file_declares_the_table_and_the_launcher_graph(monkeypatch, tmp_path):
    for name, module in _fake_launch_modules(tmp_path).items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location("robofollow_sim_launch", LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    actions = description.args[0]
    declarations = [a for a in actions if type(a).__name__ == "DeclareLaunchArgument"]
    assert [a.args[0] for a in declarations] == ROBOFOLLOW_SIM.arg_names()
    assert {a.args[0]: a.kwargs["default_value"] for a in declarations} == {
        a.name: a.default for a in ROBOFOLLOW_SIM.args}

    nodes = [a for a in actions if type(a).__name__ == "Node"]
    assert [n.kwargs["name"] for n in nodes] == [n.name for n in ROBOFOLLOW_SIM.nodes]
    assert [n.kwargs["executable"] for n in nodes] == [n.executable for n in ROBOFOLLOW_SIM.nodes]
    expected_params = str(tmp_path / ROBOFOLLOW_SIM.params_file)
    for node in nodes:
        params_file, overrides = node.kwargs["parameters"]
        assert params_file == expected_params
        wanted = {t.split(".", 1)[1]: a.name for a in ROBOFOLLOW_SIM.args for t in a.sets
                  if t.split(".", 1)[0] == node.kwargs["name"]}
        assert {p: v.args[0].args[0] for p, v in overrides.items()} == wanted

    env = {a.args[0]: a.args[1] for a in actions if type(a).__name__ == "SetEnvironmentVariable"}
    assert env["FASTDDS_DEFAULT_PROFILES_FILE"] == str(tmp_path / "config/fastdds_profile.xml")

    handler = next(a for a in actions if type(a).__name__ == "RegisterEventHandler").args[0]
    assert type(handler).__name__ == "OnProcessExit"
    assert handler.kwargs["target_action"].kwargs["name"] == ROBOFOLLOW_SIM.end_node
    assert type(handler.kwargs["on_exit"][0]).__name__ == "Shutdown"

# ---------------------------------------------------------------- real process graphs


@pytest.fixture
def graph_dir(tmp_path):
    """A share dir with the test graph's params file (incl. a /** section, which must not
    stop launch-argument overrides from applying)."""
    params = {
        "/**": {"ros__parameters": {"file_only": "wildcard"}},
        "talker": {"ros__parameters": {"file_only": "from_file", "greeting": "file_greeting",
                                       "report_dir": str(tmp_path)}},
        "listener": {"ros__parameters": {"file_only": "from_file", "count": 9,
                                         "report_dir": str(tmp_path)}},
    }
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(params))
    return tmp_path


def _start_driver(share_dir: Path, *tokens: str, sigint_grace: float = 3.0) -> subprocess.Popen:
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    # TMPDIR: a launcher killed with SIGKILL cannot remove its overrides dir; keep it here.
    env = dict(os.environ, PYTHONPATH=path, TMPDIR=str(share_dir))
    return subprocess.Popen([sys.executable, "-m", "support.launch_test_nodes.driver",
                             str(share_dir), str(sigint_grace), *tokens], env=env,
                            cwd=share_dir, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def _finish(proc: subprocess.Popen, timeout: float = 30) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"launcher did not finish in {timeout} s:\n{out}")
    return proc.returncode, out


def _report(share_dir: Path, name: str) -> dict:
    return json.loads((share_dir / f"{name}.json").read_text())


def _wait_for_reports(share_dir: Path, names, timeout: float = 20) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all((share_dir / f"{n}.json").exists() for n in names):
            return [_report(share_dir, n) for n in names]
        time.sleep(0.05)
    raise AssertionError(f"nodes {names} did not start within {timeout} s")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_gone(pids, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.graph
@pytest.mark.slow
def test_graph_runs_separate_processes_with_params_and_overrides(graph_dir):
    proc = _start_driver(graph_dir, "greeting:=hello", "--count", "3")
    code, out = _finish(proc)
    assert code == 0, out
    talker = _report(graph_dir, "talker")
    listener = talker["heard"]  # what the listener told the talker over DDS
    assert len({proc.pid, talker["pid"], listener["pid"]}) == 3, "nodes must be separate processes"
    assert listener["name"] == "listener"
    assert talker["params"]["greeting"] == "hello"  # override beats the node's file value
    assert listener["params"]["greeting"] == "hello"
    assert listener["params"]["count"] == 3
    assert talker["params"]["file_only"] == "from_file" == listener["params"]["file_only"]
    assert "[talker] talker up as talker" in out and "[listener] listener up as listener" in out


@pytest.mark.graph
@pytest.mark.slow
def test_end_node_exit_code_is_propagated(graph_dir):
    code, out = _finish(_start_driver(graph_dir, "--exit_code", "7"))
    assert code == 7, out
    assert "talker exited with code 7" in out


@pytest.mark.graph
@pytest.mark.slow
def test_a_dying_node_fails_the_graph_naming_it(graph_dir):
    code, out = _finish(_start_driver(graph_dir, "wait_forever:=true", "die_after:=0.5"))
    assert code == 1, out
    assert "node listener died with code 3" in out
    talker = _report(graph_dir, "talker")
    assert _wait_gone([talker["pid"]], 5), "the other nodes must be stopped"


@pytest.mark.graph
@pytest.mark.slow
@pytest.mark.parametrize("stubborn", [False, True], ids=["polite", "ignores-sigint"])
def test_ctrl_c_stops_every_node(graph_dir, stubborn):
    proc = _start_driver(graph_dir, "wait_forever:=true", f"ignore_sigint:={str(stubborn).lower()}",
                         sigint_grace=1.0)
    pids = [r["pid"] for r in _wait_for_reports(graph_dir, ["talker", "listener"])]
    time.sleep(0.3)  # let the listener install its SIGINT handling
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    code, out = _finish(proc, timeout=15)
    assert code == 128 + signal.SIGINT, out
    assert time.monotonic() - started < 6, out
    assert _wait_gone(pids, 2), f"processes left behind: {[p for p in pids if not _gone(p)]}"
    if stubborn:
        assert "sending SIGTERM to listener" in out


@pytest.mark.graph
@pytest.mark.slow
def test_nodes_die_with_a_killed_launcher(graph_dir):
    proc = _start_driver(graph_dir, "wait_forever:=true")
    pids = [r["pid"] for r in _wait_for_reports(graph_dir, ["talker", "listener"])]
    proc.kill()  # SIGKILL: the launcher cannot clean up; the kernel tells the children
    proc.communicate()
    assert _wait_gone(pids, 5), f"orphans left: {[p for p in pids if not _gone(p)]}"
