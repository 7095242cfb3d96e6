"""The package's own launcher: runs a node graph as separate processes, without ros2 launch.

Generic: a `GraphSpec` (vla_bridge.ros.launch_args) and argument values in, processes out.
`vla-bridge launch robofollow_sim --levels L0,L1` and launch/robofollow_sim.launch.py run
the same nodes with the same params file and argument table.

Each node runs as
    PYTHON -m MODULE --ros-args --params-file GRAPH.yaml --params-file OVERRIDES.yaml
                     -r __node:=NAME
OVERRIDES.yaml holds the launch-argument values under the node's own key. (A `-p name:=value`
rule would be a `/**` rule, and rcl lets a node-specific entry of a params file beat it
whenever the file also has a `/**` section, so `-p` overrides could silently not apply.)

Lifetime: the graph ends when its end node (the evaluator) exits, with that exit code. When
another node dies first, the launcher says "node X died with code N": a restartable node (the
policy, NodeSpec.restartable) is started again, at most --max-restarts times; any other death
is final: the end node is told (node_events: the launcher's notices, $VLA_BRIDGE_NODE_EVENTS),
gets `close_grace` seconds to close its run (run.json, summary.json) and exit by itself, then
the rest is stopped and the launcher exits 1. An observer (NodeSpec.observer: the viewer) feeds
nothing into the run: its death is one line, it is started again at most OBSERVER_RESTARTS
times, then let go; the graph goes on and the end node hears nothing of it (no `restarted` or
`died` event, which would fail an episode or stop the run).
Ctrl-C / SIGTERM are forwarded to every node: SIGINT, then SIGTERM after a grace period, then
SIGKILL. Nodes run in their own process groups, so signals reach their children too and a
terminal's Ctrl-C reaches each node once (through the launcher).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import yaml

from vla_bridge.ros import node_events
from vla_bridge.ros.params_file import check_params_file
from vla_bridge.ros.launch_args import (FASTDDS_PROFILE, PACKAGE, GraphSpec, LaunchArg, get_graph,
                                        resolve_nodes)

LOG = "[launcher]"
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
MAX_RESTARTS = 2  # restarts of each restartable node per graph run
OBSERVER_RESTARTS = 3  # restarts of each observer (the viewer) before it is let go

# --------------------------------------------------------------------- share directory


def find_share_dir() -> Path:
    """Where config/ and launch/ live: the source tree when running from a checkout
    (including `pip install -e .`), else the installed share/vla_bridge."""
    source = Path(__file__).resolve().parents[2]
    if (source / "package.xml").is_file() and (source / "config").is_dir():
        return source
    try:  # a colcon / ROS install (AMENT_PREFIX_PATH set)
        from ament_index_python.packages import get_package_share_directory
        return Path(get_package_share_directory(PACKAGE))
    except Exception:  # noqa: BLE001 - not installed that way; try the next place
        pass
    installed = Path(sys.prefix) / "share" / PACKAGE  # a plain `pip install .`
    if (installed / "config").is_dir():
        return installed
    raise FileNotFoundError(f"cannot find the {PACKAGE} share directory (config/, launch/); "
                            f"looked in {source}, the ament index and {installed}")

# -------------------------------------------------------------------- argument values


def parse_value(arg: LaunchArg, raw: str):
    """A command-line string -> the Python value of the argument's type (ValueError if bad)."""
    text = raw.strip()
    if arg.type == "str":
        return raw
    if arg.type == "bool":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(f"argument {arg.name!r} expects true or false, got {raw!r}")
    try:
        return int(text) if arg.type == "int" else float(text)
    except ValueError:
        raise ValueError(f"argument {arg.name!r} expects an {arg.type}, got {raw!r}") from None


def check_names(arg: LaunchArg, raw: str) -> None:
    """ValueError (one line) when a comma-separated value of an argument with `names_from`
    (e.g. LIBERO's `suite`: the catalog's suites) holds a name that is not among them."""
    if not arg.names_from:
        return
    names = [n.strip() for n in str(raw).split(",") if n.strip()]
    if not names:
        return
    module, _, function = arg.names_from.partition(":")
    from importlib import import_module
    known = list(getattr(import_module(module), function)())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"argument {arg.name!r}: unknown name(s) {unknown}; known: "
                         f"{', '.join(sorted(known))}")


