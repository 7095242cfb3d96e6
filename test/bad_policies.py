"""Deliberately broken policy backends, loaded by the policy node as "bad_policies:Class"."""
import numpy as np

from vla_bridge.policy_nodes.backend import PolicyBackend


class WrongWidthPolicy(PolicyBackend):
    """Returns 13-D actions instead of the contract's 14."""

    def set_instruction(self, instruction, task=None):
        pass

    def predict(self, observation):
        return np.zeros((50, 13))


class NaNPolicy(PolicyBackend):
    """Returns a chunk with a NaN target."""

    def set_instruction(self, instruction, task=None):
        pass

    def predict(self, observation):
        chunk = np.tile(observation.state, (50, 1))
        chunk[3, 2] = np.nan
        return chunk


class HangingPolicy(PolicyBackend):
    """Never returns from predict (a model stuck on a device, a dead remote call)."""

    def set_instruction(self, instruction, task=None):
        pass

    def predict(self, observation):
        import time
        while True:
            time.sleep(1.0)
