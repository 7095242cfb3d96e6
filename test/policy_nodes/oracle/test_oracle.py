"""The oracle solves Scene 1 in-process (same session, policy and scorer as the node graph)."""
import numpy as np
import pytest

from vla_bridge.evaluation.direct import run_episode_direct
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.oracle import OraclePolicy
from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
from vla_bridge.sim_nodes.session import SimSession
from vla_bridge.benchmarks.robofollow.tasks import episode_seed, load_suite

pytestmark = pytest.mark.graph  # see setup.cfg's markers

# one pickup per arm and one task per relation, across layouts and levels
TASKS = [
    "L0_pickup_yellow_block_1_left",
    "L0_pickup_yellow_block_3",
    "L0_place_yellow_block_1_behind_red_sphere",
    "L0_place_yellow_block_2_in_front_of_green_sphere",
    "L0_place_yellow_block_2_left_of_red_sphere",
    "L0_place_yellow_block_3_beside_red_cylinder",
    "L1_s11_pick_right_of_red",
]


@pytest.fixture(scope="module")
def session():
    s = SimSession(MujocoBackend())
    yield s
    s.backend.close()


@pytest.mark.parametrize("task_id", TASKS)
def test_oracle_scores_full_marks(session, task_id):
    task = load_suite().get(task_id)
    record, score = run_episode_direct(session, OraclePolicy(), task, episode_seed(task_id, 1),
                                       images=False)
    assert record.n == 501  # frame 0 + 10 calls x 50 actions
    reasons = [(s.name, s.reason) for s in score.stages]
    assert score.intent_score == pytest.approx(1.0) and score.exec_score == pytest.approx(1.0), reasons
    assert score.complete


def test_withheld_instruction_is_not_solved_by_holding(session):
    """Sanity of the scorer on this sim: a policy that does nothing scores zero."""
    from vla_bridge.policy_nodes.hold import HoldPolicy
    task = load_suite().get("L0_pickup_yellow_block_1_left")
    _, score = run_episode_direct(session, HoldPolicy(), task, episode_seed(task.id, 1), images=False)
    assert score.intent_score == 0 and score.exec_score == 0 and not score.complete


def test_oracle_needs_task_and_world():
    oracle = OraclePolicy()
    with pytest.raises(ValueError, match="privileged task"):
        oracle.set_instruction("pick up the block", None)
    oracle.set_instruction("x", load_suite().get("L0_pickup_yellow_block_3").to_dict())
    with pytest.raises(ValueError, match="world state"):
        oracle.predict(Observation(state=np.zeros(14)))


def test_same_seed_same_episode(session):
    task = load_suite().get("L0_place_yellow_block_1_behind_red_sphere")
    rec_a, score_a = run_episode_direct(session, OraclePolicy(), task, 1234, images=False)
    rec_b, score_b = run_episode_direct(session, OraclePolicy(), task, 1234, images=False)
    assert score_a.to_dict() == score_b.to_dict()
    assert all(np.array_equal(rec_a.pos[k], rec_b.pos[k]) for k in rec_a.pos)


def test_withheld_instruction_makes_the_oracle_guess_a_training_task(session):
    """Empty-language control: with the instruction withheld the oracle does not read the
    privileged task either; it performs one of the scene's training tasks, so it fails the
    asked task whenever its guess differs."""
    suite = load_suite()
    guesses = {}
    for task in suite.eval_tasks(scenes=["scene1"], levels=["L0"]):
        oracle = OraclePolicy()
        oracle.set_instruction("", task.to_dict())
        guesses[task.id] = oracle.task
        assert oracle.task.layout == task.layout
        assert oracle.task.id in {t.spec.id for t in suite.training_tasks("scene1")}
    wrong = [tid for tid, guess in guesses.items() if guess.id != tid]
    assert len(wrong) >= 8  # most guesses are another task
    task = suite.get(wrong[0])
    _, score = run_episode_direct(session, OraclePolicy(), task, episode_seed(task.id, 1),
                                  images=False, instruction="")
    _, informed = run_episode_direct(session, OraclePolicy(), task, episode_seed(task.id, 1),
                                     images=False)
    assert informed.intent_score == 1.0
    assert score.intent_score < 1.0
