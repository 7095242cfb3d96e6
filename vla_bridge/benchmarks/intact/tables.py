"""INT-ACT's tables from a probe run's rows (``intact.probes``), written as intact.json and
intact.md in the run directory:

* Table 1: the subcategories as columns; intention, grasp, success (and the wrong-object rate)
  as rows, each a percentage with its 95 % Wilson interval, and the paper's published rows
  beside ours (config/intact/paper_table1.json: another simulator, marked as such);
* the intention-success gap per subcategory;
* Appendix C's per-probe table;
* Table 2's deltas: each language or commonsense variant against the original probe of the
  same base task (points, with Newcombe's 95 % interval);
* the wrong-object rate of the commonsense cases, and which object moved.

Rows of failed episodes (the infrastructure, not the policy) are left out and counted. Pure
logic, no rclpy.
"""
from __future__ import annotations

import json
from pathlib import Path

from vla_bridge.benchmarks.intact.probes import (SUBCATEGORIES, VARIANT_SUBCATEGORIES, Probe)
from vla_bridge.benchmarks.libero.protocol import drop_interval, wilson
from vla_bridge.benchmarks.result_rows import counted
from vla_bridge.paths import config_path

METRICS = (("intention", "intention_correct"), ("grasp", "grasp_success"),
           ("success", "task_success"), ("wrong object", "wrong_object_attempt"))
PAPER_FILE = "intact/paper_table1.json"


def _rate(rows: list[dict], key: str) -> dict:
    k = sum(bool(r["intact"][key]) for r in rows)
    n = len(rows)
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else None, "ci95": [lo, hi]}


def summarize(rows: list[dict], probes: list[Probe]) -> dict:
    """intact.json's content (``probes``: RoboFollow's ``Probe``s or LIBERO's ``LiberoProbe``s): per subcategory and per probe the four rates, Table 2's deltas
    and the commonsense cases' wrong objects."""
    scored = [r for r in counted(rows) if isinstance(r.get("intact"), dict)]
    by_probe: dict[str, list[dict]] = {}
    for r in scored:
        by_probe.setdefault(r["task_id"], []).append(r)
    subcats = {}
    for _, sub, title in SUBCATEGORIES:
        chosen = [r for p in probes if p.subcategory == sub for r in by_probe.get(p.id, [])]
        if chosen:
            subcats[sub] = {"title": title, "episodes": len(chosen),
                            **{name: _rate(chosen, key) for name, key in METRICS}}
    per_probe = {p.id: {"subcategory": p.subcategory, "base": p.base,
                        "instruction": p.instruction, "source": p.source_object,
                        **{name: _rate(by_probe[p.id], key) for name, key in METRICS},
                        "wrong_objects": sorted({r["intact"].get("wrong_object") for r in
                                                 by_probe[p.id]} - {None})}
                 for p in probes if by_probe.get(p.id)}
    originals = {p.base: p.id for p in probes if p.subcategory == "original"}
    deltas = []
    for p in probes:
        base_id = originals.get(p.base)
        if p.subcategory not in VARIANT_SUBCATEGORIES or base_id not in per_probe \
                or p.id not in per_probe:
            continue
        entry = {"probe": p.id, "subcategory": p.subcategory, "original": base_id}
        for name, _ in METRICS[:3]:
            b, v = per_probe[base_id][name], per_probe[p.id][name]
            drop, lo, hi = drop_interval(b["k"], b["n"], v["k"], v["n"])
            entry[name] = {"delta_points": -100 * drop, "ci95_points": [-100 * hi, -100 * lo]}
        deltas.append(entry)
    return {"subcategories": subcats, "probes": per_probe, "table2_deltas": deltas,
            "failed_episodes": len(rows) - len(scored)}


def _pct(cell: dict) -> str:
    if not cell["n"]:
        return "-"
    lo, hi = cell["ci95"]
    return f"{100 * cell['rate']:.0f} [{100 * lo:.0f}-{100 * hi:.0f}]"


