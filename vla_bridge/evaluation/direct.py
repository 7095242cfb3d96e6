"""Run an episode in one process, without ROS: the same session, policy and scorer the node
graph uses. Used by the bridge-overhead benchmark and for quick checks."""
from __future__ import annotations

from vla_bridge.embodiment.episode_record import FrameRecorder
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec


def run_episode_direct(session, policy, task: TaskSpec, seed: int, budget=None,
                       instruction: str | None = None, images: bool = True, cue_objects=()):
    """Returns (EpisodeRecord, EpisodeScore). ``cue_objects``: scene cue cards in the reset
    (as the sim node adds them under cue_placement scene)."""
    from vla_bridge.benchmarks.robofollow.scoring import score_episode
    session.begin(task.scene, task.layout, seed, budget, cue_objects=cue_objects)
    policy.reset()
    policy.set_instruction(task.instruction if instruction is None else instruction, task.to_dict())
    recorder = FrameRecorder()
    recorder.add(session.backend.world_state(), session.command)
    while not session.done:
        obs = session.observation(images=images, world=policy.needs_world_state)
        chunk = policy.predict(obs)
        for _ in session.execute(chunk):
            recorder.add(session.backend.world_state(), session.command)
    record = recorder.record()
    return record, score_episode(task, record)
