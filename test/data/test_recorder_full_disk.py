"""The recorder on a full disk (issue #29 point 8): at every fill level (full before the
episode, during it, when its chunks are flushed at the end, when metadata.yaml is written)
it logs the write error in one line with its errno, removes the broken bag, answers `failed`
(which the evaluator node accepts), stays up and records nothing more.

The disk: support.full_disk, a byte quota at the system-call layer (write() writes what fits,
then fails with ENOSPC, as a full file system does), below Python's buffering and rosbags'
MCAP writer, which run unchanged. No root, no tmpfs needed."""
from __future__ import annotations

import pytest

from support import full_disk as F
from support.recorder_graph import RecorderGraph, images
from vla_bridge import contract as C
from vla_bridge.data import bags as B

rclpy = pytest.importorskip("rclpy")


@pytest.fixture
def full_disk(monkeypatch):
    return F.full_disk(monkeypatch)


# fill level -> (free bytes, which files count, images in the episode, where it fails)
LEVELS = {
    "full before the episode": (0, "*", 1, "begin"),
    "fills during the episode": (300_000, "*", 6, "write"),  # > 1 MiB: a chunk is flushed
    "fills when the bag is closed": (100_000, "*", 1, "end"),  # one chunk, flushed at close
    "fills at metadata.yaml": (0, "metadata.yaml*", 1, "end"),
}


@pytest.mark.parametrize("level", list(LEVELS))
def test_a_full_disk_fails_the_bag_in_one_line_and_the_node_lives_on(tmp_path, full_disk,
                                                                   level):
    free, names, n_images, where = LEVELS[level]
    graph = RecorderGraph(tmp_path)
    try:
        disk = full_disk(tmp_path / B.BAGS_DIR, free, names)
        episode = "scene1/S1_L0_001/r1@1"
        opened = graph.open_bag(episode)
        if where == "begin":
            answer = opened
        else:
            assert opened["kind"] == C.RECORDER_RECORDING
            graph.send_data(images(n_images), ticks=10)
            if where == "write":  # the failure is heard before the episode ends
                answer = graph.answer(episode, ("failed",))
            else:  # nothing reached the disk yet
                graph.spin_for(0.3)
                assert [s["kind"] for s in graph.status] == [C.RECORDER_RECORDING]
            graph.sim_done(episode)
            graph.control(C.CONTROL_END, episode)
            answer = graph.answer(episode)
        graph.spin_for(0.3)
        assert disk.refused >= 1  # the disk really refused a write

        # one line, with the errno; a status the evaluator node takes
        assert answer["kind"] == "failed", answer
        assert C.check_status(answer, "recorder")
        assert "No space left on device (errno 28 ENOSPC)" in answer["reason"]
        errors = graph.log.lines["error"]
        assert len(errors) == 1 and "No space left on device (errno 28 ENOSPC)" in errors[0]
        assert [s["kind"] for s in graph.status if s["episode"] == episode][-1] == "failed"
        # the broken bag is gone, partial files and all (its space is free again)
        root = tmp_path / B.BAGS_DIR
        assert not root.exists() or not any(p for p in root.rglob("*") if p.is_file())
        assert not (root / B.PARTIAL_DIR).exists()

        # alive: the next begin is answered (failed: it records nothing more)
        again = graph.open_bag("scene1/S1_L0_002/r1@2")
        assert again["kind"] == "failed" and again["reason"] == answer["reason"]
        assert not (root / "scene1__S1_L0_002__r1").exists()
        assert len(graph.log.lines["error"]) == 1
    finally:
        graph.close()


def test_the_quota_disk_lets_a_bag_through_when_there_is_room(tmp_path, full_disk):
    """The harness itself: with room to spare the same episode is recorded complete."""
    graph = RecorderGraph(tmp_path)
    try:
        disk = full_disk(tmp_path / B.BAGS_DIR, 50_000_000)
        answer = graph.episode("scene1/S1_L0_001/r1@1", images(6), ticks=10)
        assert answer["kind"] == C.RECORDER_RECORDED and disk.refused == 0
        assert disk.free < 50_000_000 - 6 * 230_000  # the bag's bytes went through the quota
        assert B.read_counts(answer["bag"])[C.image_topic("cam_high")] == 6
    finally:
        graph.close()
