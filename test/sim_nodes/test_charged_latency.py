"""Charged latency (`latency:=charged`): lock-step, but each policy call's latency is charged
in sim time. The session (fake backend, then MuJoCo + the oracle), the evaluator's latency
sources and replay (SuiteRun without DDS), the sim node in-process, the async splice and the
launch arguments (the graph run through the launcher: test/ros/test_graph_charged_latency.py,
apart from this module's in-process sim node, which would share its ROS domain)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.benchmarks.robofollow.tasks import Trial, load_suite, plan_trials
from vla_bridge.embodiment.episode_record import load_episode
from vla_bridge.embodiment.workcell import home_command
from vla_bridge.evaluation import charged_latency as CL
from vla_bridge.evaluation.direct import run_episode_direct
from vla_bridge.evaluation.episodes import EpisodeFailed
from vla_bridge.policy_nodes.chunking import ChunkRunner, ChunkScheduler
from vla_bridge.policy_nodes.oracle import OraclePolicy
from vla_bridge.sim_nodes.session import Budget, SimSession

from support.fake_backend import FakeBackend

TASK = "L0_pickup_yellow_block_3"


def chunk(tag: int, n: int = 10) -> np.ndarray:
    """n targets no limit rule touches: joint1 counts the action, joint2 names the chunk."""
    out = np.tile(home_command(), (n, 1))
    out[:, 0] += 0.01 * (np.arange(n) + 1)
    out[:, 1] += 0.02 * tag
    return out


def label(command: np.ndarray) -> tuple[int, int]:
    """(chunk tag, action index) of an executed target made by ``chunk``."""
    home = home_command()
    return (round((command[1] - home[1]) / 0.02), round((command[0] - home[0]) / 0.01) - 1)


def fake_session(charged, calls: int = 3) -> SimSession:
    session = SimSession(FakeBackend())
    session.begin("scene1", "layout", 0, Budget(calls, 10), charged=charged)
    return session


# ------------------------------------------------------------------ the session


def test_charged_ticks_round_up_to_whole_periods():
    assert [C.charged_ticks(ms, 0.06) for ms in (0, 1, 59.9, 60, 60.1, 100, 120, 300)] == \
        [0, 1, 1, 1, 2, 2, 2, 5]


def test_the_previous_chunk_runs_during_the_charged_ticks_then_holds_then_the_new_chunk():
    """Period 6: chunk 1 runs actions 0-5 and observes (6-9 queued). Chunk 2 is charged
    250 ms = 5 ticks: chunk 1's 6, 7, 8, 9, then a hold of 9; chunk 2's actions 0-4 are late
    and dropped, 5-9 run. Chunk 3 (the budget's last, 0 ms) runs to its end."""
    session = fake_session([0, 250, 0])
    executed = []
    for tag in (1, 2, 3):
        executed.append([label(c) for c in session.execute_charged(chunk(tag), period=6)])
    assert executed[0] == [(1, k) for k in range(6)]
    assert executed[1] == [(1, 6), (1, 7), (1, 8), (1, 9), (1, 9)] + [(2, k) for k in range(5, 10)]
    assert executed[2] == [(3, k) for k in range(10)]
    assert session.charged_ms == [0.0, 250.0, 0.0] and session.ticks == 26 and session.done
    applied = [label(a) for a in session.backend.applied]
    assert applied == [x for call in executed for x in call]  # what ran is what was recorded


def test_without_a_period_the_charged_ticks_hold_and_the_late_actions_are_dropped():
    session = fake_session([130, 130], calls=2)
    first = [label(c) for c in session.execute_charged(chunk(1))]
    assert first == [(0, -1)] * 3 + [(1, k) for k in range(3, 10)]  # holds home, drops 0-2
    second = [label(c) for c in session.execute_charged(chunk(2))]
    assert second == [(1, 9)] * 3 + [(2, k) for k in range(3, 10)]
    assert session.ticks == 20  # a call still takes as many ticks as its chunk has actions


def test_a_latency_longer_than_the_chunk_runs_none_of_it():
    # 17 ticks for a 10-action chunk (within the 2 x 10 ticks budget: the cap, see
    # test_charged_latency_bounds.py)
    session = fake_session([1000, 1000], calls=2)
    assert [label(c) for c in session.execute_charged(chunk(1))] == [(0, -1)] * 17


def test_measured_latency_is_what_the_caller_measured_rounded_as_recorded():
    session = fake_session(C.CHARGED_MEASURED, calls=1)
    ticks = list(session.execute_charged(chunk(1), measured_ms=61.23456))
    assert session.charged_ms == [61.235] and len(ticks) == 10
    with pytest.raises(ValueError, match="needs the call's measured_ms"):
        list(fake_session(C.CHARGED_MEASURED).execute_charged(chunk(1)))


@pytest.mark.parametrize("charged, message", [
    ([0, 10], "2 latencies for a budget of 3 policy calls"),
    ([0, -1, 0], "finite latencies >= 0 ms, got -1"),
    ([0, float("nan"), 0], "finite latencies >= 0 ms, got nan"),
    ([0, True, 0], "finite latencies >= 0 ms, got True"),
    ("fast", "a list of ms or 'measured', got 'fast'"),
])
def test_bad_latencies_are_refused_before_the_reset(charged, message):
    session = SimSession(FakeBackend())
    session.backend.t = 7.0
    with pytest.raises(ValueError, match=message):
        session.begin("scene1", "layout", 0, Budget(3, 10), charged=charged)
    assert session.backend.t == 7.0  # nothing was reset


@pytest.mark.parametrize("charged, ok", [
    (None, True), ("measured", True), ([0, 12.5], True), ([], True),
    ([-1], False), ([float("inf")], False), (["1"], False), ("fast", False), ({"a": 1}, False),
])
def test_the_begin_field_is_part_of_the_control_schema(charged, ok):
    begin = {"kind": "begin", "episode": "e", "charged_latency_ms": charged}
    if ok:
        assert C.check_control(begin) is begin
    else:
        with pytest.raises(ValueError, match="charged_latency_ms"):
            C.check_control(begin)


@pytest.fixture(scope="module")
def mujoco_session():
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    session = SimSession(MujocoBackend())
    yield session
    session.backend.close()


def oracle_episode(session, charged=None, period=None, seed=5):
    task = load_suite().get(TASK)
    record, score = run_episode_direct(session, OraclePolicy(), task, seed, images=False,
                                       charged=charged, period=period)
    return record, score.to_dict(), list(session.charged_ms)


@pytest.mark.graph
def test_latency_zero_is_plain_lock_step_tick_for_tick(mujoco_session):
    plain, plain_score, _ = oracle_episode(mujoco_session)
    charged, charged_score, ms = oracle_episode(mujoco_session, charged=[0] * 10)
    assert ms == [0.0] * 10 and charged.n == plain.n == 501
    np.testing.assert_array_equal(charged.commands, plain.commands)
    np.testing.assert_array_equal(charged.tcp_pos["left"], plain.tcp_pos["left"])
    assert charged_score == plain_score and plain_score["intent_score"] == 1.0


@pytest.mark.graph
def test_a_replay_of_the_recorded_latencies_is_the_same_episode(mujoco_session):
    spec = CL.parse_latency_ms("uniform:50:400")
    drawn = spec.latencies(5, 10)
    first, first_score, recorded = oracle_episode(mujoco_session, drawn, period=20)
    again, again_score, replayed = oracle_episode(mujoco_session, recorded, period=20)
    assert replayed == recorded == drawn
    np.testing.assert_array_equal(again.commands, first.commands)
    assert again_score == first_score
    plain, _, _ = oracle_episode(mujoco_session)
    assert first.n != plain.n  # period 20 and 50-400 ms do change the episode


# ------------------------------------------------------------------ where L comes from


def test_the_same_seed_draws_the_same_latencies():
    for text in ("uniform:50:150", "normal:100:20"):
        spec = CL.parse_latency_ms(text)
        assert spec.latencies(42, 10) == spec.latencies(42, 10)
        assert spec.latencies(42, 10) != spec.latencies(43, 10)
    uniform = CL.parse_latency_ms("uniform:50:150").latencies(1, 200)
    assert 50 <= min(uniform) and max(uniform) <= 150
    assert min(CL.parse_latency_ms("normal:50:100").latencies(1, 200)) == 0.0  # clipped
    assert CL.parse_latency_ms("100").latencies(1, 3) == [100.0] * 3


@pytest.mark.parametrize("text, message", [
    ("-5", "cannot be negative"), ("fast", "is not one of: measured, MS"),
    ("uniform:150:50", "0 <= LO <= HI"), ("normal:100", "is not one of"),
    ("normal:100:-1", "STD >= 0"), ("nan", "is not one of"), ("replay:", "run directory"),
])
def test_bad_latency_values_are_one_clear_error(text, message):
    with pytest.raises(ValueError, match=message):
        CL.parse_latency_ms(text)


def params(**changed) -> dict:
    from vla_bridge.evaluation.episodes import EngineConfig
    from vla_bridge.evaluation.robofollow_run import RoboFollowConfig
    from vla_bridge.ros.node_config import defaults
    return {**defaults(EngineConfig), **defaults(RoboFollowConfig), "latency": "charged",
            **changed}


def test_the_evaluators_settings_are_checked_at_start(tmp_path):
    assert CL.from_params(params(latency="none")) is None
    assert CL.from_params(params()).begin_fields(trial()) == {"charged_latency_ms": "measured"}
    for changed, message in [
        ({"latency": "sometimes"}, "latency must be one of \\['none', 'charged'\\]"),
        ({"latency": "none", "latency_ms": "100"}, "latency_ms:=100 needs latency:=charged"),
        ({"hardware": "fake_piper"}, "is a simulation mode; hardware fake_piper"),
        ({"latency_ms": f"replay:{tmp_path / 'nope'}"}, "no such run directory"),
        ({"latency_ms": f"replay:{tmp_path}"}, "holds no charged_latency_ms"),
    ]:
        with pytest.raises(ValueError, match=message):
            CL.from_params(params(**changed))


def trial(task: str = TASK, round_: int = 1) -> Trial:
    return plan_trials([load_suite().get(task)], round_, 42)[round_ - 1]


def test_a_replay_lacking_a_trial_or_calls_fails_that_episode(tmp_path):
    rows = [{"key": "scene1/L0_pickup_yellow_block_3/r1", "charged_latency_ms": [1.0] * 10},
            {"key": "scene1/L0_pickup_yellow_block_3/r2", "charged_latency_ms": [1.0] * 4}]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    latency = CL.from_params(params(latency_ms=f"replay:{tmp_path}"))
    assert latency.begin_fields(trial()) == {"charged_latency_ms": [1.0] * 10}
    with pytest.raises(EpisodeFailed, match="r2 recorded 4 calls, this budget has 10"):
        latency.begin_fields(trial(round_=2))
    with pytest.raises(EpisodeFailed, match="no row of scene1/L0_pickup_yellow_block_2/r1"):
        latency.begin_fields(trial("L0_pickup_yellow_block_2"))


# ------------------------------------------------------------------ the evaluator, no DDS


def charged_graph():
    """support.in_process_graph's sim and policy, the sim charging latency as the node does."""
    from support.in_process_graph import InProcessGraph

    class ChargedGraph(InProcessGraph):
        def answer_start(self):
            session = self.session
            while not session.done:
                chunk = self.policy.predict(session.observation(images=False))
                for _ in session.execute_charged(chunk, measured_ms=37.5, period=20):
                    self.record_frame()
                self.flush()
                self.sim_status(C.STATUS_CHUNK_DONE, tick=session.ticks, calls=session.calls)
            self.sim_status(C.STATUS_DONE, ticks=session.ticks, calls=session.calls,
                            charged_latency_ms=session.charged_ms, observation_period=20)
    return ChargedGraph


def suite_rows(session, tmp_path, name: str, latency_ms: str) -> list[dict]:
    from support.in_process_graph import make_run
    out = tmp_path / name
    run, graph, _, _ = make_run(session, out, graph_class=charged_graph(), rounds=2,
                                latency="charged", latency_ms=latency_ms)
    run.subscribers.append(CL.from_params(run.p))
    assert run.run() == 0
    begins = [m for m in graph.sent if m["kind"] == C.CONTROL_BEGIN]
    rows = [json.loads(line) for line in (out / "run" / "results.jsonl").read_text().splitlines()]
    for begin, row in zip(begins, rows):
        row["begin"] = begin["charged_latency_ms"]
        row["commands"] = load_episode(out / "run" / row["episode_file"])[0].commands
    return rows


@pytest.mark.graph
def test_rows_record_the_charged_latencies_and_a_replay_repeats_the_episodes(
        mujoco_session, tmp_path):
    measured = suite_rows(mujoco_session, tmp_path, "measured", "measured")
    assert [r["begin"] for r in measured] == ["measured", "measured"]
    assert all(r["charged_latency_ms"] == [37.5] * 10 and r["observation_period"] == 20
               for r in measured)
    drawn = suite_rows(mujoco_session, tmp_path, "drawn", "uniform:50:400")
    assert drawn[0]["charged_latency_ms"] != drawn[1]["charged_latency_ms"]  # per-seed draws
    assert [r["begin"] for r in drawn] == [r["charged_latency_ms"] for r in drawn]
    replayed = suite_rows(mujoco_session, tmp_path, "replay",
                          f"replay:{tmp_path / 'drawn' / 'run'}")
    keep = ("key", "seed", "charged_latency_ms", "frames", "intent_score", "exec_score",
            "complete", "stages")
    for a, b in zip(drawn, replayed):
        assert {k: a[k] for k in keep} == {k: b[k] for k in keep}
        np.testing.assert_array_equal(a["commands"], b["commands"])


def test_a_trial_the_replay_lacks_gets_a_failed_row_and_is_never_begun(
        mujoco_session, tmp_path):
    from support.in_process_graph import make_run
    source = tmp_path / "source"
    source.mkdir()
    row = {"key": "scene1/L0_pickup_yellow_block_3/r2", "charged_latency_ms": [0.0] * 10}
    (source / "results.jsonl").write_text(json.dumps(row) + "\n")
    run, graph, _, _ = make_run(mujoco_session, tmp_path, graph_class=charged_graph(),
                                rounds=2, latency="charged", latency_ms=f"replay:{source}")
    run.subscribers.append(CL.from_params(run.p))
    assert run.run() == 0
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text()
            .splitlines()]
    assert rows[0]["status"] == "failed" and "no row of scene1/" in rows[0]["error"]
    assert rows[1]["status"] == "ok" and rows[1]["charged_latency_ms"] == [0.0] * 10
    assert [m["kind"] for m in graph.sent] == ["begin", "start", "end"]  # round 2 only


