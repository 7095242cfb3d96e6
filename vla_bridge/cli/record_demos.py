"""`vla-bridge record-demos --task ID --output DIR [...]`: teleoperated demonstrations.

Runs the teleop graph (below) as separate processes with the package's own launcher, then
the operator console (vla_bridge/data/teleop.py) in this terminal: keys start, save, discard
and redo an episode and name its task and instruction. Every saved episode is a complete
rosbag2 bag under DIR/bags/ and a row of DIR/results.jsonl, which `vla-bridge export lerobot
DIR --fps 10 --out DATASET` turns into a LeRobot dataset: the followers' measured joints are
the state, the leaders' commands (read through piper_sdk on the follower's bus) the action.

The teleop graph is robofollow_real's robot nodes and its recorder, from
config/robofollow_real.yaml: piper_node with ``teleop`` (it sends the arms nothing: each
follower obeys its linked leader arm), realsense_node, tracker_node and recorder_node (output
DIR). ``--use_fake_hardware true`` runs it on the firmware emulator with synthetic cameras:
a fake leader per arm plays the oracle's plan of the task. ``--attach`` runs no graph and
joins one already running on this ROS_DOMAIN_ID (e.g. started with ros2 launch); node
output goes to DIR/teleop_graph.log. Errors are one line on stderr: exit 2 for bad
arguments (an unknown task), 1 when the graph cannot start or a scripted key (--keys) failed;
130 after Ctrl-C (the episode in progress is discarded; saved ones stay).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

from vla_bridge.ros.launch_args import (PIPER, REAL_PARAMS_FILE, REALSENSE, RECORDER, TRACKER,
                                        GraphSpec, LaunchArg, NodeSpec)

PROG = "vla-bridge record-demos"
STARTUP_TIMEOUT_S = 90.0  # the graph's nodes (cameras, tracker calibration) until the console

#: robofollow_real's robot nodes + the recorder (always on); the graph ends with the recorder
TELEOP = GraphSpec(
    name="robofollow_teleop",
    description="teleoperated demonstrations on the PiPER pair: PiPER node (teleop), RealSense "
                "cameras, marker tracker, recorder.",
    params_file=REAL_PARAMS_FILE,
    nodes=(PIPER, REALSENSE, TRACKER,
           NodeSpec(RECORDER.name, RECORDER.module, RECORDER.executable)),
    end_node=RECORDER.name,
    args=(
        LaunchArg("use_fake_hardware", "false", "the PiPER firmware emulator with fake leader "
                  "arms on virtual CAN (and synthetic cameras) instead of the arms", type="bool",
                  sets=("piper_node.use_fake_hardware", "realsense_node.use_fake_hardware")),
        LaunchArg("arms", "left,right", "arms of the PiPER node (the dataset needs both)",
                  sets=("piper_node.arms", "tracker_node.arms")),
        LaunchArg("left_can_port", "can_left", "CAN port of the left follower (and its leader)",
                  sets=("piper_node.left_can_port",)),
        LaunchArg("right_can_port", "can_right", "CAN port of the right follower (and its leader)",
                  sets=("piper_node.right_can_port",)),
        LaunchArg("camera_serials", "",
                  "cam_high:SERIAL,cam_left_wrist:SERIAL,cam_right_wrist:SERIAL",
                  sets=("realsense_node.serials",)),
        LaunchArg("camera_playback_dir", "", "cameras from DIR/<camera>.db3 recordings",
                  sets=("realsense_node.playback_dir",)),
        LaunchArg("camera_source", "auto", "auto, devices, playback or synthetic",
                  sets=("realsense_node.source",)),
        LaunchArg("calibration_file", "", "table calibration to load (and write)",
                  sets=("tracker_node.calibration_file",)),
        # always given (run_graph below): what makes the graph a teleop graph
        LaunchArg("output", "runs/demos", "run directory", sets=("recorder_node.output",)),
        LaunchArg("teleop", "true", "the PiPER node only listens", type="bool",
                  sets=("piper_node.teleop",)),
        LaunchArg("stall_timeout_s", "86400.0", "a demonstration makes no policy progress",
                  type="float", sets=("piper_node.stall_timeout_s",)),
    ),
)
GRAPH_OPTIONS = [a.name for a in TELEOP.args][:8]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True,
                        help="RoboFollow task id of the first episode (`t ID` names another)")
    parser.add_argument("--instruction", default=None,
                        help="instruction of the first episode (default: the task's; `i TEXT`)")
    parser.add_argument("--output", default="runs/demos", help="run directory (bags, results)")
    parser.add_argument("--operator", default="", help="recorded with every saved episode")
    parser.add_argument("--keys", default=None, metavar="FILE",
                        help="scripted keys, one per line (tests, rehearsals); `w` waits for "
                             "the fake leaders' plan")
    parser.add_argument("--attach", action="store_true",
                        help="join a teleop graph already running instead of starting one")
    parser.add_argument("--leader-wait", type=float, default=3.0, metavar="S",
                        help="an episode starts only with a leader command this recent")
    for arg in TELEOP.args[:8]:
        parser.add_argument(f"--{arg.name}", default=None, metavar=arg.type.upper(),
                            help=f"{arg.description} (default: {arg.default!r})")


def _fail(text: str, code: int) -> int:
    print(f"{PROG}: error: {text}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    from vla_bridge.data.teleop import DemoError, DemoSettings, resolve_task
    from vla_bridge.ros.launcher import parse_value

    try:
        task = resolve_task(args.task)
        given = {name: getattr(args, name) for name in GRAPH_OPTIONS
                 if getattr(args, name) is not None}
        for name, value in given.items():
            parse_value(TELEOP.arg(name), value)
    except (DemoError, ValueError) as exc:
        return _fail(str(exc), 2)
    if args.keys and not Path(args.keys).is_file():
        return _fail(f"--keys {args.keys}: no such file", 2)
    output = Path(args.output)
    fake = str(given.get("use_fake_hardware", "false")).lower() in ("true", "1", "yes", "on")
    settings = DemoSettings(output=output, fake_hardware=fake, operator=args.operator,
                            hardware="fake_piper" if fake else "piper",
                            leader_wait_s=float(args.leader_wait))
    given.update(output=str(output.resolve()), teleop="true", stall_timeout_s="86400.0")
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(f"cannot create {output}: {exc}", 1)
    graph = None if args.attach else _Graph(given, output / "teleop_graph.log")
    try:
        return _console(args, task, settings, graph)
    except DemoError as exc:
        return _fail(str(exc), 1)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted before the console started; nothing was recorded",
              file=sys.stderr)
        return 130
    finally:
        if graph is not None:
            graph.stop()


def _console(args, task, settings, graph) -> int:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from vla_bridge.data.demo_node import DemoNode
    from vla_bridge.data.teleop import DemoError, DemoSession

    rclpy.init()
    node = DemoNode()
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        what = "fake hardware" if settings.fake_hardware else "the arms"
        print(f"[demos] waiting for the teleop graph ({what})...", flush=True)
        while node.problem() is not None or node.state() is None:
            if graph is not None and graph.ended():
                raise DemoError(f"the teleop graph stopped: {graph.failure()}")
            if time.monotonic() > deadline:
                raise DemoError(f"no teleop graph after {STARTUP_TIMEOUT_S:g} s: "
                                f"{node.problem() or 'no joint states of both arms'}"
                                + ("" if graph is None else f" (see {graph.log_path})"))
            time.sleep(0.1)
        session = DemoSession(node, settings, task, args.instruction, echo=print)
        return session.run(_reader(args.keys), strict=args.keys is not None)
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


def _reader(keys_file: str | None):
    """read(prompt): the terminal, or the scripted keys (EOFError when they run out)."""
    if keys_file is None:
        return input
    from vla_bridge.reporting.operator_console import Answers, StopConsole
    answers = Answers.from_file(keys_file, sys.stdout)

    def read(prompt: str) -> str:
        try:
            return answers.ask(prompt)
        except StopConsole:
            raise EOFError from None
    return read


class _Graph:
    """The teleop graph's processes (the package's launcher, in a thread), output to a log."""

    def __init__(self, given: dict, log_path: Path):
        from vla_bridge.ros.launcher import GraphRunner, find_share_dir, node_commands
        self.log_path = log_path
        self._tmp = tempfile.TemporaryDirectory(prefix="vla_bridge_teleop_")
        commands = node_commands(TELEOP, given, find_share_dir(), Path(self._tmp.name))
        self._log = open(log_path, "a", buffering=1)
        self.runner = GraphRunner(commands, TELEOP.end_node, out=self._log, close_grace=1.0)
        self.code: list[int] = []
        self._thread = threading.Thread(target=lambda: self.code.append(self.runner.run()),
                                        daemon=True)
        self._thread.start()

    def ended(self) -> bool:
        return not self._thread.is_alive()

    def failure(self) -> str:
        """The line of the node that died and its last words, from the log."""
        lines = self.log_path.read_text(errors="replace").splitlines()
        died = [line for line in lines if " died with " in line]
        if not died:
            return f"exit code {self.code[0] if self.code else '?'} (see {self.log_path})"
        name = died[-1].split("node ", 1)[1].split(" ", 1)[0]
        said = [line for line in lines if line.startswith(f"[{name}] ") and ": " in line]
        last = said[-1].split("] ", 1)[1] if said else died[-1]
        return f"{last} (see {self.log_path})"

    def stop(self) -> None:
        self.runner.request_stop()
        self._thread.join(timeout=30.0)
        self._log.close()
        self._tmp.cleanup()
