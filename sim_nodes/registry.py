"""The sim backends the sim node can drive, by the name the `sim` launch argument gives.

Without rclpy, so benchmarks and tests build the same backend the node would. Each entry is
``module:Class``, imported only when asked for (SAPIEN and MuJoCo need not both be installed;
LIBERO's backend needs LIBERO's own venv, `.venv-libero`, and the libero_sim graph runs the
sim node from it).
"""
from __future__ import annotations

from importlib import import_module

BACKENDS = {"mujoco": "vla_bridge.sim_nodes.mujoco.backend:MujocoBackend",
            "sapien": "vla_bridge.sim_nodes.sapien.backend:SapienBackend",
            "libero": "vla_bridge.sim_nodes.libero.backend:LiberoBackend"}


def make_backend(name: str, **kwargs):
    """The backend called `name`, built with kwargs; an unknown name is a ValueError."""
    if name not in BACKENDS:
        raise ValueError(f"unknown sim backend {name!r}; available: {sorted(BACKENDS)}")
    module, cls = BACKENDS[name].split(":")
    return getattr(import_module(module), cls)(**kwargs)
