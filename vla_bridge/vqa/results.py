"""The VQA output directory: answer rows in, per-stage accuracy and Full-Chain Accuracy out.

``vqa_results.jsonl`` holds one row per question; ``vqa_metrics`` scores them per family and
overall: accuracy per stage, FCA, ``vqa`` (the mean of the four stage accuracies: the paper's
Table 2 "VQA" score), detection split by cued / cue-free image, and the ``chance`` level of a
uniform guess over each question's options. ``format_vqa_table`` prints the table and
``write_metrics`` writes both files.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from vla_bridge.benchmarks.vifo.insertion import VQA_STAGES, full_chain_accuracy
from vla_bridge.benchmarks.vifo.protocols import family_table

__all__ = ["RESULTS_FILE", "METRICS_FILE", "TABLE_FILE", "EXAMPLES_DIR", "TABLE_ROWS",
           "DEFINITIONS", "read_rows", "done_instances", "vqa_metrics", "format_vqa_table",
           "write_metrics"]

RESULTS_FILE = "vqa_results.jsonl"
METRICS_FILE = "vqa_metrics.json"
TABLE_FILE = "vqa_table.txt"
EXAMPLES_DIR = "vqa_examples"


def read_rows(out_dir: str | Path) -> list[dict]:
    """Rows of ``vqa_results.jsonl`` (a torn last line is ignored)."""
    from vla_bridge.evaluation.run_dir import read_jsonl
    return read_jsonl(Path(out_dir) / RESULTS_FILE)


def _latest(rows: Iterable[dict]) -> list[dict]:
    """One row per (instance, stage): the last written."""
    return list({(r["instance"], r["stage"]): r for r in rows}.values())


def done_instances(rows: list[dict]) -> set[str]:
    stages: dict[str, set] = {}
    for r in rows:
        stages.setdefault(r["instance"], set()).add(r["stage"])
    return {k for k, s in stages.items() if s >= set(VQA_STAGES)}


def _pct(hits: int, n: int) -> float | None:
    return round(100.0 * hits / n, 2) if n else None


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(np.mean(values)), 2) if values else None


def _detection(rows: list[dict]) -> dict:
    """Detection accuracy on cued and on cue-free images, and the cue-free count."""
    det = [r for r in rows if r["stage"] == "detection"]
    cued = [r["correct"] for r in det if r.get("cue_shown", True)]
    free = [r["correct"] for r in det if not r.get("cue_shown", True)]
    return {"detection_cued": _pct(sum(cued), len(cued)),
            "detection_cue_free": _pct(sum(free), len(free)), "cue_free": len(free)}


def _chance(rows: list[dict], chains: dict) -> dict:
    """Expected percent of a uniform guess: per stage, FCA and VQA."""
    out = {s: _mean(100.0 / len(r["options"]) for r in rows if r["stage"] == s)
           for s in VQA_STAGES}
    odds = {k: float(np.prod([1.0 / n for n in ns])) for k, ns in chains.items()}
    out["fca"] = round(100.0 * float(np.mean(list(odds.values()))), 3) if odds else None
    out["vqa"] = _mean(out[s] for s in VQA_STAGES)
    return out


def _summary(rows: list[dict]) -> dict:
    out = {}
    for stage in VQA_STAGES:
        rs = [r for r in rows if r["stage"] == stage]
        out[stage] = _pct(sum(r["correct"] for r in rs), len(rs))
    done = done_instances(rows)
    chains, n_options = {}, {}
    for r in rows:
        if r["instance"] in done:
            chains.setdefault(r["instance"], []).append(r["correct"])
            n_options.setdefault(r["instance"], []).append(len(r["options"]))
    out["fca"] = round(full_chain_accuracy(chains.values()), 2) if chains else None
    out["vqa"] = (_mean(out[s] for s in VQA_STAGES)
                  if all(out[s] is not None for s in VQA_STAGES) else None)
    out |= _detection(rows)
    out["chance"] = _chance(rows, n_options)
    out["instances"] = len(chains)
    out["questions"] = len(rows)
    out["errors"] = sum(r.get("error") is not None for r in rows)
    return out


def vqa_metrics(rows: Iterable[dict]) -> dict:
    """Per family and overall (pooled): accuracy per stage, FCA, VQA, detection by image and
    chance (percent); ``average`` is the mean over families (the paper's "Avg."); timing in
    seconds."""
    rows = _latest(rows)
    fams = sorted({r["family"] for r in rows})
    by_family = {f: _summary([r for r in rows if r["family"] == f]) for f in fams}
    keys = (*VQA_STAGES, "fca", "vqa", "detection_cued", "detection_cue_free")
    average = {k: _mean(m[k] for m in by_family.values()) for k in keys}
    secs = [r["seconds"] for r in rows]
    per_inst: dict[str, float] = {}
    for r in rows:
        per_inst[r["instance"]] = per_inst.get(r["instance"], 0.0) + r["seconds"]
    return {
        "overall": _summary(rows), "average": average, "by_family": by_family,
        "variants": sorted({f"{r['family']}/{r['variant']}" for r in rows}),
        "backends": sorted({r.get("backend", "") for r in rows}),
        "seconds_per_question": round(float(np.mean(secs)), 4) if secs else None,
        "answer_seconds_per_instance": (round(float(np.mean(list(per_inst.values()))), 4)
                                        if per_inst else None),
        "definitions": DEFINITIONS,
    }


DEFINITIONS = {s: f"{s} questions answered correctly" for s in VQA_STAGES} | {
    "fca": "instances with all four answers correct (Full-Chain Accuracy)",
    "vqa": "mean of the four stage accuracies (the paper's Table 2 VQA score)",
    "detection_cued": "detection questions about the cued image answered correctly",
    "detection_cue_free": "detection questions about the cue-free image answered 'no cue'",
    "chance": "expected score of a uniform guess over each question's options",
}
#: (key, label) of the table rows, shared with the report's Table 2
TABLE_ROWS = ([(s, s) for s in VQA_STAGES] + [("fca", "FCA"), ("vqa", "VQA"),
              ("detection_cued", "det. cue"), ("detection_cue_free", "det. no cue")])


def format_vqa_table(metrics: dict) -> str:
    """Text table: one row per stage, FCA, VQA and detection by image, one column per family,
    Avg. (macro), All (pooled); then the instance counts and the chance level."""
    fams = sorted(metrics["by_family"])
    lines, w = family_table(metrics, TABLE_ROWS, "stage")
    counts = [metrics["by_family"][f]["instances"] for f in fams]
    lines.append(f"{'instances':<11}" + "".join(f"{n:>{w}}" for n in counts)
                 + f"{'':>{w}}{metrics['overall']['instances']:>{w}}")
    o = metrics["overall"]
    chance = ", ".join(f"{label} {o['chance'][k]:g}" for k, label in TABLE_ROWS[:6]
                       if o["chance"].get(k) is not None)
    lines.append(f"chance (uniform guess, All): {chance or '-'}")
    lines.append(f"questions: {o['questions']} ({o['errors']} errors; detection on "
                 f"{o['cue_free']} cue-free images); backend: "
                 f"{', '.join(metrics['backends']) or '-'}")
    return "\n".join(lines)


def write_metrics(out_dir: str | Path, extra: dict | None = None) -> dict:
    """vqa_metrics.json and vqa_table.txt from the directory's vqa_results.jsonl."""
    out = Path(out_dir)
    metrics = vqa_metrics(read_rows(out)) | (extra or {})
    for name, text in ((METRICS_FILE, json.dumps(metrics, indent=1)),
                       (TABLE_FILE, format_vqa_table(metrics) + "\n")):
        tmp = out / (name + ".tmp")
        tmp.write_text(text)
        tmp.replace(out / name)
    return metrics
