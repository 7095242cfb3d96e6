"""Where a node's CPU goes: an opt-in ledger of CPU time per category, written at exit.

With ``VLA_BRIDGE_CPU_PROFILE=DIR`` in its environment, every node that runs through
``messages.spin_node`` accounts the CPU time of its executor thread (the main thread:
``rclpy.spin`` runs there) to categories, and writes ``DIR/<node>-<pid>.json`` when it stops.
`vla-bridge bench cpu` (perf/cpu.py) runs graphs with it and turns two runs of different length
into CPU-seconds per episode. Without the variable nothing here is installed and nothing costs.

Categories (CPU of the executor thread, ``time.thread_time_ns``; a nested call is charged to the
innermost category only, so the categories never count a nanosecond twice):

``physics``        the sim backend's ``step`` / ``step_physics`` (MuJoCo's mj_step; LIBERO's
                   env.step, which renders its cameras inside it)
``rendering``      the sim backend's ``render`` (MuJoCo / SAPIEN camera images)
``world_state``    the sim backend's ``world_state`` (privileged object poses for frames and
                   the world-state topic)
``inference``      the policy backend's ``predict``
``scoring``        the evaluator's benchmark scoring a finished episode (``scored_row``)
``messages``       building and reading messages: every function of ``vla_bridge.ros.messages``
                   (numpy <-> message conversions, JSON status, frames)
``serialisation``  a published message turned into CDR bytes (``serialize_message``; the
                   publisher is then handed the bytes, which is what rclpy does inside
                   ``publish`` anyway: the same bytes reach the wire)
``dds``            handing bytes to DDS (``publish_raw``) and taking a message from it in the
                   executor (the take deserialises too: rclpy does both in one C call)
``glue``           the rest of the executor thread: the executor's wait sets, Python callbacks,
                   the engine's and the scorer's own logic

and, besides the executor thread, ``render_threads``: Mesa's llvmpipe threads, where the CPU
rasterises the camera images (most of the rendering cost: the executor thread only waits for
them), and ``other_threads``: the process's other threads (Fast DDS's receive and event
threads, a policy's worker thread, the viewer's gate), both read from ``/proc/self/task``. ``total`` is the process's own figure (``resource.getrusage``), measured
independently: ``before_install`` (the executor thread's CPU until the node was built: imports,
the model) plus the categories plus ``other_threads`` should add up to it (threads that ended
before the exit are in ``total`` only).
"""
from __future__ import annotations

import functools
import json
import os
import resource
import threading
import time
from pathlib import Path

ENV = "VLA_BRIDGE_CPU_PROFILE"
CATEGORIES = ("physics", "rendering", "world_state", "inference", "scoring", "messages",
              "serialisation", "dds", "glue")
#: attribute paths on a node -> the category of the method there
NODE_METHODS = {
    ("session", "backend", "step"): "physics",
    ("session", "backend", "step_physics"): "physics",
    ("session", "backend", "render"): "rendering",
    ("session", "backend", "world_state"): "world_state",
    ("policy", "predict"): "inference",
    ("benchmark", "scored_row"): "scoring",
}
#: thread names of software rendering (Mesa's llvmpipe rasterises EGL / OSMesa renders on the
#: CPU in threads of its own: MuJoCo's and robosuite's cameras)
RENDER_THREADS = ("llvmpipe", "lp:")
_NOT_MESSAGES = {"spin_node", "enable_stack_dumps"}  # messages' functions that are no message work


class Ledger:
    """CPU nanoseconds of one thread per category; `enter`/`leave` nest like a stack."""

    def __init__(self, thread_id: int):
        self.thread_id = thread_id
        self.ns = dict.fromkeys(CATEGORIES, 0)
        self.stack = ["glue"]
        self.mark = time.thread_time_ns()
        self.started = self.mark

    def _switch(self) -> None:
        now = time.thread_time_ns()
        self.ns[self.stack[-1]] += now - self.mark
        self.mark = now

    def enter(self, category: str) -> bool:
        if threading.get_ident() != self.thread_id:
            return False  # another thread: its CPU is in other_threads
        self._switch()
        self.stack.append(category)
        return True

    def leave(self) -> None:
        self._switch()
        self.stack.pop()

    def wrap(self, function, category: str):
        @functools.wraps(function)
        def accounted(*args, **kwargs):
            if not self.enter(category):
                return function(*args, **kwargs)
            try:
                return function(*args, **kwargs)
            finally:
                self.leave()
        accounted.__cpu_category__ = category
        return accounted

    def seconds(self) -> dict[str, float]:
        self._switch()
        return {k: v / 1e9 for k, v in self.ns.items()}


