"""`vla-bridge report` calls add up: a flag adds a section to the run's report and never drops
one (the README's `--paper --plots --videos 3`, then `--compare OTHER`, keeps all four), a
video is rendered again only when asked or gone, `--reset` starts over without deleting files;
and the pilot report has its own file, which report.md shows."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vla_bridge.cli import main
from vla_bridge.reporting import operator_console
from vla_bridge.reporting.pilot_report import PILOT_REPORT_NAME, pilot_report_path
from vla_bridge.reporting import build_report, write_report

REPO = Path(__file__).resolve().parents[2]
REAL_TASK = "L0_pickup_yellow_block_3"  # the task of conftest.saved_oracle_episode
FAST = ["--bootstrap", "50"]


def _row(task, round_, is_, es, complete, level="L0", **extra):
    return {"key": f"scene1/{task}/r{round_}", "task_id": task, "scene": "scene1", "level": level,
            "round": round_, "seed": 100 + round_, "status": "ok", "intent_score": is_,
            "exec_score": es, "max_total": 1.0, "complete": complete, "stages": [], "flags": {},
            **extra}


def _write_run(path: Path, rows: list[dict], empty_language: bool = False) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "run.json").write_text(json.dumps({
        "arguments": {"scene": "scene1", "policy": "oracle", "empty_language": empty_language},
        "status": "finished"}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _synthetic(path: Path, empty_language: bool = False, extra: tuple = ()) -> Path:
    rows = [_row("L0_task_b", 1, 0.0, 0.0, False), _row("L0_task_c", 1, 1.0, 1.0, True),
            _row("L1_task_a", 1, 0.5, 0.5, False, level="L1"), *extra]
    return _write_run(path, rows, empty_language)


@pytest.fixture(scope="module")
def oracle_row(saved_oracle_episode):
    """A saved real oracle episode: (store dir, episode path relative to it, results row)."""
    return saved_oracle_episode


def _run_with_episode(path: Path, oracle_row) -> Path:
    store, relative, row = oracle_row
    run = _synthetic(path, extra=(dict(row),))
    (run / relative).parent.mkdir(parents=True)
    (run / relative).write_bytes((store / relative).read_bytes())
    return run


def _saved(run: Path) -> tuple[str, dict]:
    return ((run / "report.md").read_text(encoding="utf-8"),
            json.loads((run / "report.json").read_text(encoding="utf-8")))


# ------------------------------------------------------------------------------ sections

@pytest.mark.graph
def test_readme_order_keeps_paper_plots_and_videos(oracle_row, tmp_path):
    """`--paper --plots --videos 1`, then `--compare OTHER`: one report with all four; the
    video is not rendered again. `--reset` then drops them from report.md, not from disk."""
    run = _run_with_episode(tmp_path / "normal", oracle_row)
    empty = _synthetic(tmp_path / "empty", empty_language=True)
    assert main(["report", str(run), "--paper", "--plots", "--videos", "1",
                 "--video-stride", "250"] + FAST) == 0
    _, first = _saved(run)
    (video,) = first["videos"]
    video_file, plot = run / video["path"], run / "plots" / "scene1.png"
    rendered_at = video_file.stat().st_mtime_ns

    assert main(["report", str(run), "--compare", str(empty)] + FAST) == 0
    md, data = _saved(run)
    assert "| paper π₀.₅ |" in md and data["paper"]["model"] == "π₀.₅"  # paper column kept
    assert "![scene1](plots/scene1.png)" in md and data["plots"] == ["plots/scene1.png"]
    assert "## Empty language" in md and data["compare"]["empty_run"] == str(tmp_path / "empty")
    assert [v["path"] for v in data["videos"]] == [video["path"]] and video["path"] in md
    assert video_file.stat().st_mtime_ns == rendered_at  # kept, not rendered again
    assert data["sections"] == {"paper": "π₀.₅", "plots": True, "compare": "../empty",
                                "videos": first["sections"]["videos"]}
    assert "- sections: paper π₀.₅, compare `../empty`, plots, videos of 1 episode(s) (" in md

    assert main(["report", str(run), "--reset"] + FAST) == 0
    md, data = _saved(run)
    assert (data["paper"], data["compare"], data["plots"], data["videos"]) == (None, None, [], [])
    assert "paper π₀.₅" not in md and "## Videos" not in md and "## Plots" not in md
    assert video_file.is_file() and plot.is_file()  # no file is deleted


@pytest.mark.graph
def test_a_video_whose_file_is_gone_is_rendered_again(oracle_row, tmp_path):
    run = _run_with_episode(tmp_path / "run", oracle_row)
    assert main(["report", str(run), "--videos", "1", "--video-stride", "250"] + FAST) == 0
    (video,) = _saved(run)[1]["videos"]
    (run / video["path"]).unlink()
    assert main(["report", str(run), "--plots"] + FAST) == 0  # videos not asked: still there
    (again,) = _saved(run)[1]["videos"]
    assert again["path"] == video["path"] and (run / video["path"]).is_file()


def test_a_report_json_from_before_the_record_is_read_from_its_parts(tmp_path):
    run = _synthetic(tmp_path / "run")
    empty = _synthetic(tmp_path / "empty", empty_language=True)
    old = build_report(run, paper_model="pi0", compare=empty, n_boot=50)
    del old["sections"]  # as the report code before the sections record wrote it
    write_report(old)
    report = build_report(run, plots=True, n_boot=50)
    assert report["paper"]["model"] == "π₀" and report["compare"]["empty_run"] == str(empty)
    assert report["sections"]["compare"] == "../empty" and report["plots"]


def test_a_remembered_compare_run_that_is_gone_is_a_problem_not_an_error(tmp_path):
    run = _synthetic(tmp_path / "run")
    empty = _synthetic(tmp_path / "empty", empty_language=True)
    write_report(build_report(run, compare=empty, n_boot=50))
    (empty / "results.jsonl").unlink()
    report = build_report(run, n_boot=50)
    assert report["compare"] is None and report["sections"]["compare"] == "../empty"
    assert any("remembered" in e for e in report["errors"])


# ------------------------------------------------------------------------------ pilot report

def _pilot_rows() -> list[dict]:
    pick = "Use your right arm to pick up the blue cube."
    return [{"instruction": pick, "success": ok, "group": "held_out", "trial": k,
             "stages": {"grasped": ok}} for k, ok in enumerate((True, False, True), 1)]


def test_pilot_report_and_run_report_are_different_files(tmp_path):
    run = tmp_path / "pilot"
    run.mkdir()
    assert pilot_report_path(run) == run / PILOT_REPORT_NAME != run / "report.md"
    assert pilot_report_path(run / "report.md") == run / "pilot_report.md"
    assert pilot_report_path(tmp_path / "elsewhere.md") == tmp_path / "elsewhere.md"
    docs = (REPO / "docs" / "real_hardware.md").read_text(encoding="utf-8")
    assert "--report runs/pilot/pilot_report.md" in docs and "runs/pilot/report.md" not in docs


def test_run_report_shows_the_pilot_report_and_moves_one_written_as_report_md(tmp_path):
    run = _synthetic(tmp_path / "pilot")
    # a pilot report at the old documented path, as operator_console wrote it before
    pilot_text, pilot_data = operator_console.report(_pilot_rows())
    (run / "report.md").write_text(pilot_text)
    (run / "report.json").write_text(json.dumps(pilot_data))
    assert main(["report", str(run)] + FAST) == 0
    assert (run / PILOT_REPORT_NAME).read_text() == pilot_text  # moved, not overwritten
    assert json.loads((run / "pilot_report.json").read_text())["trials"] == 3
    md, data = _saved(run)
    assert md.startswith("# Run report: pilot") and "groups" in data and "sections" in data
    assert "## Real-robot pilot (operator-scored)" in md and "moved the pilot report" in md
    assert "| 1 | Use your right arm to pick up the blue cube. | pick | 2/3 |" in md
    # the pilot goes on, written to its own file: the next run report shows the new numbers
    operator_console.write_report(_pilot_rows()[:2], pilot_report_path(run))
    assert main(["report", str(run)] + FAST) == 0
    md, _ = _saved(run)
    assert "| pick | 1/2 |" in md and "moved" not in md
