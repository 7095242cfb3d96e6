"""An INT-ACT probe run (#25) cut short resumes like any RoboFollow run: a row torn by the kill
is dropped, only the missing probe runs again, the finished row is kept as it was, and the
run's INT-ACT tables cover both probes. SuiteRun over the in-process graph
(support/in_process_graph.py)."""
from __future__ import annotations

import pytest

from support.in_process_graph import make_run, results

PROBES = "intact_original_red_cube_green,intact_ood_source_pudding_green"


@pytest.mark.graph
def test_a_probe_run_killed_mid_row_resumes_with_the_missing_probe_only(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path, intact=PROBES, tasks="", rounds=1)
    assert first.run() == 0
    rows = results(tmp_path)
    assert [r["task_id"] for r in rows] == PROBES.split(",")
    path = tmp_path / "run" / "results.jsonl"
    kept, torn = path.read_text().splitlines()
    path.write_text(kept + "\n" + torn[:60])  # killed while the second row was being written
    (tmp_path / "run" / "intact.md").unlink()

    second, _, log, _ = make_run(session, tmp_path, intact=PROBES, tasks="", rounds=1)
    assert second.run() == 0
    again = results(tmp_path)
    assert again[0] == rows[0]  # the finished probe is not run again
    assert [r["task_id"] for r in again] == PROBES.split(",")
    assert again[1]["intact"] == rows[1]["intact"] and again[1]["seed"] == rows[1]["seed"]
    assert ("info", f"2 trials, 1 already done -> {tmp_path / 'run'}") in log.lines
    table = (tmp_path / "run" / "intact.md").read_text()
    assert "Original" in table and "OOD Source" in table
