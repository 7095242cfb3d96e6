"""Heartbeat watchdog benchmark (issue #29, point 5): how fast the PiPER node holds after the
policy process dies, and how often it holds under a policy that is alive but whose predict
holds the GIL, with K busy-loop CPU hogs.

    vla-bridge bench heartbeat [--seconds 20] [--hogs 0,2,4] [--kills 5] [--mode both]

Who runs where: this process hosts the PiPER node on fake hardware (the firmware emulator on
a virtual CAN bus, driven through the real piper_sdk), spun by a multi-threaded executor as
in ``piper_node.main``; the policy node runs as its own process (``PolicyProcess``: the
``hold`` backend, whose "predict" here is a C call that holds the GIL for ``--gil-hold`` s,
then ``--gap`` s off, over and over). Its heartbeat comes from the policy node's child
process (``--mode process``, the default since #29) or from a thread of the policy process
(``--mode thread``, the old way), so the two can be compared. The hogs are ``python -c
"while True: pass"`` processes at the default priority.

Figures, per mode and hog count:

* **false holds**: heartbeat holds (each cuts the chunk playing; a new chunk is sent at
  once, as a live policy would) over ``--seconds`` with the live, GIL-holding policy;
* **hold latency**: SIGKILL to the policy process -> the PiPER node's hold, over
  ``--kills`` kills (median / max), and whether the heartbeat child was gone within 1 s.

It prints figures, it asserts nothing. The tests use ``PolicyProcess`` and ``PiperRig``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

GIL_HOLD_S = 1.0
GAP_S = 0.1


# ---------------------------------------------------------------------- the policy process


def policy_process_main(argv=None) -> int:
    """A policy node (``hold`` backend) whose main thread keeps calling a "predict" that holds
    the GIL (``ctypes.PyDLL``: a C call that does not release it) while an executor thread
    spins the node, as the node's own executor would be while predict runs. Prints one JSON
    line (pid, heartbeat mode and pid) once the node is up."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("process", "thread"), default="process")
    ap.add_argument("--gil-hold", type=float, default=GIL_HOLD_S)
    ap.add_argument("--gap", type=float, default=GAP_S)
    a = ap.parse_args(argv)
    import ctypes

    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    from vla_bridge.policy_nodes.policy_node import PolicyNode
    rclpy.init(args=["--ros-args", "-p", "backend:=hold",
                     "-p", f"heartbeat_process:={'true' if a.mode == 'process' else 'false'}"])
    node = PolicyNode()
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def spin() -> None:
        try:
            executor.spin()
        except ExternalShutdownException:
            pass

    threading.Thread(target=spin, daemon=True).start()
    usleep = ctypes.PyDLL(None).usleep  # PyDLL: called with the GIL held

    def predict(observation, _us=int(a.gil_hold * 1e6)):
        usleep(_us)  # a long C call that never releases the GIL

    node.policy.predict = predict
    print(json.dumps({"pid": os.getpid(), "heartbeat": node.heartbeat.mode,
                      "heartbeat_pid": node.heartbeat.pid}), flush=True)
    try:
        while rclpy.ok():  # SIGINT shuts the context down (rclpy's handler)
            if a.gil_hold > 0:
                node.policy.predict(None)
            time.sleep(a.gap)
    except KeyboardInterrupt:
        return 0
    finally:
        node.close()
        if rclpy.ok():
            rclpy.shutdown()


class PolicyProcess:
    """``policy_process_main`` in a process of its own; ``info`` is its JSON line."""

    def __init__(self, mode: str = "process", gil_hold_s: float = GIL_HOLD_S,
                 gap_s: float = GAP_S, timeout_s: float = 60.0):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vla_bridge.perf.heartbeat", "--policy-process",
             "--mode", mode, "--gil-hold", str(gil_hold_s), "--gap", str(gap_s)],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        line = [None]
        reader = threading.Thread(target=lambda: line.__setitem__(0, self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not line[0]:
            self.stop()
            raise RuntimeError(f"the policy process did not start in {timeout_s} s")
        self.info = json.loads(line[0])

    @property
    def heartbeat_pid(self) -> int | None:
        return self.info.get("heartbeat_pid")

    def kill(self) -> float:
        """SIGKILL; returns time.monotonic() of the kill."""
        t = time.monotonic()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10.0)
        return t

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10.0)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def pid_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][:1] not in ("Z", "X")
    except FileNotFoundError:
        return False


# ---------------------------------------------------------------------- the PiPER side


