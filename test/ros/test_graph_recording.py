"""record:=true through the launched graph: one complete MCAP bag per episode in the run
directory, named in its row, and the same scores as without recording."""
from __future__ import annotations

import json

import numpy as np
import pytest

from support import graph_runs
from support.graph_runs import results
from vla_bridge import contract as C
from vla_bridge.data.bags import read_counts

pytestmark = pytest.mark.graph  # see setup.cfg's markers

TASK = "L0_place_yellow_block_1_behind_red_sphere"
CALLS = 4  # a short episode: 4 policy calls of 50 actions


def _run(out, *extra):
    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--rounds", "2",
                             "--max_policy_calls", str(CALLS), "--output", str(out), *extra,
                             timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return results(out)


def test_recording_writes_every_episodes_bag_and_changes_no_score(tmp_path):
    plain = _run(tmp_path / "plain")
    recorded = _run(tmp_path / "recorded", "--record", "true")
    dense = _run(tmp_path / "dense", "--record", "true", "--record_fps", "10")
    keep = ("intent_score", "exec_score", "complete", "stages", "flags", "seed", "frames",
            "policy_calls")
    assert [{k: r[k] for k in keep} for r in plain] == [{k: r[k] for k in keep} for r in recorded]
    assert [{k: r[k] for k in keep} for r in plain] == [{k: r[k] for k in keep} for r in dense]
    assert not (tmp_path / "plain" / "bags").exists()
    frames = round(CALLS * 50 * 0.06 * 10) + 1  # 10 fps of sim time, frame 0 included
    for row in dense:
        counts = read_counts(tmp_path / "dense" / row["bag"])
        assert counts[C.TOPIC_RECORD_JOINT_STATES] == counts[C.TOPIC_RECORD_JOINT_COMMANDS] == frames
        assert all(counts[C.record_image_topic(c)] == frames for c in C.ALOHA_PIPER.camera_names)

    ticks = CALLS * 50
    for row in recorded:
        counts = read_counts(tmp_path / "recorded" / row["bag"])
        assert row["bag_messages"] == sum(counts.values())
        assert counts[C.TOPIC_EPISODE_CONTROL] == 3  # begin, start, end
        assert counts[C.TOPIC_INSTRUCTION] == 1
        assert counts[C.TOPIC_ACTION_CHUNK] == CALLS
        assert counts[C.TOPIC_CLOCK] == counts[C.TOPIC_JOINT_COMMANDS] == ticks + 1  # + reset tick
        assert counts[C.TOPIC_JOINT_STATES] == ticks + 1 + CALLS  # + one per observation
        for camera in C.ALOHA_PIPER.camera_names:
            assert counts[C.image_topic(camera)] == CALLS  # one image per observation
        assert C.cued_image_topic(C.ALOHA_PIPER.camera_names[0]) not in counts  # no cue protocol: no overlay
        _check_log_times(tmp_path / "recorded" / row["bag"])
    run_dir = tmp_path / "recorded"
    assert sorted(p.name for p in (run_dir / "bags").iterdir() if not p.name.startswith(".")) \
        == [f"scene1__{TASK}__r1", f"scene1__{TASK}__r2"]


def _check_log_times(bag):
    """Per topic, the log times (the recorder's receive times, taken in batches) follow the
    order the messages were sent in: /clock's sim time never goes back in log-time order, and
    every log time lies within the episode's wall-clock span."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    with open(bag / f"{bag.name}.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        clock = [(m.log_time, msg.clock.sec * 10**9 + msg.clock.nanosec)
                 for _, _, m, msg in reader.iter_decoded_messages(topics=[C.TOPIC_CLOCK],
                                                                  log_time_order=True)]
    assert len(clock) > 100
    sim_ns = [c for _, c in clock]
    assert sim_ns == sorted(sim_ns) and len(set(sim_ns)) == len(sim_ns)
    span_s = (clock[-1][0] - clock[0][0]) / 1e9
    assert 0 < span_s < 60


def test_a_recorded_camera_image_decodes_to_a_real_render(tmp_path):
    """The bag's first cam_high image decodes (mcap reader) to a real 320x240 render."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    out = tmp_path / "run"
    proc = graph_runs.launch("--tasks", TASK, "--levels", "", "--max_policy_calls", "1",
                             "--output", str(out), "--record", "true", timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = results(out)
    bag = out / row["bag"]
    with open(bag / f"{bag.name}.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        msg = next(m for _, ch, _, m in reader.iter_decoded_messages(
            topics=[C.image_topic("cam_high")]))
    image = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)
    assert image.shape == (C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3) and image.std() > 10
    meta = json.loads((out / "run.json").read_text())
    assert meta["arguments"]["record"] is True
