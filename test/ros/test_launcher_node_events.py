"""The launcher's supervision of node processes (no DDS: the nodes are plain Python processes).

A node that dies for good is reported to the end node, which gets time to close its run and
exit by itself; a restartable node is restarted a bounded number of times, the end node
hearing each restart before the new process starts; a stopped (frozen) node still stops with
the graph. vla_bridge.ros.node_events reads what the launcher writes.
"""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from vla_bridge.ros import launcher, node_events
from vla_bridge.ros.launch_args import ROBOFOLLOW_SIM
from vla_bridge.ros.launcher import GraphRunner, NodeCommand

# The end node: prints every event it hears; exits 3 on a final death, 0 once it has heard
# the worker start WANT times.
END = textwrap.dedent("""
    import json, sys, time
    from vla_bridge.ros.node_events import NodeEvents
    events, want, starts = NodeEvents.from_env(), int(sys.argv[1]), 0
    while True:
        for event in events.poll():
            print("heard", json.dumps(event), flush=True)
            if event["event"] == "died":
                sys.exit(3)
            starts += event["event"] == "started" and event["node"] == "worker"
            if starts == want:
                sys.exit(0)
        time.sleep(0.02)
""")


def node(name: str, code: str, *args: str, restartable: bool = False) -> NodeCommand:
    return NodeCommand(name, [sys.executable, "-c", code, *args], dict(os.environ), {},
                       restartable)


def run(*commands: NodeCommand, **options) -> tuple[int, str, float]:
    out = io.StringIO()
    t0 = time.monotonic()
    code = GraphRunner(list(commands), "end", out=out, sigint_grace=2.0, **options).run()
    return code, out.getvalue(), time.monotonic() - t0


def heard(out: str) -> list[dict]:
    prefix = "[end] heard "
    return [json.loads(line[len(prefix):]) for line in out.splitlines() if line.startswith(prefix)]


def test_a_final_death_is_told_to_the_end_node_which_closes_by_itself():
    dies = node("worker", "import sys, time; time.sleep(0.3); sys.exit(3)")
    code, out, took = run(dies, node("end", END, "99"), close_grace=20.0)
    assert code == 1, out
    assert "node worker died with code 3; end closes the run (up to 20 s)" in out
    assert heard(out)[-1] == {"event": "died", "node": "worker", "how": "code 3"}
    assert "[launcher] end exited with code 3" in out  # by itself, not stopped by a signal
    assert took < 15, out


@pytest.mark.graph
def test_the_end_node_that_does_not_close_is_stopped_after_the_close_grace():
    dies = node("worker", "import sys; sys.exit(4)")
    deaf = node("end", "import time; time.sleep(60)")
    code, out, took = run(dies, deaf, close_grace=1.0)
    assert code == 1 and "node worker died with code 4" in out
    assert took < 6, out


@pytest.mark.graph
def test_a_restartable_node_is_restarted_a_bounded_number_of_times():
    always_dies = node("worker", "import sys, time; time.sleep(0.2); sys.exit(5)",
                       restartable=True)
    code, out, _ = run(always_dies, node("end", END, "99"), max_restarts=2)
    assert code == 1, out
    assert "node worker died with code 5; restarting it (restart 1 of 2)" in out
    assert "node worker died with code 5; restarting it (restart 2 of 2)" in out
    assert "node worker died with code 5 after 2 restarts" in out
    events = [(e["event"], e["node"]) for e in heard(out)]
    assert events.count(("started", "worker")) == 3
    # each restart is heard before the new process' start, the final death last
    worker = [e for e in events if e[1] == "worker"]
    assert worker == [("started", "worker"), ("restarted", "worker"), ("started", "worker"),
                      ("restarted", "worker"), ("started", "worker"), ("died", "worker")]
    pids = [e["pid"] for e in heard(out) if e["event"] == "started" and e["node"] == "worker"]
    assert len(set(pids)) == 3


def test_a_restarted_node_that_recovers_keeps_the_graph_running(tmp_path):
    marker = tmp_path / "died_once"
    once = node("worker", "import pathlib, sys, time\n"
                f"m = pathlib.Path({str(marker)!r})\n"
                "if not m.exists(): m.touch(); sys.exit(7)\n"
                "time.sleep(60)", restartable=True)
    code, out, _ = run(once, node("end", END, "2"))
    assert code == 0, out  # the end node's own exit code: the graph went on
    assert "restarting it (restart 1 of 2)" in out and "restart 2" not in out
    restart = next(e for e in heard(out) if e["event"] == "restarted")
    assert restart == {"event": "restarted", "node": "worker", "how": "code 7", "restart": 1,
                       "of": 2}


def test_no_restart_with_max_restarts_zero():
    dies = node("worker", "import sys; sys.exit(6)", restartable=True)
    code, out, _ = run(dies, node("end", END, "99"), max_restarts=0)
    assert code == 1 and "restarting" not in out
    assert "node worker died with code 6; end closes the run" in out


@pytest.mark.graph
def test_a_stopped_node_still_stops_with_the_graph():
    frozen = node("worker", "import os, signal, time; os.kill(os.getpid(), signal.SIGSTOP); "
                            "time.sleep(60)")
    end = node("end", "import time; time.sleep(1.0)")
    code, out, took = run(frozen, end, sigterm_grace=5.0)
    assert code == 0, out
    assert took < 4, out  # SIGINT lands (with a SIGCONT), no waiting for SIGKILL
    assert "sending SIGKILL" not in out


def test_max_restarts_is_a_launcher_option(tmp_path):
    _, options = launcher.parse_command_line(ROBOFOLLOW_SIM, ["--max-restarts", "0"])
    assert options["max_restarts"] == 0
    with pytest.raises(ValueError, match="--max-restarts must be >= 0"):
        launcher.parse_command_line(ROBOFOLLOW_SIM, ["--max-restarts", "-1"])
    commands = launcher.node_commands(ROBOFOLLOW_SIM, {}, launcher.find_share_dir(), tmp_path)
    assert {c.name: c.restartable for c in commands} == {
        "sim_node": False, "policy_node": True, "evaluator_node": False}

# ------------------------------------------------------------------------ node_events


def test_node_events_reads_complete_lines_and_knows_pids(tmp_path):
    path = tmp_path / "events.jsonl"
    events = node_events.NodeEvents(path)
    assert events.poll() == []  # no file yet
    node_events.write_event(path, node_events.STARTED, "policy_node", pid=os.getpid())
    with open(path, "a") as f:
        f.write('{"event": "died", "node": "sim')  # a line being written
    assert events.poll() == [{"event": "started", "node": "policy_node", "pid": os.getpid()}]
    with open(path, "a") as f:
        f.write('_node", "how": "code 1"}\n')
    assert events.poll() == [{"event": "died", "node": "sim_node", "how": "code 1"}]
    assert events.poll() == []
    assert events.process_state("policy_node") == "running"
    assert events.process_state("sim_node") is None  # never started
    assert node_events.NodeEvents.from_env({}) is None
    assert node_events.NodeEvents.from_env({node_events.ENV: str(path)}).path == path


def test_process_state_tells_stopped_and_gone_processes():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert node_events.process_state(child.pid) == "running"
        child.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while node_events.process_state(child.pid) != "stopped" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert node_events.process_state(child.pid) == "stopped"
    finally:
        child.kill()
        child.wait()
    assert node_events.process_state(child.pid) is None
