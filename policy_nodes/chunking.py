"""Chunk execution: which actions of each predicted chunk the robot executes, and when.

Every policy call returns a chunk ``[H, D]`` of absolute targets for the steps after the
observation: action ``k`` is due at ``stamp + (k + 1) * dt`` (the contract). All helpers
here align chunks by that timestamp, as integer control steps ``round(stamp / dt)``, so
they never depend on how many actions the sim actually ran or how late a chunk arrived.

Three modes, composable (``ChunkScheduler``):

* **action horizon** (always): publish the first ``n`` of the ``H`` actions
  (``action_horizon``); the next observation comes after they ran.
* **temporal ensembling** (``temporal_ensemble``), as in ACT (Zhao et al. 2023): every step
  covered by several predicted chunks gets their weighted mean, ``w_i = exp(-m * i)`` with
  ``i = 0`` for the OLDEST prediction of that step (ACT's convention; ``m = 0.01`` by
  default). Raw predictions are kept, never the ensembled output. Only has an effect when
  chunks overlap, i.e. ``action_horizon < chunk_size`` (ACT itself queries every step).
* **asynchronous splice** (``async_inference``): the robot keeps executing the previous
  plan while the next chunk is computed, and the new chunk is spliced in without a jump.
  Splice rule, for a new chunk ``N`` answering the observation at step ``s`` and the
  previous plan ``P`` (held at its last action past its end; for the first chunk of an
  episode, the observed state held, so the robot also eases into its first chunk):

  1. ``d`` = control steps that passed while predicting: ``latest tick seen - s`` (the node
     hears ``joint_states`` of every tick while its worker thread predicts), plus one step
     of transport margin when ``d > 0``. In lock-step the sim waits for the chunk, so no
     tick arrives, ``d = 0`` always and the run stays deterministic. Under charged latency
     (the sim's ``latency:=charged``, lock-step) no tick arrives either, but the sim will
     run ``contract.charged_ticks(L)`` ticks of the previous plan before this chunk takes
     over, so the runner is told: ``d`` is that (no margin: the sim charges exactly that),
     L being the call's entry of the begin message's ``charged_latency_ms``, or for
     "measured" this node's own time from the observation to the prediction (the sim
     measures a little more, transport included, so the two may differ by a tick). It is
     what the node would know after predicting on real hardware (the ticks it heard), never
     more: the splice keeps starting where the robot really is;
  2. steps ``s+1 .. s+d`` keep ``P`` (they are being executed, or already were: the sim
     drops actions whose time has passed);
  3. from ``s0 = s + 1 + d`` the output follows ``N`` plus the disagreement
     ``g = P[s0] - N[s0]``, fading linearly to zero over ``k`` steps:
     ``O[t] = N[t] + (1 - (j + 1) / (k + 1)) g`` (``j = t - s0``), then ``O = N``.
     ``k`` is at least ``splice_steps`` and long enough that the fade adds at most one
     action step per tick: ``k + 1 >= |g|_inf / step``, ``step`` being the largest
     per-tick change inside ``N`` (at least ``min_step``), capped by the chunk's length.
     So the boundary tick moves by the old plan's own step plus at most one action step,
     the following ticks by the new plan's step plus at most one action step, never by
     the whole disagreement between two chunks.

``ChunkRunner`` is the policy node's hook: predict (in the ROS callback, or in a worker
thread for async inference, newest observation wins), validate, schedule, publish, and a
per-call latency breakdown (preprocess / inference / postprocess / transport). It has no
rclpy dependency: the node passes ``publish`` and ``status`` callbacks.

A backend may report its own split of a call in ``backend.last_timing`` (milliseconds,
keys ``preprocess``, ``inference``, ``postprocess``, ``transport``), e.g. the openpi client
separates the server's model time from the network; the runner then charges model time
only to ``inference``.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vla_bridge import contract as C

ENSEMBLE_COEFF = 0.01  # ACT's m
SPLICE_STEPS = 8  # minimum cross-fade length of the async splice
MIN_STEP = 2e-3  # floor of "one action step" (rad / normalised gripper) for static chunks
TIMING_KEYS = ("preprocess", "inference", "postprocess", "transport")


@dataclass
class _Plan:
    start: int  # control step of row 0
    actions: np.ndarray  # [L, D]

    @property
    def end(self) -> int:  # last step covered
        return self.start + len(self.actions) - 1

    def at(self, steps: np.ndarray) -> np.ndarray:
        """Actions at absolute steps (held at the first/last action outside the plan)."""
        idx = np.clip(steps - self.start, 0, len(self.actions) - 1)
        return self.actions[idx]


class ChunkScheduler:
    """Pure, deterministic chunk scheduling (see the module docstring)."""

    def __init__(self, dt: float, action_horizon: int | None = None, temporal_ensemble: bool = False,
                 async_splice: bool = False, ensemble_coeff: float = ENSEMBLE_COEFF,
                 splice_steps: int = SPLICE_STEPS, min_step: float = MIN_STEP):
        if dt <= 0:
            raise ValueError(f"control period must be > 0, got {dt}")
        self.dt = float(dt)
        self.action_horizon = None if not action_horizon else int(action_horizon)
        self.temporal_ensemble = bool(temporal_ensemble)
        self.async_splice = bool(async_splice)
        self.ensemble_coeff = float(ensemble_coeff)
        self.splice_steps = max(1, int(splice_steps))
        self.min_step = float(min_step)
        self.reset()

    def reset(self) -> None:
        self._history: list[_Plan] = []  # raw predictions (ensembling), oldest first
        self._plan: _Plan | None = None  # the last spliced plan (async)

    def step_of(self, stamp: float) -> int:
        return int(np.rint(stamp / self.dt))

    # ------------------------------------------------------------------ modes
    def ensemble(self, raw: np.ndarray, start: int) -> np.ndarray:
        """ACT temporal ensembling of ``raw`` (row 0 at step ``start``) with earlier chunks."""
        self._history = [p for p in self._history if p.end >= start]
        self._history.append(_Plan(start, raw))
        total = np.zeros_like(raw)
        weight = np.zeros(len(raw))
        count = np.zeros(len(raw))  # predictions of each step seen so far, oldest first
        for plan in self._history:
            lo, hi = max(plan.start, start), min(plan.end, start + len(raw) - 1)
            if lo > hi:
                continue
            out = slice(lo - start, hi - start + 1)
            w = np.exp(-self.ensemble_coeff * count[out])
            total[out] += w[:, None] * plan.actions[lo - plan.start: hi - plan.start + 1]
            weight[out] += w
            count[out] += 1
        return total / weight[:, None]

    def splice(self, new: np.ndarray, start: int, delay: int = 0) -> tuple[np.ndarray, dict]:
        """Splice ``new`` (row 0 at step ``start``) onto the previous plan; see module doc."""
        prev = self._plan
        info = {"delay_steps": int(delay), "blend_steps": 0, "gap": 0.0}
        out = new.copy()
        if prev is not None and prev.end >= start - 1 and len(new) > 0:
            steps = np.arange(start, start + len(new))
            d = min(max(0, int(delay)), len(new))
            out[:d] = prev.at(steps[:d])
            if d < len(new):
                g = prev.at(steps[d:d + 1])[0] - new[d]  # the plans' disagreement at s0
                gap = float(np.max(np.abs(g)))
                own = np.abs(np.diff(new, axis=0)).max() if len(new) > 1 else 0.0
                step = max(float(own), self.min_step)
                k = max(self.splice_steps, math.ceil(gap / step - 1e-9) - 1)
                k = min(k, len(new) - d)
                fade = 1.0 - (np.arange(k) + 1) / (k + 1)
                out[d:d + k] += fade[:, None] * g
                info.update(blend_steps=int(k), gap=round(gap, 6))
        self._plan = _Plan(start, out)
        return out, info

    def process(self, raw: np.ndarray, stamp: float, latest_tick: float | None = None,
                state: np.ndarray | None = None,
                delay: int | None = None) -> tuple[np.ndarray, dict]:
        """The chunk to publish for a raw prediction answering the observation at ``stamp``.
        ``latest_tick``: stamp of the newest tick heard when the prediction finished
        (async only; None or <= stamp means no time passed, as in lock-step); ``state``:
        the observed joints (async: the plan the first chunk is spliced onto); ``delay``:
        the splice delay in steps when it is known (charged latency), instead of
        ``latest_tick``'s estimate."""
        raw = np.asarray(raw, dtype=float)
        s = self.step_of(stamp)
        if self.async_splice and self._plan is None and state is not None:
            self._plan = _Plan(s, np.asarray(state, dtype=float).reshape(1, -1))
        chunk, info = raw, {}
        if self.temporal_ensemble:
            chunk = self.ensemble(raw, s + 1)
        if self.async_splice:
            if delay is None:
                delay = self.heard_delay(s, latest_tick)
            chunk, info = self.splice(chunk, s + 1, delay)
        if self.action_horizon:
            chunk = chunk[: self.action_horizon]
        return chunk, info

    def heard_delay(self, s: int, latest_tick: float | None) -> int:
        """Splice delay from the ticks heard while predicting (step 1 of the splice rule)."""
        if latest_tick is None:
            return 0
        delay = max(0, self.step_of(latest_tick) - s)
        return delay + 1 if delay else 0  # transport margin, only when time passed


