"""`vla-bridge report`: tables and intervals on a synthetic run with known numbers, the paper's
Table 1 beside ours, INT-ACT re-scoring, the empty-language drop, plots, a replay video of a
real (oracle) episode, the CLI exit codes, and the progress bar."""
from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.cli_process import run_cli
from vla_bridge.evaluation.progress import Progress, format_duration, track
from vla_bridge.reporting import (DEFAULT_PAPER_MODEL, METRICS, ReportError, build_report,
                                          format_markdown, write_report)
from vla_bridge.reporting.common import load_rows
from vla_bridge.reporting.paper import load_paper, paper_model
from vla_bridge.reporting.tables import task_bootstrap
from vla_bridge.reporting.video_io import count_video_frames, video_codec
from vla_bridge.reporting.videos import render_episode_video

REPO = Path(__file__).resolve().parents[2]
SHARED_CSV = REPO.parent / "shared" / "robofollow" / "results_table1.csv"
REAL_TASK = "L0_pickup_yellow_block_3"  # the task of conftest.saved_oracle_episode


def _row(task, round_, is_, es, complete, scene="scene1", level="L0", status="ok", **extra):
    return {"key": f"{scene}/{task}/r{round_}", "task_id": task, "scene": scene, "level": level,
            "round": round_, "seed": 100 + round_, "status": status, "intent_score": is_,
            "exec_score": es, "max_total": 1.0, "complete": complete, "stages": [], "flags": {},
            **extra}


