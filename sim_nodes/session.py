"""One episode on a simulator backend, independent of ROS: reset, observations, chunk
execution under the budget. The sim node and the in-process runners both use it, so the node
graph and the direct run execute exactly the same steps, for every backend: what differs
between embodiments (limits, home pose, the rule that ends an episode) comes from the backend
(`sim_nodes/backend.py`).

The budget (`Budget`): at most ``max_policy_calls`` chunks, each truncated to
``max_actions_per_call`` actions, and, when the begin or the scene sets one (LIBERO's suites:
`SimBackend.step_budget`), at most ``max_steps`` ticks. The episode also ends as soon as the
backend's task is done (`SimBackend.finished`: LIBERO's goal predicates, or the goal of the
begin's ``end_on`` role). Chunks arrive validated (`messages.msg_to_chunk` at the sim node's
edge, `contract.validate_chunk` in the in-process runners): the session does not check them
again.

Charged latency (``execute_charged``, the sim's ``latency:=charged``): still lock-step (the
world waits for each chunk, so a seed gives the same episode), but a call's latency L is
charged in sim time. The chunk answering the observation at tick s takes over at tick
s + d, d = contract.charged_ticks(L, dt); ticks s+1 .. s+d execute what is left of the
previous chunk (`queue`), then hold the last command; the new chunk's actions due by then
(k < d) are dropped, as real time drops late actions. After ``period`` ticks of the new
chunk the caller observes again, and the chunk's rest becomes the queue of the next call's
charged ticks (period None, or the budget's last call: the chunk runs to its end). Latency 0
with period None is plain lock-step, tick for tick. A call is charged at most the episode's
whole budget (``max_ticks`` ticks, ``charge_cap_ms``): a longer wait (say, the measured one of
a hung policy) would only hold the sim long after the episode is over; ``charged_ms`` records
the capped value, so a replay is the same episode.

Every target goes through the embodiment's rule (`SimBackend.action_limits`) before it is
applied. LIBERO's normalised actions are clipped to their ranges. The PiPER pair's go through
the real arm's limit and step rules (`embodiment.limits`, numbers from
config/piper_safety.yaml): joints clipped to the arm's ranges (the
ranges themselves; the real arm's extra margin guards servo overshoot the sim does not have),
grippers to [gripper_min, gripper_max], and each joint's step from the last executed command
to the arm's own top speed (arm_max_joint_speed_rad_s, 3 rad/s) times the control period.
The executed, clamped command is what `command` (and so the recorded frames) holds; each
clamp is a `LimitEvent` in `events` for the caller to log. The filter's conservative caps
for first contact with hardware (max_joint_speed_rad_s, max_step_rad) are not applied: at
the sim's 0.06 s tick they allow 0.06-0.1 rad, and the oracle's own plans step up to 0.11.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from vla_bridge import contract
from vla_bridge.benchmarks.perturbations import IMAGE_AXES, check_supported
from vla_bridge.embodiment.world import Observation
from vla_bridge.sim_nodes.backend import SimBackend


@dataclass
class Budget:
    max_policy_calls: int = 10
    max_actions_per_call: int = 50
    max_steps: int | None = None  # ticks; None: the scene's own (SimBackend.step_budget)


@dataclass(frozen=True)
class LimitEvent:
    """A limit or step rule that changed a target at a tick."""
    tick: int
    arm: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"tick {self.tick} [{self.arm}] {self.rule}: {self.detail}"


class FrameSampler:
    """Recorded frames at a fixed rate on the physics clock (`record_fps`), between control
    ticks: LeRobot datasets need an integer fps with timestamp = index / fps, which the
    0.06 s tick (16.7 Hz) cannot give. A frame falls every `period_steps` physics steps (10 fps:
    every 25th 4 ms step); the session splits a tick's physics at those steps and calls
    `on_frame()`, which may read and render the state but never changes it."""

    def __init__(self, fps: int, physics_dt: float | None, on_frame):
        if physics_dt is None:
            raise ValueError("this sim backend cannot record frames between control ticks")
        steps = round(1.0 / (fps * physics_dt)) if fps > 0 else 0
        if fps <= 0 or abs(steps * physics_dt * fps - 1.0) > 1e-9:
            rate = round(1.0 / physics_dt)
            valid = [f for f in range(1, rate + 1) if rate % f == 0]
            raise ValueError(f"record_fps must divide the {rate} Hz physics rate, got {fps}; "
                             f"valid: {valid}")
        self.fps, self.period_steps, self.on_frame = fps, steps, on_frame
        self.steps = 0  # physics steps since the episode started

    def advance(self, backend, steps: int) -> None:
        """Step the physics `steps` steps, stopping at each frame to record it."""
        while steps > 0:
            n = min(steps, self.period_steps - self.steps % self.period_steps)
            backend.step_physics(n)
            self.steps += n
            steps -= n
            if self.steps % self.period_steps == 0:
                self.on_frame()


def summarize_events(events: list[LimitEvent], show: int = 3) -> str:
    """One log line for a batch of limit events: counts per rule, then the first few."""
    counts = Counter(e.rule for e in events)
    rules = ", ".join(f"{rule} x{n}" for rule, n in sorted(counts.items()))
    first = "; ".join(str(e) for e in events[:show])
    more = f"; ... {len(events) - show} more" if len(events) > show else ""
    return f"clamped action targets ({rules}): {first}{more}"


class SimSession:
    def __init__(self, backend: SimBackend, cameras=None, limits=None):
        self.backend = backend
        self.cameras = tuple(cameras or backend.embodiment.camera_names)
        self.limits = limits if limits is not None else backend.action_limits()
        self.budget = Budget()
        self.calls = 0
        self.ticks = 0
        self.command = backend.home_command()
        self.events: list[LimitEvent] = []
        self._awaiting = None  # stamp of the observation whose answer is not counted yet
        self.sampler: FrameSampler | None = None  # record_fps frames between ticks
        self.charged = None  # charged latency: ms per call, or contract.CHARGED_MEASURED
        self.charged_ms: list[float] = []  # what each call was charged
        self.queue: list[np.ndarray] = []  # charged latency: the last chunk's actions left
        self.perturbation = None  # the episode's benchmarks.perturbations.EpisodePerturbation

    def record_frames(self, fps: int, on_frame) -> None:
        """Call `on_frame()` every 1/fps s of sim time, on the physics clock (FrameSampler);
        fps 0: no frames."""
        self.sampler = (FrameSampler(fps, self.backend.physics_dt, on_frame) if fps else None)

    def begin(self, scene: str, layout: str, seed: int, budget: Budget | None = None,
              cue_objects=(), charged=None, task: dict | None = None,
              perturbation=None) -> None:
        """Reset for an episode. ``charged``: None (plain lock-step), a latency in ms per
        policy call (at least one per call of the budget) or contract.CHARGED_MEASURED.
        ``task``: the begin's task, whose goals the backend may watch (`check_watch`).
        ``perturbation``: the episode's `perturbations.EpisodePerturbation` (None: none); the
        image axes are applied here to every rendered image, the others by the backend.
        Everything is checked before the reset, so a refused begin leaves the running
        episode as it was (the goals' names in the new scene excepted: they are known only
        once it is loaded)."""
        budget = budget or Budget()
        check_charged(charged, budget.max_policy_calls)
        max_steps = budget.max_steps or self.backend.step_budget(scene)
        if charged is not None and max_steps is not None:
            raise ValueError("charged latency needs an episode bounded by policy calls only; "
                             f"this one has a step budget ({max_steps} steps)")
        goals = self.backend.check_watch(task or {})
        check_supported(perturbation, self.backend.perturbation_axes,
                        f"{type(self.backend).__name__}")
        edits = (task or {}).get("edits")  # an INT-ACT probe's LIBERO objects
        if edits and not self.backend.scene_edits:
            raise ValueError(f"the {type(self.backend).__name__} cannot add LIBERO objects to a "
                             "scene (INT-ACT's probes run on MuJoCo: sim:=mujoco)")
        self.backend.reset(scene, layout, seed, cue_objects, perturbation=perturbation,
                           **({"edits": edits} if edits else {}))
        self.perturbation = perturbation
        self.backend.watch(goals)
        self.budget = replace(budget, max_steps=max_steps)
        self.charged = charged if charged is None or isinstance(charged, str) else list(charged)
        self.charged_ms = []
        self.queue = []
        self.calls = 0
        self.ticks = 0
        self.command = self.backend.start_command()
        self.events = []
        self._awaiting = None
        if self.sampler is not None:
            self.sampler.steps = 0

    @property
    def done(self) -> bool:
        return (self.backend.finished is not None or self.calls >= self.budget.max_policy_calls
                or self._steps_spent)

    @property
    def _steps_spent(self) -> bool:
        return self.budget.max_steps is not None and self.ticks >= self.budget.max_steps

    @property
    def reason(self) -> str:
        """Why the episode ended (or "running")."""
        if self.backend.finished is not None:
            return self.backend.finished
        if self._steps_spent:
            return f"step budget spent ({self.budget.max_steps} steps)"
        return "policy-call budget spent" if self.done else "running"

    def ready_info(self) -> dict:
        """The episode's fields for the `ready` status: the backend's, and the step budget
        when one applies."""
        info = self.backend.episode_info()
        if self.budget.max_steps is not None:
            info["max_steps"] = self.budget.max_steps
        if self.perturbation is not None:
            info["perturbation"] = self.perturbation.describe()
        return info

    def render(self, camera: str):
        """The backend's image of ``camera`` with the episode's image perturbation (noise
        drawn per camera and sim time, so rendering more often changes nothing)."""
        image = self.backend.render(camera)
        if self.perturbation is None or self.perturbation.axis not in IMAGE_AXES:
            return image
        tick = int(round(self.backend.time * 1e6))
        return self.perturbation.apply_image(image, self.backend.embodiment.camera_names.index(camera), tick)

    def observation(self, images: bool = True, world: bool = True) -> Observation:
        obs = Observation(
            state=self.backend.joint_positions(),
            images={c: self.render(c) for c in self.cameras} if images else {},
            stamp=self.backend.time,
            world=self.backend.world_state() if world else None,
        )
        self.awaiting(obs.stamp)
        return obs

    def awaiting(self, stamp) -> None:
        """An observation with this stamp went out: the first chunk answering it is a call."""
        self._awaiting = stamp

    def count_call(self, stamp) -> bool:
        """Count a chunk (real time) as a policy call when it answers the observation awaiting
        an answer; once per observation, so a flood of chunks for one stamp is one call."""
        if stamp is None or stamp != self._awaiting:
            return False
        self._awaiting = None
        self.calls += 1
        return True

    def drain_events(self) -> list[LimitEvent]:
        """The limit events since the last drain (the caller logs them)."""
        events, self.events = self.events, []
        return events

    def _start_call(self, chunk) -> list:
        """A validated chunk's actions within the per-call budget, counted as a call."""
        if self.done:
            raise RuntimeError(f"the episode is over ({self.reason})")
        self.calls += 1
        self._awaiting = None  # this chunk answered the observation
        return list(np.asarray(chunk, dtype=float)[: self.budget.max_actions_per_call])

    def _ticks_left(self) -> float:
        return (self.budget.max_steps - self.ticks if self.budget.max_steps is not None
                else float("inf"))

    def execute(self, chunk):
        """Run one policy call's chunk (truncated to the per-call budget, and to the steps
        left); yields after each executed action so callers can record/publish the tick. The
        episode's end (`done`) stops it early; the last tick is announced to the backend as
        the one the next observation shows."""
        actions = self._start_call(chunk)
        return self._run(actions[: int(min(len(actions), self._ticks_left()))])

    def _run(self, actions):
        for k, target in enumerate(actions):
            if k == len(actions) - 1:
                self.backend.observe_next()
            self.step_action(target)
            yield self.command
            if self.backend.finished is not None:
                return

    def execute_charged(self, chunk, measured_ms: float | None = None,
                        period: int | None = None):
        """Run one policy call's chunk with its latency charged in sim time (module doc):
        ``measured_ms`` is this call's latency when the session charges what was measured;
        ``period``: ticks of the chunk before the caller observes again (None: all).
        Yields after each executed tick, charged ticks included."""
        if self.done:
            raise RuntimeError(f"the episode is over ({self.reason})")
        delay = contract.charged_ticks(self.charge(measured_ms), self.backend.control_period)
        actions = self._start_call(chunk)
        ticks = []
        for _ in range(delay):  # the policy is still thinking: the robot goes on
            ticks.append(self.queue.pop(0) if self.queue else None)
        self.queue = actions[delay:]  # the newest chunk wins; late actions dropped
        run = len(self.queue) if period is None or self.done else min(period, len(self.queue))
        ticks += [self.queue.pop(0) for _ in range(run)]
        return self._run_charged(ticks)

    def _run_charged(self, ticks):
        for k, target in enumerate(ticks):
            if k == len(ticks) - 1:
                self.backend.observe_next()
            self.step_action(self.command if target is None else target)
            yield self.command

    @property
    def charge_cap_ms(self) -> float:
        """The most a call is charged: the episode's whole budget of ticks, in ms."""
        return self.max_ticks * self.backend.control_period * 1000.0

    def charge(self, measured_ms: float | None) -> float:
        """The latency charged to the call being answered (ms, kept in ``charged_ms``), at
        most ``charge_cap_ms``."""
        if self.charged is None:
            raise RuntimeError("this episode charges no latency (begin's charged is None)")
        if self.charged == contract.CHARGED_MEASURED:
            if measured_ms is None:
                raise ValueError("measured charged latency needs the call's measured_ms")
            latency = round(float(measured_ms), 3)  # as recorded, so a replay is exact
        else:
            latency = float(self.charged[self.calls])
        latency = min(latency, round(self.charge_cap_ms, 3))
        self.charged_ms.append(latency)
        return latency

    def step_action(self, target) -> None:
        """Apply one target, within the embodiment's rule, and advance one control period."""
        command = self.enforce_limits(target)
        self.backend.apply(command)
        self.command = command
        if self.sampler is None:
            self.backend.step()
        else:
            backend = self.backend
            self.sampler.advance(backend, round(backend.control_period / backend.physics_dt))
        self.ticks += 1

    def enforce_limits(self, target) -> np.ndarray:
        """The target passed through the embodiment's rule (`SimBackend.action_limits`: the
        PiPER pair's ranges and step from the last command, LIBERO's action ranges); every
        rule that acted is added to `events`."""
        command, notes = self.limits.enforce(target, self.command, self.backend.control_period)
        self.events += [LimitEvent(self.ticks + 1, part, n.rule, n.detail) for part, n in notes]
        return command

    @property
    def max_ticks(self) -> int:
        """Episode length in ticks when the sim runs in real time (same frame count as
        lock-step): the step budget, else every call's actions."""
        if self.budget.max_steps is not None:
            return self.budget.max_steps
        return self.budget.max_policy_calls * self.budget.max_actions_per_call


def check_charged(charged, calls: int) -> None:
    """ValueError unless ``charged`` is None, "measured", or >= ``calls`` latencies >= 0 ms."""
    contract.check_charged_latency(charged)
    if charged is not None and charged != contract.CHARGED_MEASURED and len(charged) < calls:
        raise ValueError(f"charged latency: {len(charged)} latencies for a budget of {calls} "
                         "policy calls")
