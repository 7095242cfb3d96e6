"""Sim or hardware is a launch argument: the robofollow_sim graph runs an episode on the fake PiPER
pair (firmware emulator on virtual CAN, driven through piper_sdk), RealSense recordings played
through the camera node's pipeline and the ArUco tracker scoring frames, and the only difference
from the MuJoCo configuration is the launch arguments.

The camera recordings are made here: cam_high sees the calibration board and the Scene 1 objects'
markers (rendered with OpenCV at their default-layout poses), the wrist cameras a test pattern;
librealsense's recorder writes them from a software device.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

from vla_bridge.ros import launcher
from vla_bridge.ros.launch_args import GRAPHS, ROBOFOLLOW_REAL, ROBOFOLLOW_SIM, ROLES, resolve_nodes

REPO = Path(__file__).resolve().parents[2]
TASK_OK = "L0_pickup_yellow_block_3"
TASK_HIDDEN = "L0_pickup_yellow_block_2"  # its block's marker is not in the recording
COMMON = {"tasks": f"{TASK_OK},{TASK_HIDDEN}", "levels": "", "policy": "hold",
          "max_policy_calls": "2", "max_actions_per_call": "10", "chunk_size": "10",
          "episode_timeout": "30"}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    from vla_bridge.robot_nodes.realsense.realsense_io import Intrinsics, import_pyrealsense2
    from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig

    try:
        rs = import_pyrealsense2()  # after rclpy: see realsense_io's notes
    except ImportError:
        pytest.skip("pyrealsense2 is not installed")
    from support.realsense_recordings import pattern, record_synthetic
    from support.marker_scenes import layout_poses, render_scene

    root = tmp_path_factory.mktemp("recordings")
    config = TrackerConfig.load()
    width, height = 640, 480
    focal = (height / 2) / np.tan(np.deg2rad(22.5))
    intr = Intrinsics(width, height, focal, focal, (width - 1) / 2, (height - 1) / 2)
    objects = layout_poses(config)
    del objects["yellow_block_2"]
    image = render_scene(config, objects, intr=intr, supersample=4)
    rs_intr = rs.intrinsics()
    rs_intr.width, rs_intr.height, rs_intr.fx, rs_intr.fy = width, height, focal, focal
    rs_intr.ppx, rs_intr.ppy = intr.ppx, intr.ppy
    rs_intr.model, rs_intr.coeffs = rs.distortion.none, [0.0] * 5
    record_synthetic(root / "cam_high.db3", [image] * 3, "100000000001", fps=10,
                     intrinsics=rs_intr)
    for seed, cam in enumerate(("cam_left_wrist", "cam_right_wrist"), 2):
        record_synthetic(root / f"{cam}.db3", [pattern(i, seed, 320, 240) for i in range(3)],
                         f"10000000000{seed}", fps=10)
    return root


def _args(values: dict) -> list[str]:
    return [token for name, value in values.items() for token in (f"--{name}", value)]

# ------------------------------------------------------------------ launch arguments only


def test_only_launch_arguments_differ_between_sim_and_fake_piper(tmp_path):
    sim_dir, fake_dir = tmp_path / "sim", tmp_path / "fake"
    sim_dir.mkdir(), fake_dir.mkdir()
    sim = {c.name: c for c in launcher.node_commands(ROBOFOLLOW_SIM, COMMON, REPO, sim_dir)}
    fake_args = {**COMMON, "hardware": "fake_piper", "camera_playback_dir": "/data/rec"}
    fake = {c.name: c for c in launcher.node_commands(ROBOFOLLOW_SIM, fake_args, REPO, fake_dir)}
    assert list(sim) == ["sim_node", "policy_node", "evaluator_node"]
    assert list(fake) == ["piper_node", "realsense_node", "tracker_node", "policy_node",
                          "evaluator_node"]
    # policy and evaluator: the very same command (but for the overrides file's folder); the
    # evaluator is told the hardware (run.json's provenance)
    assert fake["evaluator_node"].overrides.pop("hardware") == "fake_piper"
    for name in ("policy_node", "evaluator_node"):
        assert [a.replace(str(fake_dir), str(sim_dir)) for a in fake[name].argv] == sim[name].argv
        assert fake[name].overrides == sim[name].overrides
    assert (fake_dir / "policy_node.overrides.yaml").read_text() == \
        (sim_dir / "policy_node.overrides.yaml").read_text()
    # the robot role: the real graph's nodes with the real graph's parameters
    real_params = str(REPO / "config" / "robofollow_real.yaml")
    for name in ("piper_node", "realsense_node", "tracker_node"):
        argv = fake[name].argv
        assert argv[argv.index("--params-file") + 1] == real_params
    assert fake["piper_node"].overrides == {"use_fake_hardware": True}
    # the PiPER node owns the episode protocol on the contract's topics: nothing is remapped
    assert [a for a in fake["piper_node"].argv if ":=" in a] == ["__node:=piper_node"]
    # the camera node knows fake hardware: without serials or recordings it renders cameras
    assert fake["realsense_node"].overrides == {"playback_dir": "/data/rec",
                                                "use_fake_hardware": True}
    real = {c.name: c for c in launcher.node_commands(
        ROBOFOLLOW_SIM, {**COMMON, "hardware": "piper", "camera_source": "synthetic"}, REPO,
        tmp_path)}
    assert real["piper_node"].overrides == {"use_fake_hardware": False}
    assert real["realsense_node"].overrides == {"use_fake_hardware": False,
                                                "source": "synthetic"}


def test_role_arguments_are_checked_and_default_to_the_real_params_file():
    with pytest.raises(ValueError, match=r"'hardware' must be one of \['sim', 'fake_piper', "
                                         r"'piper'\], got 'mujoco'"):
        resolve_nodes(ROBOFOLLOW_SIM, {"hardware": "mujoco"})
    params = yaml.safe_load((REPO / "config" / "robofollow_real.yaml").read_text())
    for choice in ROLES["robofollow_sim"].choices.values():
        for arg_name, target in choice.arg_params:
            node, param = target.split(".", 1)
            default = launcher.parse_value(ROBOFOLLOW_SIM.arg(arg_name),
                                           ROBOFOLLOW_SIM.arg(arg_name).default)
            assert params[node]["ros__parameters"][param] == default
    assert "robofollow_real" in GRAPHS and ROBOFOLLOW_REAL.end_node == "evaluator_node"
    assert [n.name for n in ROBOFOLLOW_REAL.nodes] == [
        "piper_node", "realsense_node", "tracker_node", "policy_node", "evaluator_node",
        "recorder_node", "viewer_node"]


class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def _load_launch_file(path: Path, share: Path, monkeypatch):
    """Run a launch file's generate_launch_description() against recording stand-ins of the
    launch / launch_ros classes (no ROS 2 install here)."""
    classes = {"launch": ["LaunchDescription"],
               "launch.actions": ["DeclareLaunchArgument", "GroupAction", "RegisterEventHandler",
                                  "SetEnvironmentVariable", "Shutdown"],
               "launch.event_handlers": ["OnProcessExit"],
               "launch.substitutions": ["EnvironmentVariable", "LaunchConfiguration"],
               "launch_ros": [], "launch_ros.actions": ["Node"],
               "launch_ros.parameter_descriptions": ["ParameterValue"]}
    for name, members in classes.items():
        module = types.ModuleType(name)
        for member in members:
            setattr(module, member, type(member, (_Recorder,), {}))
        monkeypatch.setitem(sys.modules, name, module)
    ament = types.ModuleType("ament_index_python.packages")
    ament.get_package_share_directory = lambda package: str(share)
    monkeypatch.setitem(sys.modules, "ament_index_python.packages", ament)
    spec = importlib.util.spec_from_file_location(path.stem.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description().args[0]


class _Context:
    def __init__(self, **configs):
        self.launch_configurations = configs


def test_launch_files_choose_the_robot_role_by_argument(monkeypatch, tmp_path):
    actions = _load_launch_file(REPO / "launch" / "robofollow_sim.launch.py", tmp_path,
                                monkeypatch)
    names = [a.args[0] for a in actions if type(a).__name__ == "DeclareLaunchArgument"]
    assert names == ROBOFOLLOW_SIM.arg_names() and "hardware" in names
    sim_node = next(a for a in actions if type(a).__name__ == "Node"
                    and a.kwargs["name"] == "sim_node")
    groups = [a for a in actions if type(a).__name__ == "GroupAction"]
    assert len(groups) == 2
    for context, runs_sim, runs_group in [(_Context(hardware="sim"), True, [False, False]),
                                          (_Context(hardware="fake_piper"), False, [True, False]),
                                          (_Context(hardware="piper"), False, [False, True])]:
        assert sim_node.kwargs["condition"].evaluate(context) is runs_sim
        assert [g.kwargs["condition"].evaluate(context) for g in groups] == runs_group
    fake_nodes = {n.kwargs["name"]: n for n in groups[0].args[0]}
    assert list(fake_nodes) == ["piper_node", "realsense_node", "tracker_node"]
    piper = fake_nodes["piper_node"]
    params_file, overrides = piper.kwargs["parameters"]
    assert params_file == str(tmp_path / "config" / "robofollow_real.yaml")
    assert overrides == {"use_fake_hardware": True}
    assert "remappings" not in piper.kwargs
    camera_params = fake_nodes["realsense_node"].kwargs["parameters"][1]
    assert camera_params["playback_dir"].args[0].args[0] == "camera_playback_dir"
    assert camera_params["source"].args[0].args[0] == "camera_source"
    assert camera_params["use_fake_hardware"] is True

    real = _load_launch_file(REPO / "launch" / "robofollow_real.launch.py", tmp_path, monkeypatch)
    nodes = [a for a in real if type(a).__name__ == "Node"]
    assert [n.kwargs["name"] for n in nodes] == [n.name for n in ROBOFOLLOW_REAL.nodes]
    # every node runs unconditionally, except the recorder (only with record:=true) and the
    # viewer (only with viewer:=foxglove)
    conditions = {n.kwargs["name"]: n.kwargs.get("condition") for n in nodes}
    assert [name for name, c in conditions.items() if c is not None] == ["recorder_node",
                                                                         "viewer_node"]
    for value, runs in (("true", True), ("false", False)):
        context = type("Context", (), {"launch_configurations": {"record": value}})()
        assert conditions["recorder_node"].evaluate(context) is runs
    for value, runs in (("foxglove", True), ("", False), ("true", False)):
        context = type("Context", (), {"launch_configurations": {"viewer": value}})()
        assert conditions["viewer_node"].evaluate(context) is runs
    assert nodes[0].kwargs["parameters"][0] == str(tmp_path / "config" / "robofollow_real.yaml")
    handler = next(a for a in real if type(a).__name__ == "RegisterEventHandler").args[0]
    assert handler.kwargs["target_action"].kwargs["name"] == "evaluator_node"

# ------------------------------------------------------------------ an episode on the fake pair


@pytest.mark.graph
@pytest.mark.slow
def test_fake_piper_pair_runs_and_scores_episodes_through_the_sim_graph(recordings, tmp_path):
    out = tmp_path / "run"
    args = {**COMMON, "hardware": "fake_piper", "camera_playback_dir": str(recordings),
            "output": str(out)}
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_sim", *_args(args),
           "--timeout", "130"]  # a hung graph prints every node's stacks and exits 124
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ))
    try:
        text, _ = proc.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the launcher stops its nodes on SIGTERM
        text, _ = proc.communicate(timeout=30)
        raise AssertionError(f"the graph did not finish in 150 s:\n{text[-6000:]}") from None
    assert proc.returncode == 0, text[-4000:]
    assert "table calibrated from board markers [20, 21, 22, 23]" in text
    rows = {r["task_id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    ok, hidden = rows[TASK_OK], rows[TASK_HIDDEN]
    log = "\n".join(line for line in text.splitlines() if "[launcher] started" not in line)
    if ok["status"] != "ok" or hidden["status"] != "failed":
        pytest.fail(f"{TASK_OK}: {ok['status']} {ok['error']}\n{TASK_HIDDEN}: "
                    f"{hidden['status']} {hidden['error']}\n{log[-5000:]}")
    # scored by the stage scorer from the tracker's frames: hold never lifts the block
    assert ok["status"] == "ok" and ok["policy_calls"] == 2, ok
    # the tracker records a frame per PiPER joint state: ~30 over 2 chunks of 10 x 0.06 s on
    # an idle machine, fewer when the machine is loaded (the node's timers run late), so
    # this only checks that frames arrived throughout; rates belong to the benchmarks
    assert ok["frames"] >= 10
    assert ok["intent_score"] == 0.0 and not ok["complete"]
    # the fake arms start at home with open grippers, and hold keeps them open: no grasp
    assert ok["flags"]["closest_at_grasp"] is None
    assert hidden["status"] == "failed"
    assert "task objects ['yellow_block_2'] are not tracked" in hidden["error"]
    episode = np.load(out / ok["episode_file"])
    assert episode["pos/yellow_block_3"].shape == (ok["frames"], 3)
    # the tracked block sits where it was drawn (default layout), to ~1.5 cm at 640 x 480
    np.testing.assert_allclose(episode["pos/yellow_block_3"][0], [0.10, -0.18, 0.76], atol=0.015)
    assert "pos/yellow_block_2" not in episode.files
    # TCPs from forward kinematics of the fake arms' measured joints
    assert np.all(np.isfinite(episode["tcp_pos/left"])) and episode["tcp_pos/left"][0][0] < 0


@pytest.mark.graph
@pytest.mark.slow
def test_runbook_fake_hardware_check_runs_without_cameras(tmp_path):
    """docs/real_hardware.md section 4 as written, on a machine without cameras: no serials and
    no recordings, so the camera node renders synthetic cameras; the tracker calibrates from
    them and the trial is scored; the fake arms' start pose logs no safety flood."""
    out = tmp_path / "fake_check"
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_real",
           "--use_fake_hardware", "true", "--policy", "hold", "--tasks", TASK_OK,
           "--rounds", "1", "--output", str(out), "--timeout", "150"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ), timeout=200)
    text = proc.stdout
    log = "\n".join(line for line in text.splitlines() if "[launcher] started" not in line)
    assert proc.returncode == 0, log[-5000:]
    assert "fake hardware without camera serials or recordings: synthetic cameras" in text
    assert "table calibrated from board markers" in text, log[-5000:]
    row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert row["status"] == "ok" and row["policy_calls"] == 10, (row, log[-5000:])
    safety_lines = [line for line in text.splitlines() if "safety [" in line]
    assert len(safety_lines) < 10, safety_lines
