"""A perturbation sweep's summary from run directories written by hand (reporting.sweep and
`vla-bridge sweep --summarize`): success per level, Wilson intervals, infrastructure rows left
out, missing levels, the outputs."""
from __future__ import annotations

import json

import pytest

from support.run_dirs import write_run
from vla_bridge.cli import main as cli_main
from vla_bridge.reporting import sweep

#: 95 % Wilson score intervals, worked by hand (z = 1.959964): centre (p + z^2/2n) / (1 + z^2/n),
#: half-width z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)
WILSON = {(3, 4): (0.30064, 0.95441), (1, 2): (0.09453, 0.90547), (0, 3): (0.0, 0.5615),
          (2, 2): (0.34238, 1.0)}


def _row(i: int, complete: bool, level: int = 0, axis: str = "camera", **extra) -> dict:
    row = {"key": f"scene1/T{i}/r1", "task_id": f"T{i}", "scene": "scene1", "level": "L0",
           "status": "ok", "intent_score": 1.0, "exec_score": 1.0 if complete else 0.4,
           "complete": complete}
    if level:
        row["perturbation"] = {"axis": axis, "level": level, "seed": 100 + i}
    row.update(extra)
    return row


def _infrastructure(i: int, level: int, **extra) -> dict:
    return _row(i, False, level, status="error", error="sim stopped answering",
                failure="infrastructure", **extra)


def _sweep_dir(tmp_path):
    """camera levels 0 (3 of 4), 2 (1 of 2 plus an infrastructure row), 4 (0 of 3); 1, 3 absent."""
    out = tmp_path / "sweep"
    write_run(out / "L0", [_row(0, True), _row(1, True), _row(2, True), _row(3, False)])
    write_run(out / "L2", [_row(0, True, 2), _infrastructure(1, 2), _row(1, False, 2)])
    write_run(out / "L4", [_row(i, False, 4) for i in range(3)])
    return out


def test_rates_and_wilson_intervals_per_level(tmp_path):
    out = _sweep_dir(tmp_path)
    summary = sweep.summarize_sweep(out, "camera", [0, 2, 4])
    assert summary["axis"] == "camera" and summary["metric"] == "complete"
    figures = {e["level"]: (e["episodes"], e["successes"]) for e in summary["levels"]}
    assert figures == {0: (4, 3), 2: (2, 1), 4: (3, 0)}
    for e in summary["levels"]:
        assert e["rate"] == pytest.approx(e["successes"] / e["episodes"])
        assert e["ci95"] == pytest.approx(WILSON[(e["successes"], e["episodes"])], abs=1e-4)
        assert e["run_dir"] == str(out / f"L{e['level']}")
        assert "problems" not in e, e
    assert [e["perturbation"] for e in summary["levels"]] == [None, "camera:2", "camera:4"]


def test_infrastructure_rows_are_left_out_until_counted(tmp_path):
    out = _sweep_dir(tmp_path)
    level2 = sweep.summarize_level(out, "camera", 2)
    assert (level2["episodes"], level2["successes"], level2["excluded"]) == (2, 1, 1)
    # a second infrastructure failure of a trial is counted: a failure like any other
    write_run(out / "L3", [_row(0, True, 3), _infrastructure(1, 3, counted=True)])
    level3 = sweep.summarize_level(out, "camera", 3)
    assert (level3["episodes"], level3["successes"], level3["excluded"]) == (2, 1, 0)
    assert level3["ci95"] == pytest.approx(WILSON[(1, 2)], abs=1e-4)


def test_a_missing_level_is_reported(tmp_path):
    out = _sweep_dir(tmp_path)
    (out / "L3").mkdir()  # a directory, but no run in it
    summary = sweep.summarize_sweep(out, "camera", [0, 1, 3])
    level1, level3 = summary["levels"][1], summary["levels"][2]
    assert level1["episodes"] == 0 and level1["rate"] is None and level1["ci95"] is None
    assert level1["missing"] == f"no run directory {out / 'L1'}"
    assert level3["missing"] == f"no results rows in {out / 'L3'}"
    text = sweep.format_markdown(summary)
    assert f"| 1 | camera:1 | 0 | - | missing: no run directory {out / 'L1'} |" in text
    assert "| 0 | none | 4 | 3 | 75.0% | 30.1% - 95.4% |" in text


