"""A campaign's run directory reads as one graph's (#29 point 9): its rows name
``episodes/<scene>/<task>_r<round>.npz`` (and a recording's ``bags/...``) relative to the run
directory, so the ledger puts the files there as it merges each row (links to the unit's
files); ``vla-bridge report --videos`` then finds them. And a unit's infrastructure failure is
merged but does not finish its trial: the retry's row is merged beside it (#29 point 12).
A small campaign layout built by hand (the unit's episode a real one of the in-process graph);
no Ray."""
from __future__ import annotations

import json
import os

from support.in_process_graph import TASK, make_run
from vla_bridge.benchmarks.robofollow.tasks import load_suite, plan_trials
from vla_bridge.campaign import plan as P
from vla_bridge.campaign.ledger import Ledger
from vla_bridge.evaluation.run_dir import RunDirectory, read_jsonl, trial_key
from vla_bridge.reporting import build_report
from vla_bridge.reporting.videos import replayable


def campaign_layout(tmp_path, rounds: int = 1):
    """(the campaign's RunDirectory and Ledger, its one unit, the unit's directory)."""
    trials = plan_trials([load_suite().get(TASK)], rounds, 42)
    main = RunDirectory(tmp_path / "campaign_run")
    main.start({"policy": "oracle", "graph": "robofollow_sim"}, trials, resume=False)
    ledger = Ledger(main, [trial_key(t) for t in trials], policy="oracle")
    (unit,) = P.make_units(trials, size=rounds, prefix="s1u")
    return main, ledger, unit, ledger.unit_dir(unit)


def test_merged_rows_find_their_episode_files_and_the_report_renders_them(session, tmp_path):
    main, ledger, unit, unit_dir = campaign_layout(tmp_path)
    run, _, _, _ = make_run(session, tmp_path, output=str(unit_dir))  # the unit's graph
    assert run.run() == 0
    (unit_row,) = read_jsonl(unit_dir / "results.jsonl")
    name = unit_row["episode_file"]
    assert name == f"episodes/scene1/{TASK}_r1.npz" and not (main.path / name).exists()

    assert ledger.merge_dir(unit_dir) == 1
    (row,) = main.results()
    assert row["episode_file"] == name  # the row as the unit's graph wrote it ...
    merged, source = main.path / name, unit_dir / name
    assert merged.read_bytes() == source.read_bytes()  # ... and its file beside it
    assert os.stat(merged).st_ino == os.stat(source).st_ino  # a link, not a second copy
    assert replayable(main.path, main.results(), 5) == [row]

    report = build_report(main.path, videos=1, video_stride=25, n_boot=50)
    assert [v["episode"] for v in report["videos"]] == [name], report["errors"]
    assert not [e for e in report["errors"] if e.startswith("videos")]
    assert (main.path / "videos" / "scene1" / f"{TASK}_r1.mp4").is_file()


def test_a_bag_directory_is_merged_with_its_row(tmp_path):
    main, ledger, unit, unit_dir = campaign_layout(tmp_path)
    bag = unit_dir / "bags" / "episode-1"
    bag.mkdir(parents=True)
    (bag / "episode-1_0.mcap").write_bytes(b"mcap")
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    row = {"key": unit.keys[0], "task_id": TASK, "status": "ok", "complete": True,
           "bag": "bags/episode-1", "bag_messages": 3, "policy": "oracle"}
    (unit_dir / "results.jsonl").write_text(json.dumps(row) + "\n")
    assert ledger.merge_dir(unit_dir) == 1
    assert sorted(p.name for p in (main.path / "bags" / "episode-1").iterdir()) == [
        "episode-1_0.mcap", "metadata.yaml"]
    assert (main.path / "bags" / "episode-1" / "episode-1_0.mcap").read_bytes() == b"mcap"


def test_an_infrastructure_failure_in_a_unit_is_merged_but_its_trial_runs_again(tmp_path):
    main, ledger, unit, unit_dir = campaign_layout(tmp_path, rounds=2)
    unit_dir.mkdir(parents=True)
    ok = {"key": unit.keys[0], "task_id": TASK, "round": 1, "status": "ok", "complete": True}
    infra = {"key": unit.keys[1], "task_id": TASK, "round": 2, "status": "failed",
             "error": "policy node restarted: it died with code -9 (SIGKILL) (restart 1 of 2)",
             "failure": "infrastructure", "complete": False}
    unit_results = unit_dir / "results.jsonl"
    unit_results.write_text(json.dumps(ok) + "\n" + json.dumps(infra) + "\n")
    assert ledger.merge_dir(unit_dir) == 1  # one trial finished; the failure is merged too
    assert [r.get("failure") for r in main.results()] == [None, "infrastructure"]
    assert ledger.missing(unit) == [unit.keys[1]]  # the unit is retried for it
    assert ledger.merge_dir(unit_dir) == 0 and len(main.results()) == 2  # merged once

    # a retry in a fresh directory is seeded with both rows: its evaluator knows the trial
    # failed once for infrastructure reasons, so it runs it again (and a second such failure
    # would count)
    fresh = Ledger(main, list(unit.keys))
    assert fresh.missing(unit) == [unit.keys[1]]
    moved = P.Unit("s2u0000", unit.task_ids, unit.keys)
    fresh.seed_unit(moved)
    seeded = read_jsonl(fresh.unit_dir(moved) / "results.jsonl")
    assert [r.get("failure") for r in seeded] == [None, "infrastructure"]
    assert RunDirectory(fresh.unit_dir(moved)).finished_keys() == {unit.keys[0]}

    rerun = dict(infra, status="ok", error=None, complete=True)
    del rerun["failure"]
    with open(unit_results, "a") as f:  # the retry's row, beside the first attempt's
        f.write(json.dumps(rerun) + "\n")
    assert ledger.merge_dir(unit_dir) == 1 and ledger.missing(unit) == []
    assert [(r["round"], r["status"]) for r in main.results()] == [
        (1, "ok"), (2, "failed"), (2, "ok")]
    assert ledger.merge_all() == 0 and len(main.results()) == 3
