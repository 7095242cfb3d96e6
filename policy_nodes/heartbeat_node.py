"""The policy node's heartbeat, beaten by a small child process (issue #29, point 5).

What the heartbeat says: *the policy process lives*. It does not say the policy is quick: a
policy that is alive but stalled (no chunk in time) is the chunk timing's and the episode
timeout's business, not this watchdog's.

Why a child process, and not a thread of the policy node: a thread shares the policy's GIL.
A ``predict`` that holds the GIL (pure-Python compute, a long C call that does not release
it) silenced the old heartbeat thread for as long as it ran, and the PiPER node held the arms
under a live policy (12 false holds in 40 s). The child is its own interpreter, so nothing
the policy's Python does can delay a beat; it is plain rclpy, so it needs no native build
(a GIL-releasing C extension would, and would still die with a wedged interpreter only by
accident). The child's beats go over DDS like any other message.

How the child knows its parent is alive: the parent keeps the write end of a pipe whose read
end only the child holds (the parent's own later subprocesses do not inherit it). The kernel
closes that end when the parent dies, however it dies (SIGKILL included), and the child sees
EOF at once and exits; ``os.getppid()`` is checked on every beat as well, for a parent whose
forked (not exec'd) children keep the pipe open after it died. The child never outlives the
parent by more than one period.

The beats carry the wall clock and the parent node's name in ``frame_id``; the PiPER node
uses only their arrival time.

Run as ``python -m vla_bridge.policy_nodes.heartbeat_node --fd N --parent PID --topic T
--period S --name NODE`` (``Heartbeat`` does this; it is no tool for people).
"""
from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import threading
import time

from vla_bridge import contract as C

START_TIMEOUT_S = 20.0  # a loaded machine can take seconds to import rclpy in the child
STOP_TIMEOUT_S = 2.0
READY = b"R"  # the child writes this on stdout once its publisher exists


class Heartbeat:
    """The policy node's sign of life: a child process that publishes ``Header`` on
    ``topic`` every ``period_s`` while this process lives (``process=True``, the default),
    or a thread of this process (``process=False``, or when the child cannot start; a thread
    is silenced by a predict that holds the GIL)."""

    def __init__(self, node, period_s: float, topic: str = C.TOPIC_POLICY_HEARTBEAT,
                 process: bool = True):
        self.node, self.period_s = node, float(period_s)
        self.topic = node.resolve_topic_name(topic)  # the node's namespace and remaps
        self.child: subprocess.Popen | None = None
        self._pipe_w: int | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        if process:
            try:
                self._start_child()
                return
            except Exception as exc:  # noqa: BLE001 - fall back, loudly
                node.get_logger().error(
                    f"heartbeat child process did not start ({exc}); beating from a thread "
                    "instead: a predict that holds the GIL will now look like a dead policy")
                self._kill_child()
        self._start_thread()

    @property
    def mode(self) -> str:
        return "process" if self.child is not None else "thread"

    @property
    def pid(self) -> int | None:
        return None if self.child is None else self.child.pid

    # ------------------------------------------------------------------ the child
    def _start_child(self) -> None:
        r, w = os.pipe()  # both ends non-inheritable; only r is passed to the child
        self._pipe_w = w
        try:
            self.child = subprocess.Popen(
                [sys.executable, "-m", "vla_bridge.policy_nodes.heartbeat_node", "--fd", str(r),
                 "--parent", str(os.getpid()), "--topic", self.topic,
                 "--period", repr(self.period_s), "--name", self.node.get_name()],
                pass_fds=(r,), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                start_new_session=True)  # a Ctrl-C to the terminal stops the parent, which stops it
        finally:
            os.close(r)
        ready, _, _ = select.select([self.child.stdout], [], [], START_TIMEOUT_S)
        if not ready or self.child.stdout.read(1) != READY:
            raise RuntimeError(f"no ready from the heartbeat child in {START_TIMEOUT_S} s "
                               f"(exit code {self.child.poll()})")
        self.child.stdout.close()

    def _kill_child(self) -> None:
        if self._pipe_w is not None:
            os.close(self._pipe_w)  # EOF: the child's signal to exit
            self._pipe_w = None
        if self.child is None:
            return
        try:
            self.child.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait(timeout=STOP_TIMEOUT_S)
        if self.child.stdout is not None and not self.child.stdout.closed:
            self.child.stdout.close()
        self.child = None

    # ------------------------------------------------------------------ the thread fallback
    def _start_thread(self) -> None:
        from std_msgs.msg import Header

        from vla_bridge.ros import messages
        pub = self.node.create_publisher(Header, self.topic, messages.qos_profile(C.QOS_LATEST))

        def run() -> None:
            while True:
                try:
                    pub.publish(Header(stamp=self.node.get_clock().now().to_msg(),
                                       frame_id=self.node.get_name()))
                except Exception:  # noqa: BLE001 - the context is shutting down
                    return
                if self._stop.wait(self.period_s):
                    return

        self._thread = threading.Thread(target=run, name="policy-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating (the PiPER node holds once the timeout passes); idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self._kill_child()


# ---------------------------------------------------------------------- the child's side


def parent_gone(fd: int, parent: int, timeout: float) -> bool:
    """Wait up to ``timeout`` s; True once the parent is gone (EOF or anything on the pipe,
    or this process re-parented)."""
    readable, _, _ = select.select([fd], [], [], max(timeout, 0.0))
    return bool(readable) or os.getppid() != parent


def child_main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--parent", type=int, required=True)
    ap.add_argument("--topic", default=C.TOPIC_POLICY_HEARTBEAT)
    ap.add_argument("--period", type=float, default=0.02)
    ap.add_argument("--name", default="policy_node")
    a = ap.parse_args(argv)
    if os.getppid() != a.parent:
        return 0
    import rclpy
    from std_msgs.msg import Header

    from vla_bridge.ros import messages
    rclpy.init(args=[])
    node = rclpy.create_node(f"{a.name.strip('/').replace('/', '_')}_heartbeat_{a.parent}")
    try:
        pub = node.create_publisher(Header, a.topic, messages.qos_profile(C.QOS_LATEST))
        try:
            sys.stdout.buffer.write(READY)
            sys.stdout.buffer.flush()
        except (BrokenPipeError, OSError):  # the parent stopped waiting, or is gone: nothing
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # to beat for, and
            return 0  # no second broken-pipe complaint when Python flushes stdout at exit
        # beats on an absolute schedule: a late beat does not push the later ones back
        next_beat = time.monotonic()
        while True:
            pub.publish(Header(stamp=messages.sec_to_stamp(time.time()), frame_id=a.name))
            next_beat = max(next_beat + a.period, time.monotonic())
            if parent_gone(a.fd, a.parent, next_beat - time.monotonic()):
                if os.getppid() != a.parent:  # died: no clean DDS goodbye, just go at once
                    os._exit(0)
                return 0  # stopped by a living parent: shut down cleanly
    except KeyboardInterrupt:
        return 0
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    sys.exit(child_main())