def _points(x: float) -> str:
    """Signed whole points; a rounded zero is "+0", never "-0"."""
    return f"{round(x):+d}"


def paper_rows() -> dict:
    return json.loads(config_path(PAPER_FILE).read_text(encoding="utf-8"))


def markdown(summary: dict) -> str:
    subs = summary["subcategories"]
    cols = [s for _, s, _ in SUBCATEGORIES if s in subs]
    lines = ["## INT-ACT probes: Table 1 (percent of episodes, 95 % Wilson interval)", "",
             "| metric | " + " | ".join(subs[c]["title"] for c in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for name, _ in METRICS:
        lines.append(f"| {name} | " + " | ".join(_pct(subs[c][name]) for c in cols) + " |")
    lines.append("| episodes | " + " | ".join(str(subs[c]["episodes"]) for c in cols) + " |")
    gap = [_points(100 * (subs[c]["intention"]["rate"] - subs[c]["success"]["rate"]))
           for c in cols]
    lines += ["| intention - success (points) | " + " | ".join(gap) + " |", ""]
    paper = paper_rows()
    index = [paper["columns"].index(c) for c in cols]
    lines += ["Published rows (INT-ACT paper, Table 1: SimplerEnv's WidowX scenes, **another "
              "simulator**; the columns match by category, not by task):", "",
              "| model | metric | " + " | ".join(subs[c]["title"] for c in cols) + " |",
              "|---|---|" + "---|" * len(cols)]
    for model, metrics in paper["rows"].items():
        for metric in ("intention", "success"):
            lines.append(f"| {model} | {metric} | "
                         + " | ".join(f"{metrics[metric][i]:g}" for i in index) + " |")
    lines += ["", "### Per probe (Appendix C)", "",
              "| probe | subcategory | intention | grasp | success | wrong object |",
              "|---|---|---|---|---|---|"]
    for pid, p in summary["probes"].items():
        wrong = _pct(p["wrong object"]) + (f" ({', '.join(p['wrong_objects'])})"
                                           if p["wrong_objects"] else "")
        lines.append(f"| {pid} | {p['subcategory']} | {_pct(p['intention'])} | "
                     f"{_pct(p['grasp'])} | {_pct(p['success'])} | {wrong} |")
    if summary["table2_deltas"]:
        lines += ["", "### Table 2: variants against their original (points, 95 % interval)",
                  "", "| probe | subcategory | original | intention | grasp | success |",
                  "|---|---|---|---|---|---|"]
        for d in summary["table2_deltas"]:
            cells = [f"{_points(d[m]['delta_points'])} [{_points(d[m]['ci95_points'][0])}, "
                     f"{_points(d[m]['ci95_points'][1])}]" for m in ("intention", "grasp", "success")]
            lines.append(f"| {d['probe']} | {d['subcategory']} | {d['original']} | "
                         + " | ".join(cells) + " |")
    common = [s for s in ("commonsense", "commonsense_distractor") if s in subs]
    if common:
        lines += ["", "Wrong-object attempts, commonsense cases: " + "; ".join(
            f"{subs[s]['title']} {_pct(subs[s]['wrong object'])} %" for s in common)]
    if summary["failed_episodes"]:
        lines.append(f"\n{summary['failed_episodes']} failed episode(s) left out "
                     "(results.jsonl says why).")
    return "\n".join(lines)


def write(run_dir: str | Path, rows: list[dict], probes: list[Probe]) -> str:
    """Write intact.json and intact.md into ``run_dir``; the markdown, to print."""
    summary = summarize(rows, probes)
    text = markdown(summary) if summary["subcategories"] else "INT-ACT probes: no episode scored"
    path = Path(run_dir)
    (path / "intact.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (path / "intact.md").write_text(text + "\n", encoding="utf-8")
    return text
