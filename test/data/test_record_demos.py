"""`vla-bridge record-demos` on fake hardware, end to end: the fake leaders play the oracle's
plan of a RoboFollow task on the followers' virtual CAN buses, the linked fake followers obey
them, the PiPER node (teleop) publishes the leaders' commands it reads through piper_sdk, the
recorder writes the bags, the console is driven by scripted keys (a silent leader, an unknown
task, start/save, start/redo/save, start/discard, Ctrl-C mid-episode), and the real export
turns the run into a LeRobot dataset whose actions are the leaders' commanded targets."""
from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest

from vla_bridge import contract as C

TASK = "L0_pickup_yellow_block_3"
CAN_QUANTUM_RAD = np.radians(0.001)  # JointCtrl carries 0.001 deg
SECOND_INSTRUCTION = "Lift the yellow block with your right arm."


def scripted(keys, before=None):
    """read(prompt) for DemoSession.run: the keys in order (an exception class is raised),
    `before[i]()` run just before key i is given; EOFError once they are used up."""
    keys, before, given = list(keys), dict(before or {}), [0]

    def read(prompt: str) -> str:
        i = given[0]
        given[0] += 1
        if i in before:
            before[i]()
        if i >= len(keys):
            raise EOFError
        key = keys[i]
        if isinstance(key, type) and issubclass(key, BaseException):
            raise key()
        return key
    return read


#: the values one CAN frame carries (joint_ctrl_12, _34, _56, gripper_ctrl): piper_sdk keeps
#: the newest of each frame, so a read between two of a tick's frames pairs one tick's joints
#: 1-2 with the last tick's 3-6 (a CI run on a slow host did: 0.0084 rad off every whole target)
CAN_FRAMES = ((0, 1), (2, 3), (4, 5), (6,))


def carried_match(actions: np.ndarray, sent: np.ndarray) -> np.ndarray:
    """Per action row (one arm's 7 values): for each CAN frame's values, the distance to the
    nearest values of that frame the leader put on the bus; the largest of them."""
    return np.array([max(np.abs(sent[:, list(f)] - row[list(f)]).max(axis=1).min()
                         for f in CAN_FRAMES) for row in actions])


