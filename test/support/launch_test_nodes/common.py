"""Shared bits of the test nodes: parameter declaration and the start-up report."""
from __future__ import annotations

import json
import os
from pathlib import Path

CHATTER = "/vla_bridge_test/chatter"
ACK = "/vla_bridge_test/ack"


def declare(node, defaults: dict) -> dict:
    """Declare parameters with defaults; return their values (params file + overrides)."""
    return {name: node.declare_parameter(name, value).value for name, value in defaults.items()}


def write_report(params: dict, name: str, extra: dict | None = None) -> None:
    """Write what the node received to <report_dir>/<name>.json (atomically)."""
    if not params.get("report_dir"):
        return
    path = Path(params["report_dir"]) / f"{name}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "params": params, **(extra or {})}))
    tmp.replace(path)
