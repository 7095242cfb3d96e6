"""An observer's death never stops the graph (issue #29, point 6).

The viewer (viewer:=foxglove) watches the run and feeds nothing into it, yet killing it ended
the run as "stopped: node viewer_node died". An observer (NodeSpec.observer) is restarted a
few times, one line each, then let go; the end node hears no `restarted` (which fails the
episode in flight) and no `died` (which stops the run).
"""
from __future__ import annotations

import io
import json
import os
import sys
import textwrap
import time

import pytest

from vla_bridge.ros import launcher
from vla_bridge.ros.launch_args import (
    LIBERO_SIM,
    ROBOFOLLOW_REAL,
    ROBOFOLLOW_SIM,
    VIEWER,
)
from vla_bridge.ros.launcher import OBSERVER_RESTARTS, GraphRunner, NodeCommand

# The end node: prints every event it hears, exits 3 on any `died` or `restarted` event (what
# would stop the run or fail an episode); exits 0 once the observer's WANT-th process is gone
# (plus a moment, for the launcher's line about it).
END = textwrap.dedent("""
    import json, os, sys, time
    from vla_bridge.ros.node_events import NodeEvents
    events, want, starts, last = NodeEvents.from_env(), int(sys.argv[1]), 0, None
    while True:
        for event in events.poll():
            print("heard", json.dumps(event), flush=True)
            if event["event"] in ("died", "restarted"):
                sys.exit(3)
            if event["event"] == "started" and event["node"] == "watcher":
                starts, last = starts + 1, event["pid"]
        if starts == want:
            try:
                os.kill(last, 0)
            except ProcessLookupError:  # gone (and reaped by the launcher)
                time.sleep(0.5)
                sys.exit(0)
        time.sleep(0.02)
""")


def node(name: str, code: str, *args: str, observer: bool = False) -> NodeCommand:
    return NodeCommand(name, [sys.executable, "-c", code, *args], dict(os.environ), {},
                       observer=observer)


def run(*commands: NodeCommand, **options) -> tuple[int, str, float]:
    out = io.StringIO()
    t0 = time.monotonic()
    code = GraphRunner(list(commands), "end", out=out, sigint_grace=2.0, **options).run()
    return code, out.getvalue(), time.monotonic() - t0


def heard(out: str) -> list[dict]:
    prefix = "[end] heard "
    return [json.loads(line[len(prefix):]) for line in out.splitlines() if line.startswith(prefix)]


def test_the_viewer_is_an_observer_in_every_graph(tmp_path):
    assert VIEWER.observer
    for graph in (ROBOFOLLOW_SIM, LIBERO_SIM, ROBOFOLLOW_REAL):
        assert graph.node("viewer_node").observer
        assert not any(n.observer for n in graph.nodes if n.name != "viewer_node")
    commands = launcher.node_commands(ROBOFOLLOW_SIM, {"viewer": "foxglove"},
                                      launcher.find_share_dir(), tmp_path)
    assert {c.name: c.observer for c in commands} == {
        "sim_node": False, "policy_node": False, "evaluator_node": False, "viewer_node": True}


def test_an_observer_that_keeps_dying_is_restarted_a_few_times_then_let_go():
    dies = node("watcher", "import sys, time; time.sleep(0.1); sys.exit(1)", observer=True)
    code, out, _ = run(dies, node("end", END, str(OBSERVER_RESTARTS + 1)), max_restarts=0)
    assert code == 0, out  # the end node's own exit: the graph went on
    for n in range(1, OBSERVER_RESTARTS + 1):
        assert (f"[launcher] observer watcher died with code 1; restarting it (restart {n} of "
                f"{OBSERVER_RESTARTS}); the run goes on") in out, out
    assert (f"[launcher] observer watcher died with code 1 after {OBSERVER_RESTARTS} restarts; "
            "the graph goes on without it") in out, out
    lines = [line for line in out.splitlines() if "observer watcher" in line]
    assert len(lines) == OBSERVER_RESTARTS + 1, lines  # one line each time, no more
    events = [(e["event"], e["node"]) for e in heard(out)]
    assert events.count(("started", "watcher")) == OBSERVER_RESTARTS + 1
    assert not [e for e in events if e[0] in ("died", "restarted")], events
    assert "closes the run" not in out and "died with code 1; end" not in out


def test_a_let_go_observer_does_not_end_the_graph_later():
    """After the observer is let go the graph runs on until its end node ends it."""
    dies = node("watcher", "import sys; sys.exit(2)", observer=True)
    end = node("end", "import time; time.sleep(3.0)")
    code, out, took = run(dies, end, observer_restarts=0)
    assert code == 0, out
    assert took >= 2.5, out
    assert out.count("observer watcher died with code 2") == 1, out
    assert "the graph goes on without it" in out and "restarting" not in out


@pytest.mark.graph
def test_killing_the_real_viewer_node_does_not_stop_the_run(tmp_path):
    """The issue's case: `kill -9` of viewer_node under the launcher. The viewer is started
    again and the end node, which would exit 3 on a died/restarted event, ends the run."""
    (viewer,) = [c for c in launcher.node_commands(
        ROBOFOLLOW_SIM, {"viewer": "foxglove", "viewer_port": "0"}, launcher.find_share_dir(),
        tmp_path) if c.name == "viewer_node"]
    watcher = NodeCommand("watcher", viewer.argv, viewer.env, viewer.overrides,
                          observer=viewer.observer)
    killer = textwrap.dedent("""
        import json, os, signal, sys, time
        from vla_bridge.ros.node_events import NodeEvents
        events, pids = NodeEvents.from_env(), []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for event in events.poll():
                print("heard", json.dumps(event), flush=True)
                if event["event"] in ("died", "restarted"):
                    sys.exit(3)
                if event["event"] == "started" and event["node"] == "watcher":
                    pids.append(event["pid"])
                    if len(pids) == 1:
                        time.sleep(4.0)  # let it serve
                        os.kill(pids[0], signal.SIGKILL)
            if len(pids) == 2:
                time.sleep(4.0)  # the new viewer serves; nothing more is heard
                sys.exit(0 if not [e for e in events.poll() if e["event"] != "started"] else 4)
            time.sleep(0.05)
        sys.exit(5)
    """)
    code, out, _ = run(watcher, node("end", killer))
    assert code == 0, out
    assert ("[launcher] observer watcher died with code -9 (SIGKILL); restarting it "
            f"(restart 1 of {OBSERVER_RESTARTS}); the run goes on") in out, out
    assert out.count("Foxglove viewer on ws://127.0.0.1:") == 2, out  # served again
    assert not [e for e in heard(out) if e["event"] in ("died", "restarted")]
