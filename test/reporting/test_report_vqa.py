"""`vla-bridge report`: the Part I-A VQA rows of the LIBERO-VIFO Table 2 section, per family.

Synthetic run directories (no simulator): cue-protocol episodes in results.jsonl and
``vla-bridge vqa`` answers in ``vqa/vqa_results.jsonl`` with known numbers; the report's JSON
and Markdown carry per-family stage accuracy, FCA and VQA (the mean of the four stages).
"""
from __future__ import annotations

import json
from pathlib import Path

from vla_bridge.benchmarks.vifo.insertion import VQA_STAGES
from vla_bridge.reporting import build_report, format_markdown
from vla_bridge.vqa import format_vqa_table, vqa_metrics


def episode(task, round_, cue=None):
    return {"key": f"scene1/{task}/r{round_}", "task_id": task, "scene": "scene1", "level": "L0",
            "round": round_, "seed": 100 + round_, "status": "ok", "intent_score": 1.0,
            "exec_score": 1.0, "max_total": 1.0, "complete": True, "stages": [], "flags": {},
            **({"cue": cue} if cue else {})}


def answers(family, task, hits, cue_shown=True):
    """The four rows of one instance; ``hits``: which stages are right."""
    inst = f"{task}|{family}|v|1|cam_high"
    return [{"instance": inst, "task": task, "family": family, "variant": "v", "stage": s,
             "options": ["a", "b", "c", "d"], "correct_index": 0, "answer": 0 if h else 1,
             "correct": bool(h), "seconds": 0.01, "error": None, "backend": "my_vlm",
             "cue_shown": cue_shown or s != "detection", "questions": 2}
            for s, h in zip(VQA_STAGES, hits)]


def write_run(path: Path, rows: list[dict], vqa_rows: list[dict]) -> Path:
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"arguments": {"scene": "scene1"},
                                               "status": "finished"}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if vqa_rows:
        (path / "vqa").mkdir()
        (path / "vqa" / "vqa_results.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in vqa_rows))
    return path


VQA_ROWS = (answers("F1", "t1", (1, 1, 1, 1)) + answers("F1", "t2", (1, 0, 1, 0), False)
            + answers("F8", "t1", (0, 1, 0, 0)))


def test_vqa_metrics_have_the_table_2_score_and_chance():
    m = vqa_metrics(VQA_ROWS)
    f1 = m["by_family"]["F1"]
    assert [f1[s] for s in VQA_STAGES] == [100.0, 50.0, 100.0, 50.0]
    assert f1["fca"] == 50.0 and f1["vqa"] == 75.0
    assert f1["detection_cued"] == 100.0 and f1["detection_cue_free"] == 100.0
    assert m["by_family"]["F8"]["vqa"] == 25.0 and m["average"]["vqa"] == 50.0
    assert m["overall"]["chance"] == {"detection": 25.0, "semantics": 25.0, "grounding": 25.0,
                                      "decision": 25.0, "fca": 0.391, "vqa": 25.0}
    table = format_vqa_table(m).splitlines()
    assert table[7].split() == ["VQA", "75.0", "25.0", "50.0", "58.3"]  # All: 7 of 12 right
    assert table[9].split() == ["det.", "no", "cue", "100.0", "-", "100.0", "100.0"]
    assert "detection on 1 cue-free images" in table[-1]


def test_report_table_2_gets_the_vqa_rows_beside_the_protocols(tmp_path):
    cue = {"protocol": "authorized", "family": "F1", "variant": "banner", "cue_complete": True}
    run = write_run(tmp_path / "run", [episode("t1", 1, cue)], VQA_ROWS)
    report = build_report(run)
    vqa = report["cues"]["vqa"]
    assert vqa["by_family"]["F1"]["vqa"] == 75.0 and vqa["by_family"]["F8"]["fca"] == 0.0
    md = format_markdown(report)
    assert "| metric | F1 Text | F8 Code | Avg. | All |" in md
    assert "| VQA | 75.0 | 25.0 | 50.0 | 58.3 |" in md  # All pools the 12 answers: 7/12
    assert "| VQA FCA | 50.0 | 0.0 | 25.0 | 33.3 |" in md
    assert "| AVF | 100.0 | – | 100.0 | 100.0 |" in md
    assert "Part I-A answers in `vqa/` (my_vlm; 3 instances" in md


def test_vqa_alone_makes_the_section_and_no_answers_make_none(tmp_path):
    only = build_report(write_run(tmp_path / "vqa_only", [episode("t1", 1)], VQA_ROWS))
    md = format_markdown(only)
    assert "| VQA Det. | 100.0 | 0.0 | 50.0 | 66.7 |" in md and "Episodes per protocol" not in md
    plain = build_report(write_run(tmp_path / "plain", [episode("t1", 1)], []))
    assert plain["cues"] is None and "LIBERO-VIFO" not in format_markdown(plain)
