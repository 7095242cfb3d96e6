"""Fixtures of the sim node tests."""
from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def sim_node_in_process():
    """A sim node built in this process (rclpy initialised); the statuses it publishes are
    kept, parsed, in its ``sent`` list."""
    pytest.importorskip("rclpy")
    from support.junk_messages import in_process
    from vla_bridge.sim_nodes import sim_node as S
    with in_process(S, S.SimNode) as sim:
        sim.sent = []
        sim.pub_status.publish = lambda msg: sim.sent.append(json.loads(msg.data))
        yield sim