def arg_parser(graph: GraphSpec, prog: str | None = None) -> argparse.ArgumentParser:
    """An argparse parser for a graph's launch arguments (--name value) and the launcher's
    own options (--dry-run, --params-file)."""
    parser = argparse.ArgumentParser(
        prog=prog or f"vla-bridge launch {graph.name}", allow_abbrev=False, exit_on_error=False,
        description=graph.description or f"launch the {graph.name} graph",
        epilog="Graph arguments may also be given as name:=value, like ros2 launch.")
    graph_args = parser.add_argument_group("graph arguments")
    for arg in graph.args:
        flags = [f"--{arg.name}"] + ([f"--{arg.name.replace('_', '-')}"] if "_" in arg.name else [])
        target = f"; sets {', '.join(arg.sets)}" if arg.sets else ""
        graph_args.add_argument(*flags, dest=arg.name, metavar=arg.type.upper(), default=None,
                                help=f"{arg.description} (default: {arg.default!r}{target})")
    own = parser.add_argument_group("launcher options")
    own.add_argument("--dry-run", dest="_dry_run", action="store_true",
                     help="print the node commands instead of running them")
    own.add_argument("--params-file", dest="_params_file", default=None, metavar="FILE",
                     help="use this ROS 2 params file instead of the graph's own")
    own.add_argument("--timeout", dest="_timeout", type=float, default=None, metavar="SECONDS",
                     help="stop the graph after this long (exit code 124), first printing every "
                          "node's Python stacks (default: no limit)")
    own.add_argument("--max-restarts", dest="_max_restarts", type=int, default=MAX_RESTARTS,
                     metavar="N", help="restart a dying policy node at most N times "
                     f"(default: {MAX_RESTARTS}; 0: its death ends the run)")
    return parser


def parse_command_line(graph: GraphSpec, tokens: list[str]) -> tuple[dict[str, str], dict]:
    """({graph argument: raw value} as given, {"dry_run", "params_file", "timeout",
    "max_restarts"}).

    Graph arguments come as `--name value` or `name:=value`. Raises ValueError listing the
    valid arguments on an unknown one or a bad value.
    """
    valid = graph.arg_names()
    flags: list[str] = []
    for token in tokens:
        if ":=" in token and not token.startswith("-"):
            name, value = token.split(":=", 1)
            flags += [f"--{name}", value]
        else:
            flags.append(token)
    try:
        parsed, unknown = arg_parser(graph).parse_known_args(flags)
    except argparse.ArgumentError as exc:
        raise ValueError(f"{exc}; valid arguments: {', '.join(valid)}") from None
    if unknown:
        names = [u for u in unknown if u.startswith("-")] or unknown
        raise ValueError(f"unknown launch argument(s) {names} for graph {graph.name!r}; "
                         f"valid arguments: {', '.join(valid)}")
    values = vars(parsed)
    given = {name: values[name] for name in valid if values[name] is not None}
    for name, value in given.items():
        parse_value(graph.arg(name), value)  # validate early, with the argument's name
        check_names(graph.arg(name), value)
    if values["_timeout"] is not None and values["_timeout"] <= 0:
        raise ValueError(f"--timeout must be > 0 seconds, got {values['_timeout']}")
    if values["_max_restarts"] < 0:
        raise ValueError(f"--max-restarts must be >= 0, got {values['_max_restarts']}")
    return given, {"dry_run": values["_dry_run"], "params_file": values["_params_file"],
                   "timeout": values["_timeout"], "max_restarts": values["_max_restarts"]}


def parse_launch_args(graph: GraphSpec, tokens: list[str]) -> dict[str, str]:
    """The explicitly given graph arguments {name: raw value} (see parse_command_line)."""
    return parse_command_line(graph, tokens)[0]


def resolved_values(graph: GraphSpec, given: dict[str, str]) -> dict[str, str]:
    """Every argument's value: the given one or the table's default."""
    unknown = sorted(set(given) - set(graph.arg_names()))
    if unknown:
        raise ValueError(f"unknown launch argument(s) {unknown} for graph {graph.name!r}; "
                         f"valid arguments: {', '.join(graph.arg_names())}")
    return {arg.name: given.get(arg.name, arg.default) for arg in graph.args}