def test_the_outputs_are_written(tmp_path):
    out = _sweep_dir(tmp_path)
    summary = sweep.summarize_sweep(out, "camera", [0, 1, 2, 3, 4], walls={0: 12.5})
    paths = sweep.write_sweep(out, summary)
    assert [p.name for p in paths] == ["sweep.json", "sweep.md", "sweep.png"]
    assert json.loads((out / "sweep.json").read_text()) == json.loads(json.dumps(summary))
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "sweep.png").stat().st_size > 5000
    text = (out / "sweep.md").read_text()
    assert text.startswith("# Sweep: camera\n")
    assert "cam_high shifted 2.5 cm and turned 2.5 deg per level" in text
    assert "| 0 | none | 4 | 3 | 75.0% | 30.1% - 95.4% | 0 | 12 |" in text  # 12.5 s rounds to even
    assert "| 2 | camera:2 | 2 | 1 | 50.0% | 9.5% - 90.5% | 1 |" in text
    assert "| 4 | camera:4 | 3 | 0 | 0.0% | 0.0% - 56.1% | 0 |" in text


def test_rows_of_another_perturbation_are_flagged(tmp_path):
    out = tmp_path / "sweep"
    write_run(out / "L2", [_row(0, True, 2, axis="lighting"), _row(1, True, 1),
                           _row(2, True, 2, perturbation={"axis": "camera", "level": 2,
                                                          "applied": False})])
    info = json.loads((out / "L2" / "run.json").read_text())
    info["provenance"] = {"perturbation": "lighting:2"}
    (out / "L2" / "run.json").write_text(json.dumps(info))
    write_run(out / "L0", [_row(0, True, 1)])
    problems = {e["level"]: e.get("problems") for e in
                sweep.summarize_sweep(out, "camera", [0, 2])["levels"]}
    assert problems[0] == ["level 0 has perturbed rows"]
    assert problems[2] == ["run.json's perturbation is 'lighting:2', not 'camera:2'",
                           "2 row(s) without the perturbation camera:2",
                           "1 row(s) the sim did not perturb (applied: false)"]


def test_libero_rows_use_success_and_any_metric_can_be_named(tmp_path):
    out = tmp_path / "sweep"
    libero = [{"key": f"libero_goal/{i}/0", "success": i < 2, "status": "ok"} for i in range(4)]
    write_run(out / "L0", libero, arguments={"benchmark": "libero"})
    level0 = sweep.summarize_level(out, "lighting", 0)
    assert (level0["metric"], level0["successes"], level0["episodes"]) == ("success", 2, 4)
    write_run(out / "L1", [_row(0, True, 1, axis="lighting"), _row(1, False, 1, axis="lighting")])
    # a number is a success at the full rate (99 %) of max_total; a dotted path reaches inside
    assert sweep.summarize_level(out, "lighting", 1, "exec_score")["successes"] == 1
    nested = [_row(0, False, 1, axis="lighting", scores={"language": {"complete": True}})]
    write_run(out / "L2", nested)
    assert sweep.summarize_level(out, "lighting", 2, "scores.language.complete")["successes"] == 1
    with pytest.raises(ValueError, match="no results row has the field 'compleet'"):
        sweep.summarize_sweep(out, "lighting", [1], "compleet")


def test_levels_are_parsed_against_the_axis():
    assert sweep.parse_levels(None, "texture") == [0, 1, 2]
    assert sweep.parse_levels("0, 2,4", "camera") == [0, 2, 4]
    for text, message in [("0,5", r"camera has levels 0\.\.4, --levels asks for \[5\]"),
                          ("0,-1", "comma-separated integers"), ("1,1", "names a level twice")]:
        with pytest.raises(ValueError, match=message):
            sweep.parse_levels(text, "camera")
    with pytest.raises(ValueError, match="unknown perturbation axis 'camra'; the axes: camera"):
        sweep.parse_levels("0", "camra")


def test_summarize_rebuilds_from_the_run_directories(tmp_path, capsys):
    out = _sweep_dir(tmp_path)
    (out / "L4" / "run.json").write_text(json.dumps(
        {"status": "finished", "arguments": {}, "provenance": {"perturbation": "camera:4"}}))
    assert cli_main(["sweep", "--summarize", str(out)]) == 0  # axis and levels found
    printed = capsys.readouterr().out
    assert printed.startswith("[sweep] camera: L0 3/4, L2 1/2, L4 0/3; wrote ")
    stored = json.loads((out / "sweep.json").read_text())
    assert [e["level"] for e in stored["levels"]] == [0, 2, 4]
    # sweep.json's levels are kept, and a level asked for that has no run is reported
    assert cli_main(["sweep", "--summarize", str(out), "--levels", "0,1,2,4"]) == 0
    assert "missing: no run directory" in (out / "sweep.md").read_text()
    assert cli_main(["sweep", "--summarize", str(out)]) == 0
    assert [e["level"] for e in json.loads((out / "sweep.json").read_text())["levels"]] \
        == [0, 1, 2, 4]
    capsys.readouterr()
    assert cli_main(["sweep", "--summarize", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err == f"vla-bridge sweep: --summarize: no directory " \
                                      f"{tmp_path / 'none'}\n"
