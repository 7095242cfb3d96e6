"""Runs the talker/listener test graph with vla_bridge.ros.launcher.

    python -m support.launch_test_nodes.driver SHARE_DIR SIGINT_GRACE [graph args...]

SHARE_DIR holds graph.yaml (the params file); graph args as for `vla-bridge launch`.
"""
from __future__ import annotations

import sys
from pathlib import Path

from vla_bridge.ros.launch_args import GraphSpec, LaunchArg, NodeSpec
from vla_bridge.ros.launcher import parse_launch_args, run_graph

GRAPH = GraphSpec(
    name="test_graph",
    params_file="graph.yaml",
    nodes=(NodeSpec("talker", "support.launch_test_nodes.talker", "talker"),
           NodeSpec("listener", "support.launch_test_nodes.listener", "listener")),
    end_node="talker",
    args=(
        LaunchArg("greeting", "hi", "text both nodes get", sets=("talker.greeting",
                                                                 "listener.greeting")),
        LaunchArg("count", "1", "an int for the listener", type="int",
                  sets=("listener.count",)),
        LaunchArg("exit_code", "0", "talker's exit code", type="int", sets=("talker.exit_code",)),
        LaunchArg("wait_forever", "false", "talker never exits", type="bool",
                  sets=("talker.wait_forever",)),
        LaunchArg("die_after", "-1.0", "listener exits 3 after this many s", type="float",
                  sets=("listener.die_after",)),
        LaunchArg("ignore_sigint", "false", "listener ignores SIGINT", type="bool",
                  sets=("listener.ignore_sigint",)),
    ),
)


def main() -> int:
    share_dir, grace, *tokens = sys.argv[1:]
    return run_graph(GRAPH, parse_launch_args(GRAPH, tokens), share_dir=Path(share_dir),
                     sigint_grace=float(grace), sigterm_grace=2.0)


if __name__ == "__main__":
    sys.exit(main())
