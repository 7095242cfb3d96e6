"""The report as text: ``report.md`` (one Markdown section per part of the report dict) and
the short table ``vla-bridge report`` prints on the terminal."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Sequence

from vla_bridge.evaluation.provenance import describe
from vla_bridge.reporting.common import LEVELS, METRICS, group_key

RUN_ARGUMENTS = ("policy", "scene", "levels", "tasks", "rounds", "base_seed", "lock_step",
                 "empty_language")  # the run.json arguments the header names


def _fmt(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _fmt_ci(cell: Mapping) -> str:
    if cell.get("lo") is None:
        return f"{_fmt(cell['value'])} (n/a)"
    return f"{_fmt(cell['value'])} [{_fmt(cell['lo'])}, {_fmt(cell['hi'])}]"


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return lines


# =============================================================================== sections

def provenance_line(run: dict) -> str:
    """What produced the run (run.json's provenance), with its note when there is one."""
    note = run.get("provenance_note")
    return describe(run.get("provenance")) + (f" (note: {note})" if note else "")


def _header(report: dict) -> list[str]:
    run, total = report["run"], report["groups"]["all"]
    args = run.get("arguments") or {}
    out = [f"# Run report: {Path(report['run_dir']).name}", ""]
    out.append(f"- run directory: `{report['run_dir']}`; status: {run.get('status') or 'unknown'}"
               f"; generated {report['generated']}")
    out.append(f"- produced by: {provenance_line(run)}")
    if args:
        out.append("- arguments: " + ", ".join(f"{k}={args[k]}" for k in RUN_ARGUMENTS
                                               if k in args and args[k] != ""))
    failed = f", {total['n_failed']} failed (scored 0)" if total["n_failed"] else ""
    out.append(f"- {total['n_episodes']} episodes of {total['n_tasks']} tasks{failed}")
    if _sections_line(report.get("sections")):
        out.append(_sections_line(report["sections"]))
    return out + [""]


def _sections_line(sections: Mapping | None) -> str:
    """Which optional sections the report has; they stay from one call to the next."""
    if not sections:
        return ""
    parts = [f"paper {sections['paper']}" if sections.get("paper") else "",
             f"compare `{sections['compare']}`" if sections.get("compare") else "",
             "plots" if sections.get("plots") else "",
             f"videos of {sections['videos']['count']} episode(s)" if sections.get("videos")
             else ""]
    parts = [p for p in parts if p]
    if not parts:
        return ""
    return ("- sections: " + ", ".join(parts) + " (each call adds its flags to these; "
            "`vla-bridge report RUN --reset` starts over)")


def _table1(report: dict) -> list[str]:
    """Table-1 style: per scene, rows ours / paper, columns level x metric."""
    table, paper = report["groups"], report.get("paper")
    out = ["## Table 1 (percent)", ""]
    scenes = sorted({v["scene"] for g, v in table.items() if g != "all"})
    for scene in scenes:
        levels = [lv for lv in LEVELS if group_key(scene, lv) in table]
        header = [scene] + [f"{lv} {m}" for lv in levels for m in METRICS]
        rows = [["ours"] + [_fmt(table[group_key(scene, lv)][m]["value"])
                            for lv in levels for m in METRICS]]
        if paper:
            rows.append([f"paper {paper['model']}"] +
                        [_fmt(paper["cells"].get(group_key(scene, lv), {}).get(m))
                         for lv in levels for m in METRICS])
        out += _md_table(header, rows) + [""]
    return out


def _paper_columns(paper: dict, group: str) -> list[str]:
    cell = paper["cells"].get(group)
    outside = paper["outside_ci"].get(group)
    return [" / ".join(_fmt(cell[m]) for m in METRICS) if cell else "–",
            "–" if not cell else "n/a" if outside is None else ", ".join(outside) or "none"]


def _intervals(report: dict) -> list[str]:
    paper, m = report.get("paper"), report["method"]
    task = report["groups"]["all"].get("task")  # what the rows' own scores are against
    out = ["## Per scene/level with 95% intervals" + (f" ({task} task)" if task else ""), ""]
    header = ["group", "episodes", "tasks", "IS %", "ES %", "CR %", "CR micro %", "IS full %",
              "ES full %"]
    if paper:
        header += [f"paper {paper['model']} IS / ES / CR", "paper outside our CI"]
    rows = []
    for group, v in report["groups"].items():
        row = [group, v["n_episodes"], v["n_tasks"], _fmt_ci(v["IS"]), _fmt_ci(v["ES"]),
               _fmt_ci(v["CR"]), _fmt(v["CR_episode_micro"]), _fmt(v["IS_full_rate"]),
               _fmt(v["ES_full_rate"])]
        rows.append(row + (_paper_columns(paper, group) if paper else []))
    out += _md_table(header, rows)
    return out + ["", f"Intervals: {int(m['confidence'] * 100)}% percentile bootstrap over tasks "
                  f"(stratified by scene/level, {m['n_boot']} replicates, seed {m['seed']}); CR is "
                  "task-macro (RoboFollow's), \"CR micro\" the plain episode rate. "
                  "(n/a): fewer than 2 tasks.", ""]


def _per_task(report: dict) -> list[str]:
    """IS / ES / CR against each task, when the language and the cue task differ."""
    by_task = report.get("groups_by_task")
    if not by_task:
        return []
    out = ["## IS / ES / CR per task (the language and the cue named different tasks)", ""]
    header = ["task", "group", "episodes", "IS %", "ES %", "CR %"]
    rows = [[v["task"], g, v["n_episodes"], _fmt_ci(v["IS"]), _fmt_ci(v["ES"]), _fmt_ci(v["CR"])]
            for table in by_task.values() for g, v in table.items()]
    return out + _md_table(header, rows) + [""]


def _intact(report: dict) -> list[str]:
    intact = report.get("intact")
    if not intact:
        return []
    out = ["## INT-ACT rates (every metric against one task)", ""]
    header = ["task", "group", "episodes", "intention %", "grasp %", "task success %",
              "wrong object %", "intention-action gap"]
    by_task = intact.get("by_task") or {"": {"task": "", "groups": intact["groups"]}}
    rows = [[entry["task"], g, v["n_episodes"], _fmt(v["intention_correct_rate"]),
             _fmt(v["grasp_success_rate"]), _fmt(v["task_success_rate"]),
             _fmt(v["wrong_object_attempt_rate"]), _fmt(v["intention_action_gap"])]
            for entry in by_task.values() for g, v in entry["groups"].items()]
    out += _md_table(header, rows)
    if intact["n_without_file"]:
        out.append(f"\n{intact['n_without_file']} episode(s) have no episode file and are not "
                   "included.")
    out += [f"- could not re-score {e}" for e in intact["errors"]]
    return out + [""]


from vla_bridge.evaluation.cues.metrics import VQA_ROWS  # noqa: E402 - Part I-A rows of Table 2


def _family_rows(metrics: dict, keys, fams: list[str]) -> list[list[str]]:
    """One Table 2 row per (key, label): each family, Avg. (macro), All (pooled)."""
    return [[label] + [_fmt(metrics["by_family"].get(f, {}).get(key)) for f in fams]
            + [_fmt(metrics["average"].get(key)), _fmt(metrics["overall"].get(key))]
            for key, label in keys]


def _vqa_note(vqa: dict) -> str:
    o = vqa["overall"]
    return (f"VQA rows: Part I-A answers in `{vqa['dir']}/` ({', '.join(vqa['backends'])}; "
            f"{o['instances']} instances, {o['cue_free']} detection questions on cue-free "
            "images); VQA is the mean of the four stage accuracies (the paper's Table 2 "
            "score), FCA counts instances with all four right; chance (uniform guess): VQA "
            f"{_fmt(o['chance']['vqa'])}, FCA {_fmt(o['chance']['fca'], 2)}.")


def _protocol_note(cues: dict) -> str:
    from vla_bridge.benchmarks.vifo.protocols import METRICS as CUE_METRICS
    counts = ", ".join(f"{p or 'none'} {c['episodes']} ({c['failed']} failed)"
                       for p, c in cues["episodes"].items())
    by_task: dict[str, list[str]] = {}  # the task each metric is against
    for key, label in CUE_METRICS:
        by_task.setdefault((cues.get("tasks") or {}).get(key, "?"), []).append(label)
    tasks = "; ".join(f"{task}: {', '.join(labels)}" for task, labels in by_task.items())
    instances = ", ".join(f"{k} {n}" for k, n in (cues.get("instances") or {}).items())
    shown = f" Cue instances (task x seed) per family/variant: {instances}." if instances else ""
    skipped = cues.get("skipped_tasks") or {}
    if skipped:
        reasons = "; ".join(sorted(set(skipped.values())))
        shown += (f" {len(skipped)} selected tasks were left out, their variant cannot show "
                  f"what they need ({reasons}; run.json lists them).")
    return (f"Episodes per protocol: {counts}.{shown} Avg. is the mean over families, All pools "
            f"every episode; a failed episode counts as not completed. Tasks: {tasks}.")


def _cues(report: dict) -> list[str]:
    cues = report.get("cues")
    if not cues:
        return []
    from vla_bridge.benchmarks.vifo.protocols import FAMILY_LABELS
    from vla_bridge.benchmarks.vifo.protocols import METRICS as CUE_METRICS
    out = ["## Visual-cue protocols (LIBERO-VIFO Table 2 style, percent)", ""]
    vqa = cues.get("vqa")
    fams = sorted(set(cues["by_family"]) | set((vqa or {}).get("by_family", {})))
    header = ["metric"] + [FAMILY_LABELS.get(f, f) for f in fams] + ["Avg.", "All"]
    rows = _family_rows(vqa, VQA_ROWS, fams) if vqa else []
    rows += _family_rows(cues, CUE_METRICS, fams) if cues["episodes"] else []
    notes = ([_vqa_note(vqa)] if vqa else []) + ([_protocol_note(cues)] if cues["episodes"] else [])
    return out + _md_table(header, rows) + [""] + [" ".join(notes), ""]


def _latency(report: dict) -> list[str]:
    latency = report.get("policy_latency")
    if not latency:
        return []
    out = ["## Policy latency per call (ms)", "",
           "inference: the backend's predict call; overhead: the policy node's own share "
           "(observation assembly, validation, scheduling, publishing); the rest is the "
           "node's breakdown (`latency_ms`).", ""]
    return out + _md_table(["timing", "calls", "mean", "p50", "p95", "max"],
                           [[k, m["calls"], f"{m['mean']:.3f}", f"{m['p50']:.3f}",
                             f"{m['p95']:.3f}", f"{m['max']:.3f}"]
                            for k, m in latency.items()]) + [""]


def _drop_cell(cell: Mapping) -> str:
    if cell["lo"] is None:
        return f"{_fmt(cell['drop'])} (n/a)"
    return f"{_fmt(cell['drop'])} [{_fmt(cell['lo'])}, {_fmt(cell['hi'])}]"


def _compare(report: dict) -> list[str]:
    compare = report.get("compare")
    if not compare:
        return []
    note = f" ({compare['note']})" if compare["note"] else ""
    out = ["## Empty language: drop (normal - empty), percent points", "",
           f"normal: `{compare['normal_run']}`, empty language: `{compare['empty_run']}`" + note,
           ""]
    header = (["group", "tasks"] + [f"{m} normal / empty" for m in METRICS]
              + [f"{m} drop [95% CI]" for m in METRICS] + ["paper π₀.₅ drop IS / ES / CR"])
    rows = []
    for g, v in compare["groups"].items():
        pd = v.get("paper_drop")
        rows.append([g, v["n_tasks"]]
                    + [f"{_fmt(v[m]['normal'])} / {_fmt(v[m]['empty'])}" for m in METRICS]
                    + [_drop_cell(v[m]) for m in METRICS]
                    + [" / ".join(_fmt(pd[m]) for m in METRICS) if pd else "–"])
    return out + _md_table(header, rows) + [""]


def _plots(report: dict) -> list[str]:
    if not report.get("plots"):
        return []
    return ["## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in report["plots"]] + [""]


def _idle_cut(v: Mapping) -> str:
    """The idle tail left out of a video: frames, seconds and share of the episode."""
    cut = v.get("idle_cut_frames") or 0
    if not cut:
        return "none"
    return f"{cut} frames, {v['idle_cut_s']:.1f} s ({100 * cut / v['episode_frames']:.0f}%)"


def _video_row(v: Mapping) -> list[str]:
    return [v["episode"], f"[{Path(v['path']).name}]({v['path']})",
            v.get("view", "raw") + (f" (cue: {v['cue']})" if v.get("cue") else ""),
            f"{v['frames']} ({v['episode_frames']})", _idle_cut(v),
            f"{v['width']}x{v['height']}", v.get("codec") or v["format"],
            f"{v['render_s']:.1f}", f"{v['max_tcp_drift_m']:.1e}", v["note"] or ""]


def _videos(report: dict) -> list[str]:
    if not report.get("videos"):
        return []
    header = ["episode", "video", "view", "frames (of episode)", "idle tail cut", "size",
              "codec", "render s", "replay drift m", "note"]
    videos = report["videos"]
    cut = sum(v.get("idle_cut_frames") or 0 for v in videos)
    total = sum(v["episode_frames"] for v in videos)
    summary = (f"The videos stop a second after the last motion of an arm or object: "
               f"{cut} of {total} episode frames ({100 * cut / total:.0f}%) were idle tail "
               "and are cut; the last frame of a cut video says so." if cut else "")
    return (["## Videos", ""] + _md_table(header, [_video_row(v) for v in videos]) + [""]
            + ([summary, ""] if summary else []))


def _pilot(report: dict) -> list[str]:
    """The run's real-robot pilot report (operator-scored), as pilot_report.md has it."""
    pilot = report.get("pilot")
    if not pilot:
        return []
    note = f" ({pilot['note']})" if pilot.get("note") else ""
    body = [("#" + line) if line.startswith("### ") else line
            for line in pilot["markdown"].rstrip().splitlines()]  # below this section's level
    return (["## Real-robot pilot (operator-scored)", "",
             f"From [{pilot['path']}]({pilot['path']}){note}, which the operator console "
             "writes.", ""] + body + [""])


def _problems(report: dict) -> list[str]:
    if not report.get("errors"):
        return []
    return ["## Problems", ""] + [f"- {e}" for e in report["errors"]] + [""]


_SECTIONS = (_header, _table1, _intervals, _per_task, _intact, _cues, _latency, _compare, _pilot,
             _plots, _videos, _problems)


# =============================================================================== documents

def format_markdown(report: dict) -> str:
    """report.md: every section the report dict has, in a fixed order."""
    return "\n".join(line for section in _SECTIONS for line in section(report))


def format_console(report: dict) -> str:
    """What produced the run and a short plain-text table, for the terminal."""
    paper = report.get("paper")
    head = (f"{'group':<12}{'eps':>5}{'tasks':>6}  "
            + "".join(f"{m + ' % [95% CI]':<22}" for m in METRICS))
    if paper:
        head += f"paper {paper['model']} IS/ES/CR"
    lines = [f"run: {provenance_line(report['run'])}", head, "-" * len(head)]
    for group, v in report["groups"].items():
        line = (f"{group:<12}{v['n_episodes']:>5}{v['n_tasks']:>6}  " +
                "".join(f"{_fmt_ci(v[m]):<22}" for m in METRICS))
        if paper and group in paper["cells"]:
            line += " / ".join(_fmt(paper["cells"][group][m]) for m in METRICS)
        lines.append(line)
    return "\n".join(lines)