# ---------------------------------------------------------------------- the node's hook


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 4)


class ChunkRunner:
    """predict -> validate -> schedule -> publish for the policy node, lock-step or async.

    ``publish(chunk, stamp)`` sends the chunk (the stamp is the observation's, echoed);
    ``status(kind, **fields)`` sends a policy status message. With ``async_inference`` the
    backend runs in one worker thread: an observation that arrives while it is busy waits
    (only the newest is kept) and the ROS executor keeps receiving ticks meanwhile.
    """

    def __init__(self, policy, scheduler: ChunkScheduler, publish: Callable, status: Callable,
                 log_error: Callable[[str], None] = print, async_inference: bool = False):
        self.policy = policy
        self.scheduler = scheduler
        self.publish = publish
        self.status = status
        self.log_error = log_error
        self.async_inference = bool(async_inference)
        self.action_dim: int | None = None  # the embodiment's; None: the contract's 14
        self.policy_lock = threading.RLock()  # predict and reset never overlap
        self.calls = 0
        self.latest_tick: float | None = None
        self.charged = None  # the episode's charged latency (begin's charged_latency_ms)
        self._episode = None
        self._cv = threading.Condition()
        self._pending = None
        self._closed = False
        self._worker = None
        if self.async_inference:
            self._worker = threading.Thread(target=self._work, name="policy-inference", daemon=True)
            self._worker.start()

    # ------------------------------------------------------------------ episode
    def begin_episode(self, episode, prepare: Callable[[], None], charged=None) -> None:
        """Run ``prepare`` (policy reset + instruction) with no prediction in flight;
        ``charged``: the episode's charged latency (ms per call, "measured" or None)."""
        with self._cv:
            self._pending = None
        with self.policy_lock:
            self._episode = episode
            self.calls = 0
            self.latest_tick = None
            self.charged = charged
            self.scheduler.reset()
            prepare()

    def note_tick(self, stamp_s: float) -> None:
        """A tick's joint state was heard (used by the async splice to measure delay)."""
        if self.latest_tick is None or stamp_s > self.latest_tick:
            self.latest_tick = stamp_s

    # ------------------------------------------------------------------ observations
    def on_observation(self, obs, stamp, episode, preprocess_s: float = 0.0) -> None:
        job = (obs, stamp, episode, preprocess_s, time.perf_counter())
        if not self.async_inference:
            self._run(*job)
            return
        with self._cv:
            self._pending = job  # newest wins
            self._cv.notify()

    def _work(self) -> None:
        while True:
            with self._cv:
                while self._pending is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                job, self._pending = self._pending, None
            try:
                self._run(*job)
            except Exception as exc:  # noqa: BLE001 - never let the worker die silently
                self.log_error(f"policy worker failed: {exc!r}")

    def _run(self, obs, stamp, episode, preprocess_s: float, queued_at: float) -> None:
        with self.policy_lock:
            if episode != self._episode:
                return  # a prediction for an episode that has ended
            t0 = time.perf_counter()
            try:
                if hasattr(self.policy, "last_timing"):
                    self.policy.last_timing = {}
                raw = self.policy.predict(obs)
                t1 = time.perf_counter()
                raw = C.validate_chunk(raw, self.action_dim)
                delay = self.charged_delay(preprocess_s + time.perf_counter() - queued_at)
                chunk, info = self.scheduler.process(
                    raw, obs.stamp, self.latest_tick if self.async_inference else None, obs.state,
                    delay)
            except Exception as exc:  # noqa: BLE001 - report to the evaluator, keep serving
                self.log_error(f"policy failed: {exc}")
                self.status(C.STATUS_ERROR, message=f"policy failed: {exc}")
                return
            t2 = time.perf_counter()
            self.publish(chunk, stamp)
            t3 = time.perf_counter()
            self.calls += 1
            self.status(C.STATUS_PREDICTED, call=self.calls, horizon=int(len(chunk)),
                        **self.timing(preprocess_s, t0 - queued_at, t1 - t0, t2 - t1, t3 - t2),
                        **({"splice": info} if info else {}))

    def charged_delay(self, elapsed_s: float) -> int | None:
        """The async splice's delay under charged latency: the ticks the sim charges this
        call (module doc, splice step 1); None when not async or no latency is charged."""
        if not self.async_inference or self.charged is None:
            return None
        if self.charged == C.CHARGED_MEASURED:
            latency_ms = elapsed_s * 1e3
        elif self.calls < len(self.charged):
            latency_ms = self.charged[self.calls]
        else:
            return None
        return C.charged_ticks(latency_ms, self.scheduler.dt)

    def timing(self, preprocess_s: float, queue_s: float, predict_s: float, post_s: float,
               publish_s: float) -> dict:
        """Status fields: ``inference_ms`` (the whole predict call, what the evaluator
        averages), ``publish_ms``, the breakdown ``latency_ms`` and ``overhead_ms`` (the
        node's own share of the call: everything but the backend's predict call)."""
        backend = dict(getattr(self.policy, "last_timing", None) or {})
        backend_other = sum(float(backend.get(k, 0.0)) for k in TIMING_KEYS if k != "inference")
        model_ms = float(backend.get("inference", max(0.0, predict_s * 1e3 - backend_other)))
        latency = {
            "preprocess": _ms(preprocess_s) + float(backend.get("preprocess", 0.0)),
            "inference": round(model_ms, 4),
            "postprocess": _ms(post_s) + float(backend.get("postprocess", 0.0)),
            "transport": _ms(publish_s) + float(backend.get("transport", 0.0)),
        }
        fields = {"inference_ms": _ms(predict_s), "publish_ms": _ms(publish_s),
                  "latency_ms": {k: round(v, 4) for k, v in latency.items()},
                  "overhead_ms": _ms(preprocess_s + post_s + publish_s)}
        if self.async_inference:
            fields["queue_ms"] = _ms(queue_s)
        return fields

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if self._worker is not None:
            self._worker.join(timeout=2.0)
