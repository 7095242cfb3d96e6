"""A sim backend without a simulator (test_session_limits.py, test_charged_latency.py): joints
follow the applied target exactly."""
from __future__ import annotations

import numpy as np

from vla_bridge.embodiment.workcell import home_command
from vla_bridge.sim_nodes.backend import SimBackend


class FakeBackend(SimBackend):
    """Joints follow the applied target exactly; remembers what was applied."""
    control_period = 0.06

    def __init__(self):
        self.q, self.t, self.applied = home_command(), 0.0, []

    def reset(self, scene, layout, seed, cue_objects=(), perturbation=None):
        self.q, self.t, self.applied = home_command(), 0.0, []

    def apply(self, target):
        self.applied.append(np.array(target))
        self.q = np.array(target)

    def step(self):
        self.t += self.control_period

    def joint_positions(self):
        return self.q.copy()

    def world_state(self):
        return None

    def render(self, camera):
        return np.zeros((2, 2, 3), np.uint8)

    def camera_model(self, camera):
        raise NotImplementedError

    @property
    def time(self):
        return self.t
