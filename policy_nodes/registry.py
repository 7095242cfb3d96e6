"""Policy backends by name. Each entry is "module:Class" so heavy backends import lazily."""
from __future__ import annotations

from importlib import import_module

from vla_bridge.policy_nodes.backend import PolicyBackend

POLICIES = {
    "oracle": "vla_bridge.policy_nodes.oracle:OraclePolicy",
    "hold": "vla_bridge.policy_nodes.hold:HoldPolicy",
}


def make_policy(name: str, **kwargs) -> PolicyBackend:
    if name not in POLICIES:
        raise ValueError(f"unknown policy backend {name!r}; available: {sorted(POLICIES)}")
    module, cls = POLICIES[name].split(":")
    return getattr(import_module(module), cls)(**kwargs)
