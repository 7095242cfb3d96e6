"""Leader/follower teleoperation in the PiPER node (parameter ``teleop``, `vla-bridge
record-demos`). No rclpy.

On a linked AgileX pair the follower obeys its leader arm directly on their CAN bus; the host
only listens. So in teleop mode the node never enables an arm, sets its mode or commands it: per arm
it reads, through piper_sdk on the follower's bus, the leader's joint / gripper control frames
(`arm.PiperArm.read_leader`) and publishes them as ``joint_commands`` (the demonstration's
action: absolute targets in the contract's units), next to the follower's measured
``joint_states``. A leader whose newest joint command is older than ``timeout_s`` is silent:
no ``joint_commands`` go out until every leader is heard again (logged once per change), so
a demonstration never records the follower's own position as a command. A leader that sends
no gripper control leaves the gripper command at the follower's measured opening.

With fake hardware each fake follower is linked (`fake_piper.FakePiper.link`) and a
`fake_leader.FakeLeader` on its virtual bus plays the plans sent to ``play`` (record-demos
sends the oracle's plan of the task); until then it holds the follower's start pose.
"""
from __future__ import annotations

import time

import numpy as np

from vla_bridge import contract as C
from vla_bridge.robot_nodes.piper.fake_leader import FakeLeader


class TeleopLeaders:
    """The leaders of the node's arms (see the module docstring). `log` has info/warning."""

    def __init__(self, timeout_s: float, log=None, clock=time.time):
        self.timeout_s = float(timeout_s)
        self.log, self.clock = log, clock
        self.hw: dict = {}  # arm -> PiperArm (the follower's driver)
        self.fake_leaders: dict[str, FakeLeader] = {}
        self.latest: dict[str, np.ndarray | None] = {}
        self.silent: set[str] = set()

    def add(self, arm: str, hw, fake=None) -> None:
        """Follow `arm`'s leader through its connected driver `hw`; with fake hardware link
        the fake follower `fake` and start a fake leader holding its pose."""
        self.hw[arm] = hw
        self.latest[arm] = None
        if fake is not None:
            fake.link()
            self.fake_leaders[arm] = FakeLeader(fake.channel, initial=hw.read().vector()).start()

    def command(self, arm: str, measured: np.ndarray) -> np.ndarray | None:
        """The leader's newest command of `arm` (7 values), None while it is silent."""
        lead = self.hw[arm].read_leader()
        age = np.inf if lead is None else self.clock() - lead.stamp
        fresh = age <= self.timeout_s
        if fresh and arm in self.silent:  # a change: said once (rclpy: one level per line)
            self.silent.discard(arm)
            if self.log is not None:
                self.log.info(f"teleop: the {arm} leader arm is heard again")
        elif not fresh and arm not in self.silent:
            self.silent.add(arm)
            if self.log is not None:
                self.log.warning(f"teleop: no command from the {arm} leader arm on "
                                 f"{self.hw[arm].can_port} for {age:.2f} s (is it on, in "
                                 "teaching mode and linked to this follower?): no "
                                 "joint_commands until it is")
        if not fresh:
            self.latest[arm] = None
            return None
        gripper = measured[6] if lead.gripper is None else lead.gripper
        self.latest[arm] = np.concatenate([lead.joints, [gripper]])
        return self.latest[arm]

    def heard(self, arms) -> bool:
        """Every arm's leader gave a command on its last `command` call."""
        return all(self.latest.get(arm) is not None for arm in arms)

    def play(self, arms, plan: np.ndarray, times: np.ndarray) -> float:
        """Fake hardware: each fake leader plays its arm's columns of `plan` [N, 7 * arms] at
        `times`; the plan's duration. ValueError without fake leaders."""
        if not self.fake_leaders:
            raise ValueError("no fake leader to play a plan: real leader arms are moved by hand")
        duration = 0.0
        for i, arm in enumerate(arms):
            if arm in self.fake_leaders:
                cols = slice(i * C.JOINTS_PER_ARM, (i + 1) * C.JOINTS_PER_ARM)
                duration = self.fake_leaders[arm].play(plan[:, cols], times)
        return duration

    def close(self) -> None:
        for leader in self.fake_leaders.values():
            leader.stop()
