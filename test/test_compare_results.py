"""tools/compare_results.py: rows equal apart from wall-clock fields pass; any other difference,
or a missing row, fails (it is how docs/results.md shows a refactoring changed no result)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "compare_results.py"


def _run_dir(path: Path, rows: list[dict]) -> Path:
    path.mkdir(parents=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), str(a), str(b)], capture_output=True,
                          text=True, timeout=60)


def test_wall_clock_fields_are_ignored_and_anything_else_is_a_difference(tmp_path):
    row = {"key": "scene1/t/r1", "complete": True, "wall_s": 2.5,
           "policy_latency_ms": {"inference": [1.0]}, "cue": {"overlay": {"insert_ms_mean": 3}}}
    before = _run_dir(tmp_path / "before" / "scene1", [row])
    same = dict(row, wall_s=9.0, policy_latency_ms={"inference": [7.0]},
                cue={"overlay": {"insert_ms_mean": 1}})
    after = _run_dir(tmp_path / "after" / "scene1", [same])
    done = _compare(tmp_path / "before", tmp_path / "after")
    assert done.returncode == 0 and "0 differ" in done.stdout and "identical" in done.stdout

    (after / "results.jsonl").write_text(json.dumps(dict(same, complete=False)) + "\n")
    done = _compare(before, after)
    assert done.returncode == 1 and "1 differ" in done.stdout and "complete" in done.stdout

    (after / "results.jsonl").write_text("")
    done = _compare(before, after)
    assert done.returncode == 1 and "scene1/t/r1: missing" in done.stdout
