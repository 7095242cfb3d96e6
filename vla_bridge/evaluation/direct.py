"""Run an episode in one process, without ROS: the same session, policy and scorer the node
graph uses. Used by the bridge-overhead benchmark and for quick checks."""
from __future__ import annotations

import time

from vla_bridge import contract
from vla_bridge.embodiment.episode_record import FrameRecorder
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec


def run_episode_direct(session, policy, task: TaskSpec, seed: int, budget=None,
                       instruction: str | None = None, images: bool = True, cue_objects=(),
                       charged=None, period: int | None = None):
    """Returns (EpisodeRecord, EpisodeScore). ``cue_objects``: scene cue cards in the reset
    (as the sim node adds them under cue_placement scene). ``charged``: charged latency as
    the sim node's begin message gives it (ms per call, or "measured": the predict call's
    wall time), ``period`` its observation period (session.SimSession.execute_charged)."""
    from vla_bridge.benchmarks.robofollow.scoring import score_episode
    session.begin(task.scene, task.layout, seed, budget, cue_objects=cue_objects, charged=charged,
                  task=task.to_dict())
    policy.reset()
    policy.set_instruction(task.instruction if instruction is None else instruction, task.to_dict())
    recorder = FrameRecorder()
    recorder.add(session.backend.world_state(), session.command)
    while not session.done:
        obs = session.observation(images=images, world=policy.needs_world_state)
        t0 = time.perf_counter()
        # the policy's answer enters the session here, validated once (as the sim node's edge)
        chunk = contract.validate_chunk(policy.predict(obs), session.backend.embodiment.action_dim)
        steps = (session.execute(chunk) if charged is None else session.execute_charged(
            chunk, measured_ms=(time.perf_counter() - t0) * 1e3, period=period))
        for _ in steps:
            recorder.add(session.backend.world_state(), session.command)
    record = recorder.record()
    return record, score_episode(task, record)