def test_teleop_demos_record_and_export_to_lerobot(tmp_path):
    pytest.importorskip("lerobot")
    from support.teleop_graph import TeleopGraph
    from vla_bridge.data import lerobot_export as X
    from vla_bridge.data.teleop import DemoSession, DemoSettings, resolve_task

    run = tmp_path / "demos"
    task = resolve_task(TASK)
    graph = TeleopGraph(run, task)
    lines: list[str] = []
    try:
        fakes, leaders = graph.piper.fakes, graph.leaders
        assert set(leaders) == {"left", "right"}
        session = DemoSession(graph.demo, DemoSettings(output=run, fake_hardware=True,
                                                       hardware="fake_piper", leader_wait_s=1.0),
                              task, echo=lines.append)

        def silence(on: bool):
            def act():
                for leader in leaders.values():
                    leader.silent = on
                if on:
                    time.sleep(1.7)  # the node's leader_timeout_s (0.5 s) + leader_wait_s
                else:
                    graph.wait_until(lambda: graph.demo.commands_age() < 0.2, "the leaders")
            return act

        chunk_sent = []

        def send_a_chunk():  # a policy's chunk in teleop: it must never reach an arm
            from trajectory_msgs.msg import JointTrajectory

            from vla_bridge.ros import messages
            pub = graph.standin.create_publisher(JointTrajectory, C.TOPIC_ACTION_CHUNK,
                                                 messages.qos_profile(C.QOS_COMMAND))
            graph.wait_until(lambda: pub.get_subscription_count() > 0, "the chunk subscriber")
            far = np.tile(graph.demo.state() + 0.3, (5, 1))
            pub.publish(messages.chunk_to_msg(far, C.ALOHA_PIPER.action_names, time.time(), 0.06))
            chunk_sent.append(time.time())

        keys = ["s",                       # 0: the leaders are silent: nothing begins
                "t L0_no_such_task",       # 1: unknown task: one line
                "s", "w", "k",             # 2-4: round 1 saved
                f"i {SECOND_INSTRUCTION}",  # 5
                "s", "r", "w", "k",        # 6-9: round 2 redone, then saved
                "s", "d",                  # 10-11: round 3 discarded
                "s", KeyboardInterrupt]    # 12-13: round 3 again, Ctrl-C mid-episode
        code = session.run(scripted(keys, before={0: silence(True), 1: silence(False),
                                                 8: send_a_chunk}))
        assert code == 130
        # what the followers got, then the leaders' targets as they went on the bus, per arm
        # (7 values each): in this order, a frame sent in between is in both
        frames = {arm: fake.frames() for arm, fake in fakes.items()}
        sent = {arm: np.array([v for _, v in leader.sent()]) for arm, leader in leaders.items()}
    finally:
        graph.close()
    text = "\n".join(lines)

    # one line per bad input, and nothing begun for them
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 2, text
    assert "no command from the leader arm(s)" in errors[0] and "linked" in errors[0]
    assert "L0_no_such_task" in errors[1]
    assert "interrupted (Ctrl-C): the episode in progress (scene1/" in text

    # two saved episodes, rounds 1 and 2; the discarded ones leave neither bag nor row
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["round"], r["source"]) for r in rows] == [(TASK, 1, "teleop"),
                                                                       (TASK, 2, "teleop")]
    assert [r["instruction"] for r in rows] == [task.instruction, SECOND_INSTRUCTION]
    bags = sorted(p.name for p in (run / "bags").iterdir())
    assert bags == [f"scene1__{TASK}__r1", f"scene1__{TASK}__r2"], bags
    assert all(r["bag"] == f"bags/{name}" for r, name in zip(rows, bags))

    # nothing but the leaders commanded the followers: no enable, no stop, no mode of the
    # host's, and every joint target a follower got is one its leader sent (the chunk sent
    # mid-episode was not executed)
    assert chunk_sent
    for arm, got in frames.items():
        assert not [f for f in got if f.name in ("motor_enable", "motion_ctrl_1",
                                                  "master_slave_config")], arm
        joint_frames = [f for f in got if f.name == "joint_ctrl_12"]
        assert joint_frames
        leader_12 = {tuple(np.round(np.degrees(v[:2]) * 1000).astype(int)) for v in sent[arm]}
        assert {(f.fields["joint_1"], f.fields["joint_2"]) for f in joint_frames} <= leader_12

    # the real export: 2 episodes, the action the leaders' commands, the state following
    root = tmp_path / "dataset"
    summary = X.export_lerobot([run], root, fps=10, video=False, echo=lambda _: None)
    assert summary["episodes"] == 2
    os.environ["HF_HUB_OFFLINE"] = "1"
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    dataset = LeRobotDataset("local/vla_bridge", root=root)
    assert dataset.num_episodes == 2
    episodes = np.array([int(dataset[i]["episode_index"]) for i in range(len(dataset))])
    actions = np.stack([dataset[i][X.ACTION].numpy() for i in range(len(dataset))])
    states = np.stack([dataset[i][X.STATE].numpy() for i in range(len(dataset))])
    tasks = [dataset[i]["task"] for i in range(len(dataset))]
    assert tasks[0] == task.instruction and tasks[-1] == SECOND_INSTRUCTION
    for i, arm in enumerate(C.ARMS):
        cols = slice(i * C.JOINTS_PER_ARM, (i + 1) * C.JOINTS_PER_ARM)
        assert carried_match(actions[:, cols], sent[arm]).max() < CAN_QUANTUM_RAD
    arm_cols = slice(C.JOINTS_PER_ARM, 2 * C.JOINTS_PER_ARM) if task.arm == "right" \
        else slice(0, C.JOINTS_PER_ARM)
    for k in range(2):
        a, s = actions[episodes == k][:, arm_cols], states[episodes == k][:, arm_cols]
        assert len(a) > 40  # the whole ~5.6 s plan at 10 fps
        assert np.ptp(a[:, :6], axis=0).max() > 0.3  # the leader moved the arm...
        assert a[:, 6].min() < 0.2 and a[0, 6] > 0.9  # ...and closed the open gripper
        assert np.abs(s[:, :6] - a[:, :6]).mean() < 0.05  # the follower followed
        assert np.abs(s[-1] - a[-1]).max() < 0.02  # and arrived


class _BrokenGraph:
    """A demo graph that refuses every start (what a loaded machine's slow graph looked like:
    the start failed, the save found no episode, and the scripted run still exited 0)."""

    def problem(self) -> str:
        return "the PiPER node is not up"


@pytest.mark.parametrize("strict, code", [(True, 1), (False, 0)])
def test_scripted_keys_that_fail_give_exit_status_1(tmp_path, strict, code):
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    from vla_bridge.data.teleop import DemoSession, DemoSettings

    lines = []
    session = DemoSession(_BrokenGraph(), DemoSettings(output=tmp_path / "run"),
                          load_suite().get(TASK), echo=lines.append)
    assert session.run(scripted(["s", "k", "q"]), strict=strict) == code
    assert session.errors == 2 and not (tmp_path / "run" / "results.jsonl").exists()
    assert sum("error:" in line for line in lines) == 2
    assert any("2 scripted input(s) failed" in line for line in lines) == strict
