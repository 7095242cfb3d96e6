"""record:=true when the recorder cannot keep a bag (issue #29 points 3 and 8), in the
evaluator's engine (SuiteRun with bag_watch) against the in-process graph plus a scripted
recorder: the row says why it names no bag (``bag_error``), and a recorder that cannot write
(a full disk) stops the run with its reason, so run.json is never left "running"."""
from __future__ import annotations

import pytest

from support.in_process_graph import InProcessGraph, kinds, make_run, results, run_json
from vla_bridge import contract as C
from vla_bridge.evaluation import bag_watch  # noqa: F401  (the recorder's answers)

FULL = ("cannot write the bag of episode 'x': No space left on device (errno 28 ENOSPC)")


class Recording(InProcessGraph):
    """A recorder on the graph: it answers each begin with ``recording`` and each end with
    ``on_end(episode)`` (a status, or None: silent); ``on_start`` may answer mid-episode."""

    def __init__(self, session, clock):
        super().__init__(session, clock)
        self.publishers[C.TOPIC_RECORDER_STATUS] = 1
        self.subscribers[C.TOPIC_EPISODE_CONTROL] = 3
        self.bagged: dict[str, str] = {}  # episode -> its bag's path

    def recorder(self, kind: str, episode: str, **fields) -> None:
        status = C.check_status({"kind": kind, "episode": episode, **fields}, "recorder")
        self.inbox.append((lambda s: self.run.on_recorder_status(s), status))

    def answer_begin(self, ctl):
        if ctl["episode"] != self.episode:
            self.begin_recorder(ctl["episode"])
        super().answer_begin(ctl)

    def begin_recorder(self, episode):
        self.recorder(C.RECORDER_RECORDING, episode)

    def answer_start(self):
        self.on_start(self.episode)
        super().answer_start()

    def on_start(self, episode):
        pass

    def send(self, message):
        super().send(message)
        if message["kind"] == C.CONTROL_END:
            self.on_end(message["episode"])

    def on_end(self, episode):
        path = f"{self.run.p['output']}/bags/{episode.split('@')[0].replace('/', '__')}"
        self.recorder(C.RECORDER_RECORDED, episode, bag=path, messages=42)


def test_complete_bags_are_named_in_their_rows(session, tmp_path):
    run, graph, _, _ = make_run(session, tmp_path, Recording, rounds=2, record=True)
    assert run.run() == 0
    rows = results(tmp_path)
    assert [(r["bag"], r["bag_messages"]) for r in rows] == [
        (f"bags/scene1__{r['task_id']}__r{r['round']}", 42) for r in rows]
    assert run_json(tmp_path)["status"] == "finished"


def test_an_incomplete_bag_is_no_bag_of_the_row_and_the_run_goes_on(session, tmp_path):
    """The recorder kept the bag under .partial (its episode did not end normally)."""
    class Incomplete(Recording):
        def on_end(self, episode):
            self.recorder("incomplete", episode, messages=7,
                          bag=f"{self.run.p['output']}/bags/.partial/x",
                          reason="its episode did not end normally")

    run, graph, _, _ = make_run(session, tmp_path, Incomplete, rounds=2, record=True)
    assert run.run() == 0
    rows = results(tmp_path)
    assert len(rows) == 2 and not any("bag" in r for r in rows)
    assert rows[0]["bag_error"] == ("bag incomplete: its episode did not end normally "
                                    "(kept as bags/.partial/x)")
    assert run_json(tmp_path)["status"] == "finished"


def test_a_recorder_that_cannot_write_mid_episode_stops_the_run_after_its_row(session,
                                                                             tmp_path):
    """The disk fills during episode 1: the episode runs to its end and its row says why it
    has no bag; the run then stops with the reason (before: the row waited 15 s for a bag
    that never came, and every later episode ran unrecorded)."""
    class FullMidEpisode(Recording):
        full = False

        def on_start(self, episode):
            self.full = True
            self.recorder("failed", episode, reason=FULL)

        def begin_recorder(self, episode):
            if self.full:  # a failed recorder answers every begin the same way
                self.recorder("failed", episode, reason=FULL)
            else:
                super().begin_recorder(episode)

        def on_end(self, episode):
            pass  # nothing more from the recorder

    run, graph, log, console = make_run(session, tmp_path, FullMidEpisode, rounds=3,
                                        record=True)
    t0 = graph.clock.now
    assert run.run() == 3
    (row,) = results(tmp_path)
    assert row["status"] == "ok" and row["complete"] and row["bag_error"] == FULL
    assert "bag" not in row
    stopped = f"stopped: the recorder cannot record (record:=true): {FULL}"
    assert run_json(tmp_path)["status"] == stopped
    assert ("error", f"run stopped: {stopped[len('stopped: '):]}") in log.lines
    assert kinds(graph) == ["begin", "start", "end", "begin", "end"]  # no episode 3
    assert graph.clock.now - t0 < 30  # no 15 s wait for the bag


def test_a_recorder_that_cannot_open_the_bag_stops_the_run_at_once(session, tmp_path):
    class FullBeforeTheEpisode(Recording):
        def begin_recorder(self, episode):
            self.recorder("failed", episode, reason=FULL)

    run, graph, log, _ = make_run(session, tmp_path, FullBeforeTheEpisode, rounds=2,
                                  record=True)
    assert run.run() == 3
    assert not (tmp_path / "run" / "results.jsonl").exists() or results(tmp_path) == []
    assert kinds(graph) == ["begin", "end"]  # never started
    status = run_json(tmp_path)["status"]
    assert status == f"stopped: the recorder cannot record (record:=true): {FULL}"


@pytest.mark.parametrize("status", [
    {"kind": "failed", "episode": "e", "reason": FULL},
    {"kind": "incomplete", "episode": "e", "bag": "/r/bags/.partial/e", "messages": 3,
     "reason": "its episode did not end normally"},
])
def test_the_evaluator_node_takes_the_recorders_new_answers(status):
    from vla_bridge.ros import messages

    class Log:
        lines = []

        def error(self, text):
            self.lines.append(text)

    assert messages.parse_status(messages.json_msg(status), "recorder", Log()) == status
    assert Log.lines == []
