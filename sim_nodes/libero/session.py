"""One LIBERO episode on the LIBERO backend, independent of ROS (the LIBERO sim node and the
in-process runs of tests and `vla-bridge bench libero` execute exactly these steps).

The protocol is openpi's LIBERO evaluation: the backend's reset restores the initial state
and settles; the policy is asked for a chunk, its first `actions_per_call` actions run (openpi
replans every 5 steps), then it is asked again; the episode ends at LIBERO's first success or
when the suite's step budget (`libero.backend.STEP_BUDGET`, settle steps not counted) is spent.
Only the step before an observation renders the cameras (`LiberoBackend.observe_next`).

Under a LIBERO-VIFO protocol an episode has two tasks (the one the language names, the one the
cue shows): the begin message's `goals` (role -> BDDL goal) are checked with LIBERO's own
predicates after every step, and `end_on` names the role whose success ends the episode.

Actions are the 7-D `contract.LIBERO_PANDA` actions (six OSC deltas in [-1, 1], gripper
1 = open, 0 = closed); a malformed chunk raises ValueError naming the expected shape.
"""
from __future__ import annotations

import numpy as np

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from vla_bridge.sim_nodes.libero.backend import EMBODIMENT, STEP_BUDGET
from vla_bridge.sim_nodes.session import LimitEvent

REPLAN_STEPS = 5  # openpi's LIBERO client: actions executed per policy call


class LiberoSession:
    def __init__(self, backend):
        self.backend = backend
        self.cameras = EMBODIMENT.camera_names
        self.max_steps = 0
        self.actions_per_call = REPLAN_STEPS
        self.calls = 0
        self.end_on: str | None = None
        self.command = np.array([0.0] * 6 + [C.GRIPPER_OPEN])
        self.events: list[LimitEvent] = []  # actions clipped to LIBERO's ranges (drain_events)

    def begin(self, suite: str, layout: str, seed: int, max_steps: int | None = None,
              actions_per_call: int = REPLAN_STEPS, goals: dict | None = None,
              end_on: str | None = None) -> None:
        """Reset to task/initial state `layout` ("TASK:INIT") of `suite`; `max_steps`: the
        step budget (None: the suite's standard one). `goals` (role -> BDDL goal) are also
        checked every step (`LiberoBackend.watch`); the episode ends when the goal of role
        `end_on` holds (None: the loaded task's own goal, LIBERO's success)."""
        if suite not in STEP_BUDGET:
            raise ValueError(f"unknown LIBERO suite {suite!r}; expected one of {list(STEP_BUDGET)}")
        if actions_per_call < 1:
            raise ValueError(f"actions_per_call must be >= 1, got {actions_per_call}")
        if end_on is not None and end_on not in (goals or {}):
            raise ValueError(f"end_on {end_on!r} names no watched goal (roles: "
                             f"{sorted(goals or {})})")
        self.backend.reset(suite, layout, seed)
        self.backend.watch(goals or {})
        self.end_on = end_on
        self.max_steps = int(max_steps) if max_steps else STEP_BUDGET[suite]
        self.actions_per_call = int(actions_per_call)
        self.calls = 0
        self.command = np.array([0.0] * 6 + [C.GRIPPER_OPEN])

    @property
    def steps(self) -> int:
        return self.backend.steps

    @property
    def success(self) -> bool:
        return self.backend.success

    @property
    def goals(self) -> dict[str, bool]:
        """role -> whether its watched goal held after some step."""
        return {role: step is not None for role, step in self.backend.goal_steps.items()}

    @property
    def finished_task(self) -> bool:
        """The episode's task is done: the `end_on` role's goal, else LIBERO's success."""
        if self.end_on is not None:
            return self.goals[self.end_on]
        return self.success

    @property
    def done(self) -> bool:
        return self.finished_task or self.steps >= self.max_steps

    @property
    def reason(self) -> str:
        if self.finished_task:
            if self.end_on is None:
                return "success (LIBERO's goal predicates hold)"
            return f"success (LIBERO's predicates: the {self.end_on} task's goal holds)"
        return f"step budget spent ({self.max_steps} steps)" if self.done else "running"

    def observation(self, world: bool = True) -> Observation:
        b = self.backend
        return Observation(state=b.joint_positions(),
                           images={c: b.render(c) for c in self.cameras},
                           stamp=b.time, world=b.world_state() if world else None)

    def drain_events(self) -> list[LimitEvent]:
        """The actions clipped to LIBERO's ranges since the last drain (the node logs them)."""
        events, self.events = self.events, []
        return events

    def execute(self, chunk):
        """Run one policy call's chunk: its first `actions_per_call` actions, fewer when the
        budget ends or LIBERO reports success; yields after each step. The last step before
        the next observation renders the cameras."""
        if self.done:
            raise RuntimeError("the episode is over (success or step budget spent)")
        actions = C.validate_chunk(chunk, EMBODIMENT.action_dim)
        run = min(len(actions), self.actions_per_call, self.max_steps - self.steps)
        self.calls += 1
        for k in range(run):
            if k == run - 1:
                self.backend.observe_next()
            self.backend.apply(actions[k])
            self.events.extend(LimitEvent(self.steps, "panda", "action_range",
                                          f"{name} {asked:g} -> {applied:g}")
                               for name, asked, applied in self.backend.clamped)
            self.command = self.backend.command
            self.backend.step()
            yield self.command
            if self.finished_task:
                return


def run_episode(session: LiberoSession, policy, suite: str, layout: str, seed: int,
                instruction: str, task: dict | None = None, max_steps: int | None = None,
                on_step=None) -> dict:
    """One episode in this process (no ROS): the policy backend answers each observation.
    `task` may carry `goals` / `end_on` (the begin message's, see `LiberoSession.begin`).
    Returns {"success", "goals", "steps", "calls", "reason"}; `on_step(session)` after each
    step."""
    task = task or {}
    session.begin(suite, layout, seed, max_steps, goals=task.get("goals"),
                  end_on=task.get("end_on"))
    policy.reset()
    policy.set_instruction(instruction, task)
    while not session.done:
        obs = session.observation(world=getattr(policy, "needs_world_state", False))
        for _ in session.execute(policy.predict(obs)):
            if on_step is not None:
                on_step(session)
    return {"success": session.success, "goals": session.goals, "steps": session.steps,
            "calls": session.calls, "reason": session.reason}