# ------------------------------------------------------------------ the sim node, in-process


def test_the_sim_node_charges_and_reports_and_real_time_refuses(sim_node_in_process):
    from std_msgs.msg import String
    from vla_bridge.ros import messages
    node = sim_node_in_process
    task = load_suite().get(TASK).to_dict()

    def control(kind, episode, **extra):
        node.on_control(String(data=json.dumps({"kind": kind, "episode": episode, **extra})))

    def answer(chunk):
        ns = node.pending_stamp_ns
        node.on_chunk(messages.chunk_to_msg(chunk, C.ALOHA_PIPER.action_names, ns / 1e9, node.dt))

    node.lock_step = False
    control("begin", "rt", task=task, seed=3, max_policy_calls=2, max_actions_per_call=5,
            charged_latency_ms=[0, 0])
    assert node.sent[-1]["kind"] == C.STATUS_ERROR and "lock_step:=true" in node.sent[-1]["message"]
    node.lock_step = True
    control("begin", "ch", task=task, seed=3, max_policy_calls=2, max_actions_per_call=5,
            charged_latency_ms=[0, 130])
    control("start", "ch")
    start = node.session.command.copy()
    answer(np.tile(start, (5, 1)))
    assert node.session.ticks == 5
    moved = np.tile(start, (5, 1))
    moved[:, 0] += 0.01 * (np.arange(5) + 1)
    answer(moved)
    done = node.sent[-1]
    assert done["kind"] == C.STATUS_DONE and done["ticks"] == 10
    assert done["charged_latency_ms"] == [0.0, 130.0] and done["observation_period"] == 0
    assert C.check_status(done, "sim") is done
    assert node.session.command[0] == pytest.approx(moved[4, 0])  # actions 3, 4 ran last


