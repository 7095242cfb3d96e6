"""The engine's LIBERO benchmark without LIBERO or DDS: a small in-process stand-in for the
LIBERO sim and the policy node (they answer a begin and a start as their nodes do), a fake
clock, a log, and the run's settings (test/evaluation/test_libero_run.py,
test/benchmarks/libero/test_libero_protocol_seeding.py)."""
from __future__ import annotations

from vla_bridge import contract as C
from vla_bridge.evaluation.episodes import EngineConfig, SuiteRun
from vla_bridge.evaluation.libero_run import LiberoConfig, LiberoRun
from vla_bridge.ros.node_config import defaults


def libero_settings(tmp_path, **params) -> dict:
    """The evaluator's parameters for a LIBERO run into tmp_path / "run"."""
    return {**defaults(EngineConfig), **defaults(LiberoConfig), "benchmark": "libero",
            "policy": "libero_oracle", "suites": "libero_goal", "tasks": "0-1", "inits": "0-1",
            "output": str(tmp_path / "run"), **params}


class Clock:
    def __init__(self):
        self.now, self.ns = 0.0, 0

    def monotonic(self):
        return self.now

    def time_ns(self):
        self.ns += 1
        return self.ns


class LiberoGraph:
    """Answers like the LIBERO sim node and the policy node: a begin -> both ready (with
    the embodiments they speak), a start -> done, success on even initial states."""

    def __init__(self, clock, policy_embodiment="libero_panda"):
        self.clock, self.sent, self.inbox, self.run = clock, [], [], None
        self.policy_embodiment = policy_embodiment
        self.publishers = {C.TOPIC_EPISODE_STATUS: 1, C.TOPIC_ACTION_CHUNK: 1,
                           C.TOPIC_EPISODE_CONTROL: 1}

    def send(self, message):
        self.sent.append(message)
        episode, kind = message["episode"], message["kind"]
        if kind == C.CONTROL_BEGIN:
            self.begin = message
            self.inbox.append(("sim", {"kind": "ready", "episode": episode, "stamp": 0.0,
                                       "embodiment": "libero_panda",
                                       "held_at_start": {"language": False}}))
            policy = {"kind": "ready", "episode": episode}
            if self.policy_embodiment:
                policy["embodiment"] = self.policy_embodiment
            self.inbox.append(("policy", policy))
        elif kind == C.CONTROL_START:
            init = int(self.begin["task"]["layout"].split(":")[1])
            self.inbox.append(("sim", {"kind": "done", "episode": episode, "ticks": 40,
                                       "calls": 8, "steps": 40, "success": init % 2 == 0,
                                       "reason": "success" if init % 2 == 0 else "budget"}))

    def instruct(self, text):
        self.instruction = text

    def spin(self):
        self.clock.now += 0.05
        while self.inbox:
            source, status = self.inbox.pop(0)
            (self.run.on_sim_status if source == "sim" else self.run.on_policy_status)(status)

    def count_publishers(self, topic):
        return self.publishers.get(topic, 0)

    def count_subscribers(self, topic):
        return 2


class Log:
    def __init__(self):
        self.lines = []

    def info(self, line):
        self.lines.append(line)

    error = warning = info


def make(tmp_path, graph_class=LiberoGraph, node_events=None, **params):
    clock, log, console = Clock(), Log(), []
    settings = libero_settings(tmp_path, **params)
    graph = graph_class(clock)
    run = SuiteRun(settings, graph, benchmark=LiberoRun(settings, log), log=log,
                   echo=console.append, clock=clock, node_events=node_events)
    graph.run = run
    return run, graph, console
