"""The CPU ledger behind `vla-bridge bench cpu` (ros/cpu_profile.py): nested calls charge the
innermost category only, other threads are not charged to the executor thread, and a node run
with VLA_BRIDGE_CPU_PROFILE writes figures whose split adds up to the process's own total."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from vla_bridge.ros import cpu_profile


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_nested_calls_are_charged_to_the_innermost_category_once():
    ledger = cpu_profile.Ledger(threading.get_ident())
    inner = ledger.wrap(lambda: _burn(0.05), "serialisation")

    def outer():
        _burn(0.03)
        inner()
        return "done"

    assert ledger.wrap(outer, "messages")() == "done"
    _burn(0.02)  # outside any category: glue
    spent = ledger.seconds()
    assert spent["serialisation"] == pytest.approx(0.05, abs=0.01)
    assert spent["messages"] == pytest.approx(0.03, abs=0.01)
    assert spent["glue"] == pytest.approx(0.02, abs=0.01)
    assert sum(spent.values()) == pytest.approx(0.10, abs=0.015)


def test_an_exception_leaves_the_stack_as_it_was_and_other_threads_are_not_charged():
    ledger = cpu_profile.Ledger(threading.get_ident())

    def fail():
        _burn(0.02)
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        ledger.wrap(fail, "physics")()
    assert ledger.stack == ["glue"]
    burn = ledger.wrap(lambda: _burn(0.05), "rendering")
    worker = threading.Thread(target=burn)
    worker.start()
    worker.join()
    spent = ledger.seconds()
    assert spent["rendering"] == 0.0  # the worker's CPU is no CPU of this thread
    assert spent["physics"] == pytest.approx(0.02, abs=0.01)


def test_a_profiled_node_process_writes_figures_that_add_up(tmp_path):
    """A real policy node (hold) runs with VLA_BRIDGE_CPU_PROFILE, is stopped with SIGINT, and
    leaves its figures: the executor thread's categories plus the other threads plus the time
    before install explain the process's own CPU total."""
    env = {**os.environ, cpu_profile.ENV: str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "vla_bridge.policy_nodes.policy_node",
                             "--ros-args", "-p", "backend:=hold"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(4)
    proc.send_signal(2)
    out, _ = proc.communicate(timeout=30)
    paths = list(tmp_path.glob("policy_node-*.json"))
    assert len(paths) == 1, out
    path = paths[0]
    figures = json.loads(path.read_text())
    assert set(figures["categories"]) == set(cpu_profile.CATEGORIES)
    explained = (figures["before_install"] + figures["executor_thread"]
                 + figures["render_threads"] + figures["other_threads"])
    assert figures["total"] > 0.3  # imports and node start-up at least
    assert explained == pytest.approx(figures["total"], rel=0.15), figures
