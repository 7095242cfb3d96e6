"""Policy backends by name. Each entry is "module:Class" so heavy backends import lazily."""
from __future__ import annotations

import inspect
from importlib import import_module

from vla_bridge.policy_nodes.backend import PolicyBackend

POLICIES = {
    "oracle": "vla_bridge.policy_nodes.oracle:OraclePolicy",
    "hold": "vla_bridge.policy_nodes.hold:HoldPolicy",
}


def make_policy(name: str, **kwargs) -> PolicyBackend:
    """A registered backend by name, or a user's own as "package.module:Class"."""
    spec = POLICIES.get(name, name)
    if ":" not in spec:
        raise ValueError(f"unknown policy backend {name!r}; available: {sorted(POLICIES)} "
                         "or 'package.module:Class' for your own")
    module, cls = spec.split(":", 1)
    backend_cls = getattr(import_module(module), cls)
    accepted = inspect.signature(backend_cls).parameters
    return backend_cls(**{k: v for k, v in kwargs.items() if k in accepted})