_LEDGER: Ledger | None = None


def enabled() -> bool:
    return bool(os.environ.get(ENV))


def install(node, message_module) -> Ledger:
    """Account this process's executor thread from now on (call it from that thread, once the
    node is built): rclpy's publish and take, the functions of `message_module`
    (``vla_bridge.ros.messages``, passed in: it imports this module), the node's backends."""
    global _LEDGER
    if _LEDGER is not None:
        return _LEDGER
    ledger = _LEDGER = Ledger(threading.get_ident())
    _wrap_rclpy(ledger)
    _wrap_messages(ledger, message_module)
    for path, category in NODE_METHODS.items():
        owner = node
        for name in path[:-1]:
            owner = getattr(owner, name, None)
        function = getattr(owner, path[-1], None) if owner is not None else None
        if callable(function) and not hasattr(function, "__cpu_category__"):
            setattr(owner, path[-1], ledger.wrap(function, category))
    return ledger


def _wrap_rclpy(ledger: Ledger) -> None:
    from rclpy.executors import Executor
    from rclpy.publisher import Publisher
    from rclpy.serialization import serialize_message

    serialise = ledger.wrap(serialize_message, "serialisation")
    publish = Publisher.publish

    def accounted_publish(self, msg):
        if isinstance(msg, bytes) or threading.get_ident() != ledger.thread_id:
            if not ledger.enter("dds"):
                return publish(self, msg)
            try:
                return publish(self, msg)
            finally:
                ledger.leave()
        data = serialise(msg)  # what publish(msg) would do in C, made visible
        ledger.enter("dds")
        try:
            return publish(self, data)
        finally:
            ledger.leave()

    Publisher.publish = accounted_publish
    Executor._take_subscription = ledger.wrap(Executor._take_subscription, "dds")


def _wrap_messages(ledger: Ledger, messages) -> None:
    import inspect

    for name, value in list(vars(messages).items()):
        if (inspect.isfunction(value) and value.__module__ == messages.__name__
                and not name.startswith("_") and name not in _NOT_MESSAGES):
            setattr(messages, name, ledger.wrap(value, "messages"))


def _thread_cpu_s() -> dict[int, tuple[str, float]]:
    """tid -> (thread name, user+sys CPU seconds) of each live thread of this process."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            head, tail = (task / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue  # the thread ended meanwhile
        fields = tail.split()
        out[int(task.name)] = (head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / tick)
    return out


def _by_name(threads: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per thread name (Fast DDS names its threads: dds.shm.*, dds.udp.*, ...)."""
    out: dict[str, float] = {}
    for name, seconds in threads.values():
        out[name] = out.get(name, 0.0) + seconds
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def report(name: str) -> dict:
    """This process's figures now (see the module docstring)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    threads = _thread_cpu_s()
    main_tid = threading.main_thread().native_id
    categories = _LEDGER.seconds() if _LEDGER is not None else {}
    executor = sum(categories.values())
    before = _LEDGER.started / 1e9 if _LEDGER is not None else 0.0
    return {"node": name, "pid": os.getpid(), "categories": categories,
            "executor_thread": executor, "before_install": before,
            "render_threads": sum(v for tid, (n, v) in threads.items()
                                  if tid != main_tid and n.startswith(RENDER_THREADS)),
            "other_threads": sum(v for tid, (n, v) in threads.items()
                                 if tid != main_tid and not n.startswith(RENDER_THREADS)),
            "threads": _by_name({t: nv for t, nv in threads.items() if t != main_tid}),
            "total": usage.ru_utime + usage.ru_stime,
            "wall_s": time.monotonic() - _STARTED}


def write(name: str) -> Path | None:
    """Write ``$VLA_BRIDGE_CPU_PROFILE/<name>-<pid>.json`` (None when not enabled)."""
    out = os.environ.get(ENV)
    if not out:
        return None
    path = Path(out) / f"{name}-{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report(name), indent=1))
    return path


_STARTED = time.monotonic()
