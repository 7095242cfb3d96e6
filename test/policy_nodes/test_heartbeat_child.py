"""The heartbeat child (policy_nodes.heartbeat_node) whose parent stopped waiting for it: when
its ready byte meets a closed pipe (the policy node gave up, or the graph was stopped while it
started), it exits quietly, with no traceback in the graph's log (CI, 2026-12-03)."""
from __future__ import annotations

import os
import subprocess
import sys


def test_a_child_whose_parent_stopped_waiting_exits_quietly():
    r, w = os.pipe()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "vla_bridge.policy_nodes.heartbeat_node", "--fd", str(r),
             "--parent", str(os.getpid())], pass_fds=(r,), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        child.stdout.close()  # nobody reads its ready byte any more
        _, err = child.communicate(timeout=120)
    finally:
        os.close(r)
        os.close(w)
    assert child.returncode == 0
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()[-2000:]
