"""Deliberately broken policy backends, loaded by the policy node as
"support.bad_policies:Class"."""
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


# Oracle-driven policies that break their node's process (the launcher's supervision)
from vla_bridge.policy_nodes.oracle import OraclePolicy  # noqa: E402


class DiesOncePolicy(OraclePolicy):
    """The oracle, except that its process kills itself (SIGKILL) on the first predict while
    ``marker`` does not exist (it creates it first): the restarted node then plays on."""

    def __init__(self, marker: str, chunk_size: int = 50, control_period: float = 0.06,
                 follow: str = "language"):
        super().__init__(chunk_size, control_period, follow)
        self.marker = marker

    def predict(self, observation):
        import os
        import pathlib
        import signal
        if not pathlib.Path(self.marker).exists():
            pathlib.Path(self.marker).touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return super().predict(observation)


class FreezingPolicy(OraclePolicy):
    """The oracle, except that its whole process stops itself (SIGSTOP, as Ctrl-Z or a
    debugger would) on the first predict: alive, but silent even to DDS."""

    def predict(self, observation):
        import os
        import signal
        os.kill(os.getpid(), signal.SIGSTOP)
        return super().predict(observation)