class PiperRig:
    """A one-arm PiPER node on fake hardware, spun on an executor thread, that records every
    heartbeat hold (time.monotonic()) and can keep a chunk playing."""

    def __init__(self, context=None, **params):
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.parameter import Parameter

        from vla_bridge.robot_nodes.piper.piper_node import PiperNode
        values = {"arms": "right", "use_fake_hardware": True, "fake_feedback_timeout_s": 2.0,
                  **params}
        overrides = [Parameter(k, value=v) for k, v in values.items()]
        kwargs = {"parameter_overrides": overrides}
        if context is not None:
            kwargs["context"] = context
        self.node = PiperNode(**kwargs)
        self.holds: list[float] = []
        self.latches = 0  # e-stop latches (a starved process: no feedback for too long)
        for f in self.node.safety.values():
            f.hold_last_command = self._recording(f.hold_last_command)
        self.executor = MultiThreadedExecutor(num_threads=3, context=context or rclpy.get_default_context())
        self.executor.add_node(self.node)
        self.spinner = threading.Thread(target=self.executor.spin, daemon=True)
        self.spinner.start()

    def _recording(self, hold):
        def wrapped(now, reason):
            events = hold(now, reason)
            if events and "heartbeat" in reason:
                self.holds.append(time.monotonic())
            return events
        return wrapped

    def wait_for_heartbeat(self, timeout_s: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            alive = self.node.policy_alive_at
            if alive is not None and time.monotonic() - alive < 0.1:
                return True
            time.sleep(0.02)
        return False

    def unlatch(self) -> None:
        """Resume (counted in `latches`) when a starved process latched the arms."""
        if any(f.latched for f in self.node.safety.values()):
            self.latches += 1
            self.node.resume()

    def play(self, seconds: float = 30.0) -> None:
        """A chunk that holds the arm where it is for `seconds` (a live policy's chunk)."""
        self.unlatch()
        import numpy as np

        from vla_bridge import contract as C
        from vla_bridge.ros import messages
        start = np.concatenate([self.node.feedback[a] for a in self.node.arms])
        n = max(2, int(seconds / 0.1))
        self.node.on_chunk(messages.chunk_to_msg(np.tile(start, (n, 1)),
                                                 C.joint_names(self.node.arms), 0.0, 0.1))

    def keep_playing(self, seconds: float) -> int:
        """Keep a chunk playing for `seconds`, sending a new one whenever a hold cut it
        (as the live policy would); returns the heartbeat holds in that time."""
        before = len(self.holds)
        self.play(seconds + 5.0)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.node.player is None:
                self.play(seconds + 5.0)
            time.sleep(0.05)
        return len(self.holds) - before

    def wait_for_hold(self, since: float, timeout_s: float) -> float | None:
        """Seconds from `since` to the first heartbeat hold after it, or None."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            later = [t for t in self.holds if t >= since]
            if later:
                return later[0] - since
            time.sleep(0.005)
        return None

    def close(self) -> None:
        self.node.close()
        self.executor.remove_node(self.node)
        time.sleep(0.05)
        self.executor.shutdown(timeout_sec=5.0)
        self.spinner.join(timeout=5.0)
        self.node.destroy_node()


# ---------------------------------------------------------------------- the benchmark


def start_hogs(k: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for h in hogs:
        h.kill()
    for h in hogs:
        h.wait()


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    return (f"median {1000 * statistics.median(values):.0f} ms, max {1000 * max(values):.0f} ms "
            f"(n={len(values)})")


def measure(seconds: float, hogs: list[int], kills: int, modes: list[str],
            gil_hold_s: float = GIL_HOLD_S, gap_s: float = GAP_S) -> int:
    import rclpy
    rclpy.init()
    rig = PiperRig()
    print(f"heartbeat watchdog: timeout {1000 * rig.node.heartbeat_timeout_s:.0f} ms, PiPER "
          f"node commands at {rig.node.cfg.command_rate_hz} Hz; {os.cpu_count()} CPUs; "
          f"policy predict holds the GIL {gil_hold_s} s, then {gap_s} s off")
    rows = []
    try:
        for mode in modes:
            for k in hogs:
                hog_procs = start_hogs(k)
                try:
                    policy = PolicyProcess(mode, gil_hold_s, gap_s)
                    if not rig.wait_for_heartbeat():
                        print(f"  {mode}, {k} hogs: no heartbeat arrived; skipped")
                        policy.stop()
                        continue
                    latches = rig.latches
                    false_holds = rig.keep_playing(seconds)
                    latencies, lingering = [], 0
                    policy.stop()
                    for _ in range(kills):  # a policy that does not hold the GIL: no hold before
                        policy = PolicyProcess(mode, 0.0, gap_s)
                        if not rig.wait_for_heartbeat():
                            policy.stop()
                            continue
                        rig.play(30.0)
                        time.sleep(0.3)
                        child = policy.heartbeat_pid
                        t_kill = policy.kill()
                        latency = rig.wait_for_hold(t_kill, 5.0)
                        if latency is not None:
                            latencies.append(latency)
                        time.sleep(max(0.0, 1.0 - (time.monotonic() - t_kill)))
                        lingering += pid_alive(child)
                        policy.stop()
                    row = (f"  heartbeat from a {mode:7s}, {k} hogs: {false_holds} false holds "
                           f"in {seconds:.0f} s with a live policy; hold after SIGKILL: "
                           f"{_ms(latencies)}"
                           + (f"; heartbeat child alive 1 s after the kill: {lingering}/{kills}"
                              if mode == "process" else "")
                           + (f"; e-stop latches (no feedback: this process starved): "
                              f"{rig.latches - latches}" if rig.latches > latches else ""))
                    print(row, flush=True)
                    rows.append(row)
                finally:
                    stop_hogs(hog_procs)
    finally:
        rig.close()
        rclpy.shutdown()
    return 0


def run(args: argparse.Namespace) -> int:
    """`vla-bridge bench heartbeat` (flags in vla_bridge/cli/bench.py)."""
    modes = ["process", "thread"] if args.mode == "both" else [args.mode]
    hogs = [int(x) for x in str(args.hogs).split(",") if x.strip()]
    return measure(args.seconds, hogs, args.kills, modes, args.gil_hold)


if __name__ == "__main__":  # PolicyProcess's entry point; the benchmark is `vla-bridge bench`
    if sys.argv[1:2] != ["--policy-process"]:
        sys.exit("usage: python -m vla_bridge.perf.heartbeat --policy-process [flags]; "
                 "the benchmark is `vla-bridge bench heartbeat`")
    sys.exit(policy_process_main(sys.argv[2:]))