# ------------------------------------------------------------------------ the commands


@dataclass
class NodeCommand:
    name: str
    argv: list[str]
    env: dict[str, str]
    overrides: dict  # parameters set by launch arguments (written to the overrides file)
    restartable: bool = False  # NodeSpec.restartable
    observer: bool = False  # NodeSpec.observer: its death never ends the graph


def parameter_overrides(graph: GraphSpec, given: dict[str, str]) -> dict[str, dict]:
    """{node: {param: typed value}} for the explicitly given arguments."""
    per_node: dict[str, dict] = {node.name: {} for node in graph.nodes}
    for name, raw in given.items():
        arg = graph.arg(name)
        for target in arg.sets:
            node, param = target.split(".", 1)
            per_node[node][param] = parse_value(arg, raw)
    return per_node


def _interpreter(node_python_arg: str | None, values: dict[str, str]) -> str:
    choice = values.get(node_python_arg, "") if node_python_arg else ""
    if not choice:
        return sys.executable
    found = shutil.which(choice)
    if not found:
        raise FileNotFoundError(f"interpreter {choice!r} (argument {node_python_arg}) not found")
    return os.path.abspath(found)


def node_env(share_dir: Path, python: str, extra: dict[str, str] | None = None,
             base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a node process."""
    env = dict(os.environ if base is None else base)
    env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(share_dir / FASTDDS_PROFILE))
    env.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    env.setdefault("MUJOCO_GL", "egl")
    env["PYTHONUNBUFFERED"] = "1"  # lines reach the launcher as they are printed
    env.update(extra or {})
    if os.path.abspath(python) != os.path.abspath(sys.executable):
        _forget_own_ros_wheels(env)
    return env


def _forget_own_ros_wheels(env: dict[str, str]) -> None:
    """Another virtualenv must find its own ROS libraries: the ROS wheels' bootstrapper
    re-executes Python with LD_LIBRARY_PATH pointing into *its* venv unless this guard is
    set, so drop the guard and our venv's library directories."""
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    own = Path(sys.prefix).resolve()
    kept = [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
            if p and not Path(p).resolve().is_relative_to(own)]
    if kept:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(kept)
    else:
        env.pop("LD_LIBRARY_PATH", None)


def node_commands(graph: GraphSpec, given: dict[str, str], share_dir: Path,
                  overrides_dir: Path, params_file: Path | None = None,
                  base_env: dict[str, str] | None = None) -> list[NodeCommand]:
    """The command line and environment of every node (writes the overrides files).

    A graph with a role (launch_args.ROLES, e.g. robofollow_sim's `hardware`) runs the nodes
    of the chosen value; those nodes read their own params file, get the parameters the choice
    fixes, and the role's launch arguments (when given) on top."""
    values = resolved_values(graph, given)
    params_file = Path(params_file) if params_file else share_dir / graph.params_file
    if not params_file.is_file():
        raise FileNotFoundError(f"params file {params_file} not found")
    check_params_file(params_file)
    overrides = parameter_overrides(graph, given)
    commands = []
    for resolved in resolve_nodes(graph, values):
        node = resolved.spec
        node_params = params_file
        if resolved.params_file != graph.params_file:
            node_params = share_dir / resolved.params_file
            if not node_params.is_file():
                raise FileNotFoundError(f"params file {node_params} not found")
        node_overrides = {**resolved.params, **overrides.get(node.name, {})}
        for arg_name, param in resolved.arg_params.items():
            if arg_name in given:
                node_overrides[param] = parse_value(graph.arg(arg_name), given[arg_name])
        if node.preflight:
            from vla_bridge.ros.node_config import preflight
            preflight(node, node_params, node_overrides)
        python = _interpreter(node.python_arg, values)
        overrides_file = overrides_dir / f"{node.name}.overrides.yaml"
        overrides_file.write_text(yaml.safe_dump(
            {f"/{node.name}": {"ros__parameters": node_overrides}}, sort_keys=False))
        argv = [python, "-m", node.module, "--ros-args",
                "--params-file", str(node_params), "--params-file", str(overrides_file),
                "-r", f"__node:={node.name}"]
        commands.append(NodeCommand(node.name, argv, node_env(share_dir, python, graph.env,
                                                              base_env), node_overrides,
                                    node.restartable, getattr(node, "observer", False)))
    return commands

# ------------------------------------------------------------------------ the processes


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if the launcher itself is killed (-9)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class GraphRunner:
    """Starts node processes, relays their output, and ends them together."""

    def __init__(self, commands: list[NodeCommand], end_node: str, out: TextIO | None = None,
                 sigint_grace: float = 5.0, sigterm_grace: float = 3.0, end_grace: float = 2.0,
                 timeout: float | None = None, max_restarts: int = MAX_RESTARTS,
                 close_grace: float = 10.0, observer_restarts: int = OBSERVER_RESTARTS):
        names = [c.name for c in commands]
        if end_node not in names:
            raise ValueError(f"end node {end_node!r} is not among the nodes {names}")
        self.commands = commands
        self.end_node = end_node
        self.out = out or sys.stdout
        self.sigint_grace, self.sigterm_grace, self.end_grace = (
            sigint_grace, sigterm_grace, end_grace)
        self.procs: dict[str, subprocess.Popen] = {}
        self._readers: list[threading.Thread] = []
        self._write_lock = threading.Lock()
        self._signal: int | None = None
        self._hurry = False
        self.timeout = timeout  # wall-clock limit of the whole graph (None: none)
        self.max_restarts, self.close_grace = max_restarts, close_grace
        self.restarts: dict[str, int] = {}
        self.observer_restarts = observer_restarts
        self.let_go: set[str] = set()  # observers that died for good; the graph goes on
        self.events: Path | None = None  # the node_events file, made by run()

    # -- output
    def _emit(self, line: str) -> None:
        with self._write_lock:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except (BrokenPipeError, ValueError):  # our reader went away; keep supervising
                pass

    def say(self, text: str) -> None:
        self._emit(f"{LOG} {text}")

    def _relay(self, name: str, stream) -> None:
        """Copy a node's output line by line, prefixed with its name."""
        for raw in iter(stream.readline, b""):
            self._emit(f"[{name}] {raw.decode(errors='replace').rstrip()}")
        stream.close()

    # -- signals
    def _on_signal(self, signum, _frame) -> None:
        if self._signal is not None:
            self._hurry = True  # a second Ctrl-C: don't wait for graceful exits
        self._signal = signum

    def _install_signal_handlers(self) -> list:
        if threading.current_thread() is not threading.main_thread():
            return []
        return [(s, signal.signal(s, self._on_signal)) for s in (signal.SIGINT, signal.SIGTERM)]

    # -- lifecycle
    def start(self) -> None:
        for cmd in self.commands:
            self._spawn(cmd)

    def _spawn(self, cmd: NodeCommand) -> None:
        env = {**cmd.env, node_events.ENV: str(self.events)}  # where it hears of the others
        proc = subprocess.Popen(cmd.argv, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_die_with_parent)
        self.procs[cmd.name] = proc
        reader = threading.Thread(target=self._relay, args=(cmd.name, proc.stdout), daemon=True)
        reader.start()
        self._readers.append(reader)
        self.say(f"started {cmd.name} (pid {proc.pid}): {shlex.join(cmd.argv)}")
        node_events.write_event(self.events, node_events.STARTED, cmd.name, pid=proc.pid)

    def _clean_stale_shm(self) -> None:
        """Killed nodes leave their Fast DDS shared memory behind (64 MiB each with our
        profile): remove what dead processes left before adding a graph (vla_bridge.ros.dds_shm)."""
        from vla_bridge.ros.dds_shm import clean_stale_shm
        report = clean_stale_shm()
        if report.removed:
            self.say(report.summary())

    def run(self) -> int:
        """Run the graph to its end; returns the launcher's exit code."""
        previous = self._install_signal_handlers()
        self._clean_stale_shm()
        events_dir = tempfile.mkdtemp(prefix=f"{PACKAGE}_events_")
        self.events = Path(events_dir) / "node_events.jsonl"
        try:
            try:
                self.start()
            except OSError as exc:
                self.say(f"cannot start the graph: {exc}")
                return 1
            return self._supervise()
        finally:
            self.stop_all()
            shutil.rmtree(events_dir, ignore_errors=True)
            for signum, handler in previous:
                signal.signal(signum, handler)

    def request_stop(self) -> None:
        """Stop the graph as Ctrl-C does, from another thread than the one in run() (a run()
        outside the main thread installs no signal handlers: `vla-bridge record-demos`)."""
        self._signal = signal.SIGINT

    def _supervise(self) -> int:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            if deadline is not None and time.monotonic() > deadline:
                return self._timed_out()
            if self._signal is not None:
                name = signal.Signals(self._signal).name
                self.say(f"{name} received: stopping {', '.join(self._alive())}")
                return 128 + self._signal
            end_code = self.procs[self.end_node].poll()
            if end_code is not None:
                self.say(f"{self.end_node} exited with {_describe(end_code)}: stopping the graph")
                return _exit_status(end_code)
            for name, proc in list(self.procs.items()):
                if name != self.end_node and name not in self.let_go and proc.poll() is not None:
                    code = self._node_exited(name, proc.returncode)
                    if code is not None:
                        return code
            time.sleep(0.05)

    def _timed_out(self) -> int:
        """Past --timeout: ask every node for its Python stacks (SIGUSR1, see
        messages.enable_stack_dumps) so a hang shows where it is, then stop the graph."""
        alive = [name for name, proc in self.procs.items() if proc.poll() is None]
        self.say(f"graph timed out after {self.timeout:g} s; stacks of {', '.join(alive)} follow")
        for name in alive:
            try:
                os.kill(self.procs[name].pid, signal.SIGUSR1)
            except ProcessLookupError:
                pass
        time.sleep(1.0)  # let the dumps reach the relay threads
        return 124

    def _node_exited(self, name: str, code: int) -> int | None:
        """The launcher's exit code, or None when the node was restarted."""
        # A node may quit together with the end node (e.g. on the evaluator's last
        # message); that is a normal end if the end node follows promptly.
        end = self.procs[self.end_node]
        if code == 0 and self._wait([end], self.end_grace):
            self.say(f"{self.end_node} exited with {_describe(end.returncode)}")
            return _exit_status(end.returncode)
        cmd = next(c for c in self.commands if c.name == name)
        if cmd.observer:
            self._observer_died(cmd, code)
            return None
        if cmd.restartable and self.restarts.get(name, 0) < self.max_restarts:
            self._restart(cmd, code)
            return None
        return self._node_died(name, code)

    def _restart(self, cmd: NodeCommand, code: int) -> None:
        n = self.restarts[cmd.name] = self.restarts.get(cmd.name, 0) + 1
        self.say(f"node {cmd.name} died with {_describe(code)}; restarting it "
                 f"(restart {n} of {self.max_restarts})")
        _signal_group(self.procs[cmd.name].pid, signal.SIGKILL)  # what it left running
        # before the new process starts: the end node learns of the restart first
        node_events.write_event(self.events, node_events.RESTARTED, cmd.name,
                                how=_describe(code), restart=n, of=self.max_restarts)
        self._spawn(cmd)

    def _observer_died(self, cmd: NodeCommand, code: int) -> None:
        """An observer's death: one line, then a restart or, past observer_restarts, let go.
        No event for the end node: the run does not depend on it."""
        _signal_group(self.procs[cmd.name].pid, signal.SIGKILL)  # what it left running
        n = self.restarts.get(cmd.name, 0)
        if n >= self.observer_restarts:
            self.let_go.add(cmd.name)
            after = f" after {n} restarts" if n else ""
            self.say(f"observer {cmd.name} died with {_describe(code)}{after}; the graph goes "
                     "on without it")
            return
        self.restarts[cmd.name] = n + 1
        self.say(f"observer {cmd.name} died with {_describe(code)}; restarting it (restart "
                 f"{n + 1} of {self.observer_restarts}); the run goes on")
        self._spawn(cmd)

    def _node_died(self, name: str, code: int) -> int:
        """A final death: tell the end node why, so it closes its run (run.json, summary.json)
        and exits by itself, instead of being interrupted mid-run; then stop the graph."""
        restarts = self.restarts.get(name, 0)
        how = _describe(code) + (f" after {restarts} restarts" if restarts else "")
        self.say(f"node {name} died with {how}; {self.end_node} closes the run "
                 f"(up to {self.close_grace:g} s), then the graph stops")
        node_events.write_event(self.events, node_events.DIED, name, how=how)
        end = self.procs[self.end_node]
        if self._wait([end], self.close_grace):
            self.say(f"{self.end_node} exited with {_describe(end.returncode)}")
        return 1

    def _alive(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.poll() is None]

    def _wait(self, procs: list[subprocess.Popen], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self._hurry:
            if all(p.poll() is not None for p in procs):
                return True
            time.sleep(0.02)
        return all(p.poll() is not None for p in procs)

    def stop_all(self) -> None:
        """SIGINT, then SIGTERM, then SIGKILL to every node's process group."""
        steps = ((signal.SIGINT, self.sigint_grace), (signal.SIGTERM, self.sigterm_grace),
                 (signal.SIGKILL, 5.0))
        for signum, grace in steps:
            alive = [p for p in self.procs.values() if p.poll() is None]
            if not alive:
                break
            if signum != signal.SIGINT:
                self.say(f"sending {signum.name} to {', '.join(self._alive())}")
            for proc in alive:
                _signal_group(proc.pid, signum)
                _signal_group(proc.pid, signal.SIGCONT)  # a stopped (frozen) node acts on it
            self._wait(alive, grace)  # returns at once after a second Ctrl-C
        for proc in self.procs.values():
            _signal_group(proc.pid, signal.SIGKILL)  # leftovers a node spawned
            proc.wait()
        for reader in self._readers:
            reader.join(timeout=1.0)


def _describe(code: int) -> str:
    """Popen return code in words: 'code 3' or 'code -9 (SIGKILL)'."""
    if code < 0:
        try:
            return f"code {code} ({signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"code {code}"


def _exit_status(code: int) -> int:
    """A child's return code as a shell exit status (killed by signal N -> 128 + N)."""
    return 128 - code if code < 0 else code


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass

# ------------------------------------------------------------------------- entry point


def run_graph(graph: GraphSpec, given: dict[str, str] | None = None, *,
              share_dir: Path | None = None, params_file: Path | None = None,
              dry_run: bool = False, out: TextIO | None = None, **runner_options) -> int:
    """Launch `graph` with the explicitly `given` argument values; returns the exit code."""
    out = out or sys.stdout
    share_dir = Path(share_dir) if share_dir else find_share_dir()
    with tempfile.TemporaryDirectory(prefix=f"{PACKAGE}_{graph.name}_") as tmp:
        try:
            commands = node_commands(graph, given or {}, share_dir, Path(tmp), params_file)
        except (FileNotFoundError, ValueError) as exc:
            sys.stderr.write(f"{LOG} {exc}\n")
            return 2
        if dry_run:
            for cmd in commands:
                out.write(f"{cmd.name}: {shlex.join(cmd.argv)}\n"
                          f"  overrides: {cmd.overrides}\n")
            return 0
        return GraphRunner(commands, graph.end_node, out=out, **runner_options).run()


def launch(graph_name: str, tokens: list[str], *, params_file: str | None = None,
           dry_run: bool = False, out: TextIO | None = None) -> int:
    """`vla-bridge launch GRAPH [--arg value | arg:=value ...] [--dry-run]`."""
    out = out or sys.stdout
    try:
        graph = get_graph(graph_name)
        given, options = parse_command_line(graph, tokens)
    except (KeyError, ValueError) as exc:
        sys.stderr.write(f"{LOG} {exc.args[0] if exc.args else exc}\n")
        return 2
    params_file = options["params_file"] or params_file
    return run_graph(graph, given, params_file=Path(params_file) if params_file else None,
                     dry_run=dry_run or options["dry_run"], out=out, timeout=options["timeout"],
                     max_restarts=options["max_restarts"])


def main(argv: list[str] | None = None) -> int:
    """`python -m vla_bridge.ros.launcher GRAPH [args...]` (same as `vla-bridge launch`)."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0].startswith("-"):
        sys.stderr.write("usage: python -m vla_bridge.ros.launcher GRAPH [--arg value ...]\n")
        return 2
    return launch(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