def _write_run(path: Path, rows: list[dict], empty_language: bool = False) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "run.json").write_text(json.dumps({
        "arguments": {"scene": "scene1", "policy": "oracle", "rounds": 2,
                      "empty_language": empty_language}, "status": "finished"}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def real_episode(saved_oracle_episode):
    """One real oracle episode of REAL_TASK, saved as the evaluator saves it."""
    return saved_oracle_episode


def _synthetic_rows(real_row: dict) -> list[dict]:
    rows = [
        # scene1/L0: 3 tasks, 5 episodes. IS 3.5/5, ES 3.25/5, CR macro (1/2+1/2+1)/3, micro 3/5
        real_row,  # the real oracle episode: 1.0 / 1.0 / complete
        _row(REAL_TASK, 2, 0.5, 0.25, False),
        _row("L0_task_b", 1, 0.0, 0.0, False),
        _row("L0_task_b", 2, 1.0, 1.0, True),
        _row("L0_task_c", 1, 1.0, 1.0, True),
        # scene1/L1: one task (no interval), one failed episode
        _row("L1_task_a", 1, 0.4, 0.2, False, level="L1"),
        _row("L1_task_a", 2, 0.0, 0.0, False, level="L1", status="failed", error="policy died"),
        # scene1/L2: two tasks, one complete, one not: bootstrap support {0, 0.5, 1}
        _row("L2_task_a", 1, 1.0, 1.0, True, level="L2"),
        _row("L2_task_b", 1, 0.0, 0.0, False, level="L2"),
    ]
    # scene1/L3: 20 tasks, 10 complete: CR 50 %, bootstrap sd = 0.5 / sqrt(20) = 11.2 points
    rows += [_row(f"L3_task_{i:02d}", 1, float(i % 2), float(i % 2), bool(i % 2), level="L3")
             for i in range(20)]
    return rows


@pytest.fixture(scope="module")
def run_dir(real_episode, tmp_path_factory):
    store, relative, row = real_episode
    path = _write_run(tmp_path_factory.mktemp("run") / "normal", _synthetic_rows(dict(row)))
    (path / relative).parent.mkdir(parents=True)
    (path / relative).write_bytes((store / relative).read_bytes())
    return path


@pytest.fixture(scope="module")
def empty_run(tmp_path_factory):
    rows = [_row(REAL_TASK, 1, 0.0, 0.0, False), _row(REAL_TASK, 2, 0.0, 0.0, False),
            _row("L0_task_b", 1, 0.0, 0.0, False), _row("L0_task_b", 2, 0.5, 0.5, False),
            _row("L0_task_c", 1, 1.0, 1.0, True),
            _row("L2_task_a", 1, 0.0, 0.0, False, level="L2"),
            _row("L2_task_b", 1, 0.0, 0.0, False, level="L2")]
    return _write_run(tmp_path_factory.mktemp("run") / "empty", rows, empty_language=True)


@pytest.fixture(scope="module")
def full_report(run_dir, empty_run):
    stream = io.StringIO()
    report = build_report(run_dir, paper_model=DEFAULT_PAPER_MODEL, plots=True, videos=1,
                          compare=empty_run, video_stride=50, progress_stream=stream)
    md, js = write_report(report)
    return report, md, js, stream.getvalue()


# ------------------------------------------------------------------------------ numbers

def test_the_real_episode_is_a_full_score(real_episode):
    _, _, row = real_episode
    assert row["intent_score"] == pytest.approx(1.0) and row["complete"] is True


def test_table_point_estimates(full_report):
    report = full_report[0]
    g = report["groups"]
    assert list(g) == ["scene1/L0", "scene1/L1", "scene1/L2", "scene1/L3", "all"]
    l0 = g["scene1/L0"]
    assert (l0["n_episodes"], l0["n_tasks"], l0["n_failed"]) == (5, 3, 0)
    assert l0["IS"]["value"] == pytest.approx(70.0)
    assert l0["ES"]["value"] == pytest.approx(65.0)
    assert l0["CR"]["value"] == pytest.approx(200 / 3, abs=1e-3)  # task-macro
    assert l0["CR_episode_micro"] == pytest.approx(60.0)
    assert l0["IS_full_rate"] == pytest.approx(60.0)
    assert g["scene1/L1"]["n_failed"] == 1 and g["scene1/L1"]["IS"]["value"] == pytest.approx(20.0)
    assert g["all"]["n_episodes"] == 29 and g["all"]["n_tasks"] == 26
    # the same point estimates as summary.json's summarize()
    from vla_bridge.benchmarks.robofollow.scoring.common import summarize
    s = summarize(load_rows(Path(report["run_dir"])))
    for group, v in g.items():
        assert v["CR"]["value"] == pytest.approx(100 * s[group]["completion_rate"], abs=1e-3)


def test_interval_bounds_on_known_cases(full_report):
    g = full_report[0]["groups"]
    assert g["scene1/L1"]["CR"]["lo"] is None  # one task: no interval
    # two tasks (0 and 1): replicates are 0, 0.5 or 1 with p = 1/4, 1/2, 1/4 -> [0, 100]
    for m in METRICS:
        assert (g["scene1/L2"][m]["lo"], g["scene1/L2"][m]["hi"]) == (0.0, 100.0)
    # 20 tasks, half complete: ~ 50 +- 1.96 * 11.2
    l3 = g["scene1/L3"]["CR"]
    assert 25.0 <= l3["lo"] <= 35.0 and 65.0 <= l3["hi"] <= 75.0
    for v in g.values():
        for m in METRICS:
            if v[m]["lo"] is not None:
                assert v[m]["lo"] - 1e-9 <= v[m]["value"] <= v[m]["hi"] + 1e-9


def test_bootstrap_is_reproducible_and_degenerate_when_tasks_agree():
    rows = [_row(f"t{i}", r, 1.0, 1.0, True) for i in range(5) for r in (1, 2)]
    assert task_bootstrap(rows) == {m: (1.0, 1.0) for m in METRICS}
    mixed = _synthetic_rows(_row(REAL_TASK, 1, 1.0, 1.0, True))
    assert task_bootstrap(mixed, seed=3) == task_bootstrap(mixed, seed=3)
    assert task_bootstrap(mixed, seed=3) != task_bootstrap(mixed, seed=4)


# ------------------------------------------------------------------------------ paper

def test_paper_numbers_beside_ours(full_report):
    report, md_path, _, _ = full_report
    paper = report["paper"]
    assert paper["model"] == "π₀.₅" and paper["family"] == "VLA"
    assert paper["cells"]["scene1/L0"] == {"IS": 99.1, "ES": 98.5, "CR": 98.8}
    assert paper["cells"]["scene1/L3"] == {"IS": 44.9, "ES": 43.8, "CR": 40.1}
    assert "all" not in paper["cells"]
    assert paper["outside_ci"]["scene1/L2"] == []  # our [0, 100] holds anything
    md = md_path.read_text(encoding="utf-8")
    assert "| paper π₀.₅ | 99.1 | 98.5 | 98.8 |" in md
    assert "70.0 [" in md  # our L0 IS with its interval


def test_paper_model_lookup():
    paper = load_paper()
    assert paper_model(paper, "pi05")["model"] == "π₀.₅"
    assert paper_model(paper, "PI0")["model"] == "π₀"
    assert paper_model(paper, "pi0.5 empty language")["family"] == "Control"
    assert paper_model(paper, "GR00T N1.6")["model"] == "GR00T N1.6"
    with pytest.raises(ReportError, match="XVLA"):
        paper_model(paper, "no such model")
    assert len(paper["models"]) == 10


@pytest.mark.skipif(not SHARED_CSV.exists(), reason="../shared/robofollow/results_table1.csv not present")
def test_paper_table_matches_shared_csv():
    raw = SHARED_CSV.read_bytes()
    assert raw.count(b"\r\n") == 161  # read as stored: CRLF
    paper = load_paper()
    by_model = {e["model"]: e for e in paper["models"]}
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert len(rows) == 160 == 16 * len(by_model)
    for r in rows:
        cell = by_model[r["model"]]["results"][paper["scenes"][r["scene"]]][r["level"]]
        assert by_model[r["model"]]["family"] == r["family"]
        assert cell == {"IS": float(r["intent_score"]), "ES": float(r["execution_score"]),
                        "CR": float(r["completion_rate"])}
    out = subprocess.run([sys.executable, str(REPO / "tools" / "import_paper_table.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr  # regenerating gives the same bytes


# ------------------------------------------------------------------------------ INT-ACT, compare

def test_intact_rescored_from_the_episode_file(full_report):
    intact = full_report[0]["intact"]
    assert intact["n_episodes_scored"] == 1 and intact["n_without_file"] == 28
    assert intact["errors"] == []
    l0 = intact["groups"]["scene1/L0"]
    assert l0["n_episodes"] == 1
    assert (l0["intention_correct_rate"], l0["grasp_success_rate"], l0["task_success_rate"],
            l0["wrong_object_attempt_rate"]) == (100.0, 100.0, 100.0, 0.0)


def test_empty_language_drop(full_report, empty_run):
    compare = full_report[0]["compare"]
    assert compare["empty_run"] == str(empty_run) and compare["note"] == ""
    assert set(compare["groups"]) == {"scene1/L0", "scene1/L2", "all"}
    l0 = compare["groups"]["scene1/L0"]
    # IS 70 -> 30 (0+0+0+0.5+1 of 5), CR (1/2+1/2+1)/3 -> (0+0+1)/3
    assert (l0["IS"]["normal"], l0["IS"]["empty"], l0["IS"]["drop"]) == pytest.approx((70.0, 30.0, 40.0))
    assert l0["CR"]["drop"] == pytest.approx(100 / 3, abs=1e-3)
    assert l0["IS"]["lo"] <= l0["IS"]["drop"] <= l0["IS"]["hi"]
    # the paper's pi0.5 drop: normal minus its empty-language control row
    assert l0["paper_drop"] == pytest.approx({"IS": 99.1 - 16.0, "ES": 98.5 - 16.0, "CR": 98.8 - 6.3})
    md = full_report[1].read_text(encoding="utf-8")
    assert "## Empty language" in md and "40.0 [" in md


def test_compare_swaps_roles_when_given_the_other_way(run_dir, empty_run):
    report = build_report(empty_run, compare=run_dir, n_boot=200)
    assert report["compare"]["normal_run"] == str(run_dir)
    assert "roles swapped" in report["compare"]["note"]
    assert report["compare"]["groups"]["scene1/L0"]["IS"]["drop"] == pytest.approx(40.0)


# ------------------------------------------------------------------------------ files

def test_report_files_and_plots(full_report, run_dir):
    report, md, js, _ = full_report
    saved = json.loads(js.read_text(encoding="utf-8"))
    assert saved["groups"]["scene1/L0"]["IS"]["value"] == pytest.approx(70.0)
    assert report["errors"] == []
    assert report["plots"] == ["plots/scene1.png"]
    from PIL import Image
    png = run_dir / "plots" / "scene1.png"
    assert png.stat().st_size > 20_000
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size == (1100, 390)
        assert np.asarray(im.convert("L")).std() > 10  # not a blank canvas
    assert "![scene1](plots/scene1.png)" in md.read_text(encoding="utf-8")


def test_replay_video(full_report, run_dir):
    report, md, _, progress = full_report
    (video,) = report["videos"]
    path = run_dir / video["path"]
    assert video["path"] == f"videos/scene1/{REAL_TASK}_r1.mp4" and video["codec"] == "h264"
    assert video_codec(path) == "h264"  # what browsers play, read back from the file
    # the oracle is done after ~95 of 501 frames: the idle tail is cut a second later
    end = 501 - video["idle_cut_frames"]
    assert 95 < end < 130 and video["idle_cut_s"] == pytest.approx((501 - end) * 0.06, abs=0.01)
    assert video["episode_frames"] == 501 and video["frames"] == 4  # 0, 50, 100 and end - 1
    assert video["max_tcp_drift_m"] < 1e-6  # the replay is the recorded episode
    assert path.stat().st_size > 10_000
    assert count_video_frames(path) == 4
    import cv2
    cap = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    assert frames[0].shape == (video["height"], video["width"], 3)
    assert video["width"] == 640 and video["height"] > 480  # 2x camera image + caption band
    band = video["height"] - 480
    scene_first, scene_mid = frames[0][band:].astype(int), frames[2][band:].astype(int)
    assert np.abs(scene_first - scene_mid).mean() > 0.5  # the arm moved
    assert frames[0][:band].max() > 200  # caption text drawn
    assert "1/1" in progress and "videos" in progress  # non-TTY progress: one line per item
    text = md.read_text(encoding="utf-8")
    assert f"{REAL_TASK}_r1.mp4" in text and "| h264 |" in text
    assert f"| {501 - end} frames, {video['idle_cut_s']:.1f} s (" in text  # the cut, stated


def test_cli_exit_codes(run_dir, tmp_path):
    from vla_bridge.cli import main
    assert main(["report", str(run_dir), "--paper", "pi05", "--bootstrap", "200"]) == 0
    assert (run_dir / "report.md").is_file()
    assert main(["report", str(run_dir), "--paper", "nonsense"]) == 2
    out = run_cli("report", str(tmp_path / "missing"))  # its own process (support/cli_process)
    assert out.returncode == 2 and "no results" in out.stderr


# ------------------------------------------------------------------------------ progress

class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_one_line_per_item_without_tty():
    stream, clock = io.StringIO(), _Clock()
    bar = Progress(4, "videos", stream=stream, clock=clock)
    for i in range(4):
        clock.t += 2.0
        bar.update(item=f"ep{i}")
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4 and "\r" not in stream.getvalue()
    assert lines[0] == "videos  1/4 (25%)  2.0s/item  ETA 0:06  ep0"
    assert lines[-1].startswith("videos  4/4 (100%)") and "in 0:08" in lines[-1]


def test_progress_redraws_one_line_on_a_tty():
    stream, clock = io.StringIO(), _Clock()
    with Progress(3, "run", stream=stream, tty=True, width=6, clock=clock) as bar:
        for _ in range(3):
            clock.t += 0.5
            bar.update()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n") and text.count("\r") == 3
    assert "[######]" in text and "3/3" in text and "2.0/s" in text


def test_track_and_durations():
    stream = io.StringIO()
    assert list(track(iter(range(3)), "x", stream=stream)) == [0, 1, 2]
    assert stream.getvalue().splitlines()[-1].startswith("x  3")
    assert (format_duration(59.4), format_duration(61), format_duration(3725), format_duration(None)) == \
        ("0:59", "1:01", "1:02:05", "?")


def test_gif_when_mp4_cannot_be_written(real_episode, tmp_path, monkeypatch):
    store, relative, _ = real_episode

    def no_mp4(*args):
        raise RuntimeError("no encoder")

    monkeypatch.setattr("vla_bridge.reporting.videos.open_mp4", no_mp4)
    video = render_episode_video(store / relative, tmp_path / "clip", stride=100, trim_idle=False)
    assert video.format == "gif" and video.path.endswith("clip.gif") and "mp4 failed" in video.note
    assert video.frames == 6 and count_video_frames(video.path) == 6  # 0, 100, ..., 500
    assert video.fps == pytest.approx(1 / (0.06 * 100), abs=1e-3)  # real time by default
    with pytest.raises(ValueError, match="stride"):
        render_episode_video(store / relative, tmp_path / "x", stride=0)


def test_latency_summary_pools_every_call_of_the_run():
    from vla_bridge.evaluation.run_dir import call_latency, format_latency, latency_summary
    status = {"inference_ms": 12.0, "overhead_ms": 0.9,
              "latency_ms": {"preprocess": 0.5, "inference": 12.0, "postprocess": 0.1,
                             "transport": 0.3}}
    assert call_latency(status) == {"inference": 12.0, "overhead": 0.9, "preprocess": 0.5,
                                    "postprocess": 0.1, "transport": 0.3}
    rows = [{"policy_latency_ms": {"inference": [1.0, 2.0, 3.0], "overhead": [0.5]}},
            {"policy_latency_ms": {"inference": [4.0]}}, {"status": "failed"}]
    summary = latency_summary(rows)
    assert summary["inference"] == {"calls": 4, "mean": 2.5, "p50": 2.5, "p95": 3.85, "max": 4.0}
    assert summary["overhead"]["calls"] == 1 and "transport" not in summary
    assert "inference" in format_latency(summary) and latency_summary([{}]) == {}


def test_cue_protocol_runs_get_a_table_2_section(tmp_path):
    def cue(protocol, family, cue_complete, language_complete=None):
        return {"protocol": protocol, "family": family, "variant": "x",
                "cue_complete": cue_complete, "language_complete": language_complete}

    rows = [_row("t1", 1, 1, 1, True, cue=cue("authorized", "F2", True)),
            _row("t2", 1, 0, 0, False, cue=cue("authorized", "F2", False)),
            _row("t1", 2, 1, 1, True, cue=cue("no_language", "F8", True)),
            _row("t2", 2, 0, 0, False, status="failed", cue=cue("no_language", "F8", True))]
    report = build_report(_write_run(tmp_path / "cues", rows))
    assert report["cues"]["by_family"]["F2"]["avf"] == 50.0
    assert report["cues"]["by_family"]["F8"]["uvi"] == 50.0  # the failed episode counts as no
    md = format_markdown(report)
    assert "LIBERO-VIFO Table 2" in md and "no_language 2 (1 failed)" in md
    assert "| AVF | 50.0 | – | 50.0 |" in md and "| UVI | – | 50.0 | 50.0 |" in md
    plain = build_report(_write_run(tmp_path / "plain", [_row("t1", 1, 1, 1, True)]))
    assert plain["cues"] is None and "LIBERO-VIFO" not in format_markdown(plain)


# ------------------------------------------------------------- report.html (#27, point 6)

def _cue_example(run_dir: Path) -> Path:
    """A cue example as the evaluator saves one (raw | cued PNG)."""
    import cv2
    out = run_dir / "cue_examples"
    out.mkdir(exist_ok=True)
    pair = np.zeros((24, 52, 3), np.uint8)
    pair[:, 28:] = (0, 0, 255)  # the cued half, red in BGR
    path = out / f"{REAL_TASK}_r1_cam_high.png"
    cv2.imwrite(str(path), pair)
    return path


def test_report_html_is_self_contained_and_has_every_section(full_report, run_dir):
    report = full_report[0]
    _cue_example(run_dir)
    write_report(report)
    page = (run_dir / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    for heading in ("<h1>Run report: normal</h1>", "<h2>Plots</h2>", "<h2>Videos</h2>",
                    "<h2>Cue examples</h2>"):
        assert heading in page
    # every image and video is inlined: no file next to it is needed, nothing outside is asked
    sources = re.findall(r'\bsrc="([^"]*)"', page)
    assert len(sources) == len(report["plots"]) + len(report["videos"]) + 1, sources
    assert all(s.startswith(("data:image/png;base64,", "data:video/mp4;base64,")) for s in sources)
    assert "http://" not in page and "https://" not in page and "<script" not in page
    # the provenance is there, as report.md has it
    assert "produced by:" in page


def test_report_html_refuses_a_missing_media_file_in_one_line(full_report, run_dir, tmp_path):
    from vla_bridge.reporting import ReportError
    from vla_bridge.reporting.html import format_html
    report = json.loads(json.dumps(full_report[0]))
    report["plots"] = ["plots/gone.png"]
    with pytest.raises(ReportError, match=r"report.html: plots/gone.png is named by the report "
                                          r"but is missing"):
        format_html(report, run_dir)


def test_report_html_opens_in_chromium_tables_images_and_a_playing_video(full_report, run_dir):
    """Headless Chromium (Debian's) loads report.html: the tables are there, every image
    decodes, the replay video (H.264) plays, and no resource failed to load."""
    from support.chromium import open_page
    _cue_example(run_dir)
    write_report(full_report[0])
    with open_page(run_dir / "report.html") as page:
        tables = page.evaluate("""[...document.querySelectorAll('table')].map(t =>
            [...t.querySelectorAll('th')].map(th => th.textContent))""")
        images = page.evaluate("""Promise.all([...document.images].map(img => img.decode().then(
            () => [img.alt, img.naturalWidth, img.naturalHeight], e => [img.alt, 0, String(e)])))""")
        video = page.evaluate("""(async () => {
            const v = document.querySelector('video');
            await v.play();
            const t0 = performance.now();
            while (v.currentTime < 0.2 && !v.ended && performance.now() - t0 < 10000)
                await new Promise(r => setTimeout(r, 50));
            v.pause();
            return {time: v.currentTime, width: v.videoWidth, height: v.videoHeight,
                    error: v.error && v.error.message};
        })()""", timeout=40)
        failed = page.failed_loads()
    assert failed == []
    markdown = (run_dir / "report.md").read_text()
    assert len(tables) == markdown.count("\n|---") > 3  # every table of report.md
    assert tables[0][:2] == ["scene1", "L0 IS"], tables  # Table 1, as report.md has it
    assert ["episode", "video"] == tables[-1][:2], tables
    assert len(images) == len(full_report[0]["plots"]) + 1  # the plots and the cue example
    assert all(w > 0 and h > 0 for _, w, h in images), images
    assert [i for i in images if i[0].endswith("_cam_high")][0][1:] == [52, 24]
    assert video["error"] is None and video["time"] >= 0.2 and video["width"] > 0, video
