"""The LeRobot exporter reads the embodiment it exports (issue #23 point 2): the state and
action names, the cameras and the robot type come from the run's `contract.Embodiment`
(run.json's ``embodiment``; ALOHA_PIPER when it names none), not from ALOHA's module constants.

Bags are written here without a graph (`bags.EpisodeBags`, the dense record topics) and read
without LeRobot, so this stays in the quick loop."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.data import bags as B
from vla_bridge.data import lerobot_export as X

FRAMES = 3  # at 10 fps


def write_bag(run: Path, embodiment: C.Embodiment) -> Path:
    """One episode's dense frames as `embodiment`'s sim records them: its state names on the
    record joint states, its action names on the record commands, its cameras at its size."""
    store = B.typestore()
    T, H = store.types["builtin_interfaces/msg/Time"], store.types["std_msgs/msg/Header"]
    JS, IM = store.types["sensor_msgs/msg/JointState"], store.types["sensor_msgs/msg/Image"]

    def header(t, frame=""):
        return H(stamp=T(sec=int(t), nanosec=int(round((t % 1) * 1e9))), frame_id=frame)

    def joints(names, q, t):
        return bytes(store.serialize_cdr(JS(header=header(t), name=list(names),
                                            position=np.asarray(q, float), velocity=np.zeros(0),
                                            effort=np.zeros(0)), JS.__msgtype__))

    def image(pixels, t, cam):
        h, w, _ = pixels.shape
        return bytes(store.serialize_cdr(IM(header=header(t, cam), height=h, width=w,
                                            encoding=C.IMAGE_ENCODING, is_bigendian=0,
                                            step=3 * w, data=pixels.reshape(-1)), IM.__msgtype__))

    width, height = embodiment.image_size
    bags = B.EpisodeBags(run, C.recorded_topics())
    bags.begin("scene1/L0_task/r1@0")
    for k in range(FRAMES):
        t = k / 10
        bags.write(C.TOPIC_RECORD_JOINT_STATES, k,
                   joints(embodiment.state_names, np.arange(embodiment.state_dim) + k, t))
        bags.write(C.TOPIC_RECORD_JOINT_COMMANDS, k,
                   joints(embodiment.action_names, -np.arange(embodiment.action_dim) - k, t))
        for i, cam in enumerate(embodiment.camera_names):
            pixels = np.full((height, width, 3), 10 * i + k, np.uint8)
            bags.write(C.record_image_topic(cam), k, image(pixels, t, cam))
    path, _ = bags.end("scene1/L0_task/r1@0")
    return path


@pytest.mark.parametrize("embodiment", [C.ALOHA_PIPER, C.LIBERO_PANDA], ids=lambda e: e.name)
def test_an_episode_is_read_as_its_embodiment(tmp_path, embodiment):
    frames = X.read_episode(write_bag(tmp_path, embodiment), embodiment=embodiment)
    width, height = embodiment.image_size
    assert frames.embodiment == embodiment and frames.n == FRAMES and frames.fps == 10
    assert frames.states.shape == (FRAMES, embodiment.state_dim)
    assert frames.actions.shape == (FRAMES, embodiment.action_dim)
    assert np.array_equal(frames.states[2], np.arange(embodiment.state_dim) + 2)
    assert np.array_equal(frames.actions[1], -np.arange(embodiment.action_dim) - 1)
    assert sorted(frames.images) == sorted(embodiment.camera_names)
    for i, cam in enumerate(embodiment.camera_names):
        assert frames.images[cam].shape == (FRAMES, height, width, 3)
        assert int(frames.images[cam][1, 0, 0, 0]) == 10 * i + 1


def test_another_embodiments_bag_lacks_the_names_and_says_which(tmp_path):
    bag = write_bag(tmp_path, C.ALOHA_PIPER)
    with pytest.raises(X.ExportError, match=r"joint state lacks \['eef_x', 'eef_y'"):
        X.read_episode(bag, embodiment=C.LIBERO_PANDA)
    with pytest.raises(X.ExportError, match="fewer than 2 complete dense frames"):
        X.read_episode(write_bag(tmp_path / "panda", C.LIBERO_PANDA))  # as ALOHA: no right wrist


def test_the_features_are_the_embodiments():
    aloha = X.features((240, 320, 3), video=False)
    assert aloha == X.features((240, 320, 3), False, C.ALOHA_PIPER)
    assert aloha[X.STATE]["names"] == aloha[X.ACTION]["names"] == list(C.ALOHA_PIPER.action_names)
    assert sorted(aloha) == sorted([X.STATE, X.ACTION, *(X.IMAGE_KEY.format(c) for c in C.ALOHA_PIPER.camera_names)])
    panda = X.features((256, 256, 3), True, C.LIBERO_PANDA)
    assert panda[X.STATE] == {"dtype": "float32", "shape": (8,),
                              "names": list(C.LIBERO_PANDA.state_names)}
    assert panda[X.ACTION]["names"] == list(C.LIBERO_PANDA.action_names)
    assert sorted(k for k in panda if k.startswith("observation.images.")) == [
        "observation.images.cam_high", "observation.images.cam_left_wrist"]
    assert X.robot_type(C.ALOHA_PIPER) == "piper_aloha"
    assert X.robot_type(C.LIBERO_PANDA) == "libero_panda"


def test_the_run_json_names_the_embodiment(tmp_path):
    assert X.run_embodiment(tmp_path) is C.ALOHA_PIPER  # no run.json: a run from before
    (tmp_path / "run.json").write_text(json.dumps({"embodiment": "libero_panda"}))
    assert X.run_embodiment(tmp_path) is C.LIBERO_PANDA
    (tmp_path / "run.json").write_text(json.dumps({"embodiment": "a_crane"}))
    with pytest.raises(X.ExportError, match="unknown embodiment 'a_crane'"):
        X.run_embodiment(tmp_path)
    assert X.dense_topics(C.LIBERO_PANDA) == {
        X.STATE: C.TOPIC_RECORD_JOINT_STATES, X.ACTION: C.TOPIC_RECORD_JOINT_COMMANDS,
        "observation.images.cam_high": C.record_image_topic("cam_high"),
        "observation.images.cam_left_wrist": C.record_image_topic("cam_left_wrist")}
