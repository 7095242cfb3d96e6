"""Evaluator node behaviour that needs no running graph (the node is built in-process)."""
from __future__ import annotations

import json

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from vla_bridge import evaluator_node as E  # noqa: E402
from vla_bridge.evaluation import RunDirectory  # noqa: E402
from vla_bridge.recording import EpisodeRecord, load_episode  # noqa: E402
from vla_bridge.tasks import load_suite, plan_trials  # noqa: E402


@pytest.fixture
def evaluator():
    context = rclpy.Context()
    rclpy.init(context=context)
    with pytest.MonkeyPatch.context() as mp:  # the node's context: ours, not the global one
        mp.setattr(E.Node, "__init__", _in_context(E.Node.__init__, context))
        node = E.EvaluatorNode()
    try:
        yield node
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)


def _in_context(init, context):
    def wrapped(self, *args, **kwargs):
        kwargs.setdefault("context", context)
        init(self, *args, **kwargs)
    return wrapped


def _record(n: int = 3) -> EpisodeRecord:
    eye = np.tile(np.eye(3), (n, 1, 1))
    return EpisodeRecord(tcp_pos={"left": np.zeros((n, 3)), "right": np.zeros((n, 3))},
                         tcp_rot={"left": eye, "right": eye},
                         grip={"left": np.ones(n), "right": np.ones(n)},
                         pos={"yellow_block_1": np.zeros((n, 3))},
                         quat={"yellow_block_1": np.tile([1.0, 0, 0, 0], (n, 1))},
                         commands=np.zeros((n, 14)))


def test_a_scorer_error_fails_the_episode_not_the_run(evaluator, tmp_path, monkeypatch):
    def broken_scorer(task, record):
        raise KeyError("red_sphere")  # e.g. a task object missing from the record

    monkeypatch.setattr(E, "score_episode", broken_scorer)
    trial = plan_trials([load_suite().get("L0_pickup_yellow_block_1_left")], 1, 42)[0]
    run_dir = RunDirectory(tmp_path / "run")
    run_dir.start({}, [trial], resume=False)
    row = evaluator.scored_row(run_dir, trial, _record(), calls=2, instruction="pick", t0=0.0)
    assert row["status"] == "failed" and "scoring failed" in row["error"] and "red_sphere" in row["error"]
    assert row["complete"] is False and row["frames"] == 3 and row["policy_calls"] == 2
    # nothing lost: the frames are on disk for re-scoring
    record, meta = load_episode(tmp_path / "run" / row["episode_file"])
    assert record.n == 3 and meta["task_id"] == trial.task.id
    json.dumps(row)  # a valid results.jsonl line