# ------------------------------------------------------------------ the policy's async splice


class Straight:
    """A policy whose chunks step joint1 by 0.01 per action from its observed value."""
    needs_world_state = False

    def predict(self, obs):
        return chunk(0, 20) - home_command() + obs.state


def test_the_async_splice_is_told_the_charged_delay():
    from support.graph_runs import wait_until
    from vla_bridge.embodiment.world import Observation
    published, statuses = [], []
    runner = ChunkRunner(Straight(), ChunkScheduler(0.06, async_splice=True),
                         lambda c, s: published.append(c), lambda k, **f: statuses.append(f),
                         async_inference=True)
    try:
        runner.begin_episode("e", lambda: None, charged=[0.0, 250.0])
        for n, stamp in enumerate((0.06, 0.66), 1):
            state = home_command() + (0.3 if n == 2 else 0.0)  # the second one disagrees
            runner.on_observation(Observation(state, {}, stamp), stamp, "e")
            assert wait_until(lambda: len(statuses) == n, timeout=10)
    finally:
        runner.close()
    assert [s["splice"]["delay_steps"] for s in statuses] == [0, 5]  # 250 ms: 5 ticks
    first, second = published  # answers to steps 1 and 11: the second starts at step 12
    np.testing.assert_array_equal(second[:5], first[10:15])  # the old plan, charged ticks
    assert statuses[1]["splice"]["blend_steps"] >= 8  # then the fade from the old plan
    fresh = Straight().predict(Observation(home_command() + 0.3, {}, 0.66))
    assert np.abs(second[5] - first[15]).max() < np.abs(fresh[5] - first[15]).max()


# ------------------------------------------------------------------ through the launcher


def test_launch_arguments_reach_the_evaluator_and_the_sim():
    from vla_bridge.ros import launcher
    from vla_bridge.ros.launch_args import ROBOFOLLOW_SIM
    given, _ = launcher.parse_command_line(ROBOFOLLOW_SIM, [
        "--latency", "charged", "--latency_ms", "uniform:50:150", "observation_period:=20"])
    overrides = launcher.parameter_overrides(ROBOFOLLOW_SIM, given)
    assert overrides["evaluator_node"] == {"latency": "charged", "latency_ms": "uniform:50:150",
                                           "observation_period": 20}  # provenance
    assert overrides["sim_node"] == {"observation_period": 20}
