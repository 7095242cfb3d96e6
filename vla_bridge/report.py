"""`vla-bridge report`: turn a run directory into RoboFollow-style tables, plots and videos.

From ``results.jsonl`` (one row per episode) it computes, per scene/level and overall:

* **IS, ES, CR in percent** with the same point estimates as ``summary.json``
  (``scoring.common.summarize``: mean Intent/Execution Score over episodes, task-macro
  Completion Rate), each with a **95% interval from a task-level (cluster) bootstrap**
  (see "Intervals" below);
* beside them, optionally, the paper's Table 1 figures for one model
  (``config/robofollow/paper_table1.json``, default model π₀.₅);
* INT-ACT episode rates (intention / grasp / task success / wrong object), re-scored from the
  saved episode files (``episodes/<scene>/<task>_r<round>.npz``) when they are present;
* an empty-language comparison against a second run directory: the drop per scene/level with
  a paired task-bootstrap interval, next to the paper's π₀.₅ drop;
* PNG plots (matplotlib, Agg) of IS/ES/CR from L0 to L3 per scene;
* replay videos: a saved episode's executed commands are replayed in the MuJoCo backend from
  the same scene, layout and seed (the lock-step sim is deterministic; the replay checks the
  TCP positions against the recorded ones), rendered from ``cam_high`` with the instruction,
  frame index and scores drawn in (MP4 via OpenCV ``mp4v``, animated GIF via PIL otherwise).
  When the episode ran under a visual-cue protocol (its row has a ``cue`` with a family and a
  cue task), the video shows by default what the policy saw: the evaluator's CueSpec is
  rebuilt (``cues.replay.episode_cue``) and every replayed frame goes through the overlay's
  own conditioning (``cues.replay.CueConditioner``: anchors re-resolved in the replayed world
  state, wrist cameras from the replayed joints, the same ghost path). ``--video-view``
  chooses ``cued``, ``raw`` or ``both`` (side by side, raw left). A cue placed in the scene
  (``cue_placement`` scene) is rebuilt as the sim node's card in the replay's reset instead:
  the sim images show it, so there is one view.

Everything lands in the run directory: ``report.md``, ``report.json``, ``plots/``, ``videos/``.
Numbers in ``report.json`` are percentages (0-100), like the paper's.

Intervals
---------
RoboFollow's CR is task-macro: the mean over tasks of each task's completion rate over its
rounds. Rounds of one task are not independent draws (same task, same layout), and the
estimand weights tasks, not episodes, so a Wilson interval over episodes would be too narrow
and centred on the wrong (episode-micro) quantity. We therefore resample **tasks** with
replacement, stratified by scene/level (each stratum keeps its number of tasks, so the "all"
row keeps the suite's level mix), recompute the statistic exactly as the point estimate
(CR: mean of per-task rates; IS/ES: mean over the resampled tasks' episodes) and take the
2.5th/97.5th percentiles of ``n_boot`` (default 2000) replicates drawn from
``numpy.random.default_rng(seed)`` (default seed 0; each group gets its own fixed stream,
so intervals do not change when other groups are added). The same method is used for IS and
ES, and paired (same resampled tasks in both runs) for the empty-language drop.
Limits: a group with fewer than 2 tasks gets no interval; percentile intervals from few
tasks (< ~10) are too narrow; with 1 round per task the interval still reflects only
between-task spread.

Pure logic apart from the optional MuJoCo/OpenCV/matplotlib parts, which are imported
lazily; no rclpy.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import unicodedata
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from vla_bridge.evaluation import RunDirectory

PAPER_FILE = "robofollow/paper_table1.json"
DEFAULT_PAPER_MODEL = "π₀.₅"
EMPTY_LANGUAGE_MODEL = "π₀.₅ · empty language"  # the paper's control row for π₀.₅
LEVELS = ("L0", "L1", "L2", "L3")
METRICS = ("IS", "ES", "CR")
METRIC_NAMES = {"IS": "Intent Score", "ES": "Execution Score", "CR": "Completion Rate"}
DEFAULT_BOOT = 2000
DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
VIDEO_CAMERA = "cam_high"
VIDEO_VIEWS = ("cued", "raw", "both")  # what a replay video shows; default: cued if the episode had a cue
REPLAY_DRIFT_WARN_M = 1e-3  # replayed TCP further than this from the record: not the same episode


class ReportError(RuntimeError):
    """A problem with the inputs (no results, unknown model); the CLI exits 2."""


# =============================================================================== run data

def load_rows(run_dir: str | Path) -> list[dict]:
    """Result rows of a run directory; a repeated key keeps its first row."""
    rows, seen = [], set()
    for row in RunDirectory(run_dir).results():
        key = row.get("key")
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        rows.append(row)
    return rows


def load_run_info(run_dir: str | Path) -> dict:
    path = RunDirectory(run_dir).run_path
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def _group_key(scene: str, level: str) -> str:
    return f"{scene}/{level}"


def _level_order(group: str) -> tuple:
    if group == "all":
        return ("~",)  # after every scene
    scene, _, level = group.partition("/")
    return (scene, LEVELS.index(level) if level in LEVELS else 99, level)


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100.0 * float(x), 4)


# =============================================================================== bootstrap

@dataclass
class _TaskArrays:
    """Per-task sums of one set of rows, in a fixed task order."""
    keys: list[tuple[str, str, str]]  # (scene, level, task_id)
    n: np.ndarray  # episodes per task
    is_sum: np.ndarray
    es_sum: np.ndarray
    cr_rate: np.ndarray  # completion rate of the task over its episodes


def _task_key(row: Mapping) -> tuple[str, str, str]:
    return (str(row.get("scene")), str(row.get("level")), str(row.get("task_id")))


def _task_arrays(rows: Iterable[Mapping], keys: Sequence[tuple[str, str, str]] | None = None) -> _TaskArrays:
    acc: dict[tuple, list[float]] = {}
    for r in rows:
        a = acc.setdefault(_task_key(r), [0, 0.0, 0.0, 0])
        a[0] += 1
        a[1] += float(r.get("intent_score") or 0.0)
        a[2] += float(r.get("exec_score") or 0.0)
        a[3] += bool(r.get("complete"))
    keys = sorted(acc) if keys is None else list(keys)
    vals = np.array([acc[k] for k in keys], dtype=float).reshape(len(keys), 4)
    return _TaskArrays(keys, vals[:, 0], vals[:, 1], vals[:, 2], vals[:, 3] / np.maximum(vals[:, 0], 1))


def _resample(keys: Sequence[tuple[str, str, str]], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, n_tasks) indices: tasks drawn with replacement within each scene/level stratum."""
    strata: dict[tuple[str, str], list[int]] = {}
    for i, (scene, level, _) in enumerate(keys):
        strata.setdefault((scene, level), []).append(i)
    blocks = []
    for stratum in sorted(strata):
        members = np.asarray(strata[stratum])
        blocks.append(members[rng.integers(0, len(members), size=(n_boot, len(members)))])
    return np.concatenate(blocks, axis=1)


def _replicates(t: _TaskArrays, idx: np.ndarray) -> dict[str, np.ndarray]:
    """IS, ES (episode means) and CR (task-macro) of every bootstrap replicate."""
    n = t.n[idx].sum(axis=1)
    return {"IS": t.is_sum[idx].sum(axis=1) / n, "ES": t.es_sum[idx].sum(axis=1) / n,
            "CR": t.cr_rate[idx].mean(axis=1)}


def _group_rng(seed: int, group: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(group.encode())])


def _quantiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def task_bootstrap(rows: Sequence[Mapping], n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                   confidence: float = DEFAULT_CONFIDENCE,
                   group: str = "") -> dict[str, tuple[float, float] | None]:
    """Percentile intervals (fractions) of IS, ES and CR from the stratified task bootstrap.

    None for every metric when the rows hold fewer than 2 tasks. `group` names the stream of
    random numbers (so each scene/level has its own, reproducible one).
    """
    t = _task_arrays(rows)
    if len(t.keys) < 2:
        return {m: None for m in METRICS}
    reps = _replicates(t, _resample(t.keys, n_boot, _group_rng(seed, group)))
    return {m: _quantiles(reps[m], confidence) for m in METRICS}


# =============================================================================== table

def group_rows(rows: Iterable[Mapping]) -> dict[str, list[Mapping]]:
    """Rows per "scene/level" (sorted by scene, then L0..L3) plus "all"."""
    rows = list(rows)
    groups: dict[str, list[Mapping]] = {}
    for r in rows:
        groups.setdefault(_group_key(r.get("scene"), r.get("level")), []).append(r)
    out = {g: groups[g] for g in sorted(groups, key=_level_order)}
    if rows:
        out["all"] = rows
    return out


def results_table(rows: Sequence[Mapping], n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                  confidence: float = DEFAULT_CONFIDENCE) -> dict[str, dict]:
    """Per group: counts and IS / ES / CR in percent, each {"value", "lo", "hi"}.

    Point estimates are ``scoring.common.summarize``'s (the numbers of summary.json).
    """
    from vla_bridge.scoring.common import summarize
    summary = summarize(rows)
    table = {}
    for group, members in group_rows(rows).items():
        s = summary[group]
        ci = task_bootstrap(members, n_boot, seed, confidence, group)
        point = {"IS": s["mean_intent_score"], "ES": s["mean_exec_score"], "CR": s["completion_rate"]}
        scene, _, level = group.partition("/")
        table[group] = {
            "scene": scene if group != "all" else "all", "level": level or "all",
            "n_episodes": s["n_episodes"], "n_tasks": s["n_tasks"],
            "n_failed": sum(1 for r in members if r.get("status", "ok") != "ok"),
            **{m: {"value": _pct(point[m]), "lo": _pct(ci[m][0]) if ci[m] else None,
                   "hi": _pct(ci[m][1]) if ci[m] else None} for m in METRICS},
            "CR_episode_micro": _pct(s["episode_micro_completion_rate"]),
            "IS_full_rate": _pct(s["intent_full_rate"]), "ES_full_rate": _pct(s["exec_full_rate"]),
        }
    return table


# =============================================================================== paper

def load_paper(path: str | Path | None = None) -> dict:
    """config/robofollow/paper_table1.json (written by tools/import_paper_table.py)."""
    if path is None:
        from vla_bridge.paths import config_path
        path = config_path(PAPER_FILE)
    return json.loads(Path(path).read_text(encoding="utf-8"))


def model_key(name: str) -> str:
    """Loose spelling of a model name: 'pi05', 'PI0.5', 'π₀.₅' all give 'pi05'."""
    text = unicodedata.normalize("NFKC", name).lower().replace("π", "pi")
    return "".join(ch for ch in text if ch.isalnum())


def paper_model(paper: dict, name: str) -> dict:
    """The paper entry of model `name` (exact, or by model_key); ReportError lists the models."""
    models = paper["models"]
    for entry in models:
        if entry["model"] == name:
            return entry
    matches = [e for e in models if model_key(e["model"]) == model_key(name)]
    if len(matches) == 1:
        return matches[0]
    listing = ", ".join(repr(e["model"]) for e in models)
    raise ReportError(f"no model {name!r} in the paper's Table 1; models: {listing} "
                      "(ASCII spellings such as pi05 or 'pi05 empty language' work too)")


def paper_cells(entry: dict) -> dict[str, dict[str, float]]:
    """{"scene1/L0": {"IS": 99.1, "ES": 98.5, "CR": 98.8}, ...} (percent)."""
    return {_group_key(scene, level): dict(cell)
            for scene, levels in entry["results"].items() for level, cell in levels.items()}


def beside_paper(table: dict[str, dict], entry: dict) -> dict:
    """The paper's cells for the groups we have, and which paper values lie outside our CI."""
    cells = paper_cells(entry)
    out: dict[str, Any] = {"model": entry["model"], "family": entry["family"], "cells": {},
                           "outside_ci": {}, "delta": {}}
    for group, ours in table.items():
        if group not in cells:
            continue
        paper = cells[group]
        out["cells"][group] = paper
        out["delta"][group] = {m: round(ours[m]["value"] - paper[m], 4) for m in METRICS}
        # None: we have no interval (fewer than 2 tasks)
        out["outside_ci"][group] = None if ours["IS"]["lo"] is None else [
            m for m in METRICS if not ours[m]["lo"] - 1e-9 <= paper[m] <= ours[m]["hi"] + 1e-9]
    return out


# =============================================================================== INT-ACT

def intact_rates(run_dir: str | Path, rows: Sequence[Mapping]) -> dict | None:
    """INT-ACT rates re-scored from the episode files; None when the run saved none."""
    from vla_bridge.recording import load_episode
    from vla_bridge.scoring.intact import intact_metrics, summarize_intact
    from vla_bridge.tasks import load_suite
    run_dir = Path(run_dir)
    present = [r for r in rows if r.get("episode_file") and (run_dir / r["episode_file"]).is_file()]
    if not present:
        return None
    suite = load_suite()
    scored, errors = [], []
    for r in present:
        try:
            record, _meta = load_episode(run_dir / r["episode_file"])
            metrics = intact_metrics(suite.get(r["task_id"]), record, bool(r.get("complete")))
        except Exception as exc:  # one bad file must not sink the report
            errors.append(f"{r['episode_file']}: {type(exc).__name__}: {exc}")
            continue
        scored.append({"scene": r["scene"], "level": r["level"], "key": r.get("key"),
                       **{k: metrics[k] for k in ("intention_correct", "grasp_success",
                                                  "task_success", "wrong_object_attempt",
                                                  "wrong_object")}})
    groups = {}
    for group, m in (summarize_intact(scored).items() if scored else []):
        groups[group] = {k: (_pct(v) if k != "n_episodes" else v) for k, v in m.items()}
    ordered = {g: groups[g] for g in sorted(groups, key=_level_order)}
    return {"n_episodes_scored": len(scored), "n_without_file": len(rows) - len(present),
            "groups": ordered, "episodes": scored, "errors": errors}


# =============================================================================== empty language

def _empty_language(info: dict) -> bool | None:
    value = (info.get("arguments") or {}).get("empty_language")
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return None if value is None else bool(value)


def compare_runs(normal_rows: Sequence[Mapping], empty_rows: Sequence[Mapping],
                 n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED,
                 confidence: float = DEFAULT_CONFIDENCE, paper: dict | None = None) -> dict[str, dict]:
    """Drop (normal - empty language) of IS / ES / CR per group, percent points.

    Only tasks present in both runs count (a task-paired comparison); the interval is the
    paired stratified task bootstrap (the same resampled tasks in both runs). With `paper`
    (the loaded Table 1), the paper's π₀.₅ drop is added per group.
    """
    normal_groups, empty_groups = group_rows(normal_rows), group_rows(empty_rows)
    paper_drop = {}
    if paper is not None:
        full = paper_cells(paper_model(paper, DEFAULT_PAPER_MODEL))
        ctrl = paper_cells(paper_model(paper, EMPTY_LANGUAGE_MODEL))
        paper_drop = {g: {m: round(full[g][m] - ctrl[g][m], 4) for m in METRICS} for g in full}
    out = {}
    for group in normal_groups:
        if group not in empty_groups:
            continue
        common = sorted({_task_key(r) for r in normal_groups[group]} &
                        {_task_key(r) for r in empty_groups[group]})
        if not common:
            continue
        keep = set(common)
        a = _task_arrays([r for r in normal_groups[group] if _task_key(r) in keep], common)
        b = _task_arrays([r for r in empty_groups[group] if _task_key(r) in keep], common)
        point_a = _replicates(a, np.arange(len(common))[None, :])
        point_b = _replicates(b, np.arange(len(common))[None, :])
        entry: dict[str, Any] = {"n_tasks": len(common), "n_episodes_normal": int(a.n.sum()),
                                 "n_episodes_empty": int(b.n.sum())}
        if len(common) >= 2:
            idx = _resample(common, n_boot, _group_rng(seed, "compare:" + group))
            reps_a, reps_b = _replicates(a, idx), _replicates(b, idx)
        for m in METRICS:
            drop = float(point_a[m][0] - point_b[m][0])
            lo = hi = None
            if len(common) >= 2:
                lo, hi = _quantiles(reps_a[m] - reps_b[m], confidence)
            entry[m] = {"normal": _pct(point_a[m][0]), "empty": _pct(point_b[m][0]),
                        "drop": _pct(drop), "lo": _pct(lo), "hi": _pct(hi)}
        if group in paper_drop:
            entry["paper_drop"] = paper_drop[group]
        out[group] = entry
    return out


# =============================================================================== plots

def plot_levels(table: dict[str, dict], out_dir: str | Path, paper: dict | None = None,
                empty_table: dict[str, dict] | None = None, title: str = "") -> list[Path]:
    """One PNG per scene: IS, ES, CR (percent) over L0..L3; ours with 95% interval bars, the
    paper's model (dashed) and an empty-language run (dotted) when given."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    scenes = sorted({v["scene"] for g, v in table.items() if g != "all"})
    cells = paper_cells(paper) if paper else {}
    paths = []
    for scene in scenes:
        fig, axes = plt.subplots(1, 3, figsize=(11, 3.9), sharey=True)
        for ax, metric in zip(axes, METRICS):
            x, y, err = [], [], [[], []]
            for i, level in enumerate(LEVELS):
                cell = table.get(_group_key(scene, level))
                if cell is None:
                    continue
                v = cell[metric]
                x.append(i)
                y.append(v["value"])
                err[0].append(v["value"] - v["lo"] if v["lo"] is not None else 0.0)
                err[1].append(v["hi"] - v["value"] if v["hi"] is not None else 0.0)
            ax.errorbar(x, y, yerr=err, marker="o", capsize=4, label="ours (95% CI)", color="C0")
            if cells:
                ax.plot(range(len(LEVELS)), [cells[_group_key(scene, lv)][metric] for lv in LEVELS],
                        "s--", color="C1", label=f"paper: {paper['model']}")
            if empty_table:
                ex = [i for i, lv in enumerate(LEVELS) if _group_key(scene, lv) in empty_table]
                ey = [empty_table[_group_key(scene, LEVELS[i])][metric]["value"] for i in ex]
                if ex:
                    ax.plot(ex, ey, "^:", color="C2", label="ours, empty language")
            ax.set_title(f"{metric} ({METRIC_NAMES[metric]})", fontsize=10)
            ax.set_xticks(range(len(LEVELS)), LEVELS)
            ax.set_ylim(-3, 103)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("percent")
        handles, labels = axes[0].get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: not labels[i].startswith("ours ("))
        handles, labels = [handles[i] for i in order], [labels[i] for i in order]
        fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9, frameon=False)
        fig.suptitle(f"{scene}{' - ' + title if title else ''}", fontsize=11)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        path = out_dir / f"{scene}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths


# =============================================================================== videos

@dataclass
class VideoResult:
    episode: str  # the .npz, relative to the run directory when known
    path: str
    format: str  # "mp4" or "gif"
    frames: int  # frames written
    width: int
    height: int
    fps: float
    episode_frames: int  # frames in the record
    render_s: float  # wall time of replay + rendering + encoding
    max_tcp_drift_m: float  # max |replayed TCP - recorded TCP| over the rendered frames
    note: str = ""
    view: str = "raw"  # "raw", "cued" or "both" (raw | cued side by side)
    cue: str = ""  # the episode's cue (protocol | family / variant | cue task); "" without one
    cue_ms_per_frame: float | None = None  # mean cue conditioning time of a frame (cued views)


def _wrap(text: str, max_width: int, font, scale: float, thickness: int) -> list[str]:
    import cv2
    lines, current = [], ""
    for word in text.split():
        candidate = f"{current} {word}".strip()
        if current and cv2.getTextSize(candidate, font, scale, thickness)[0][0] > max_width:
            lines.append(current)
            current = word
        else:
            current = candidate
    return lines + ([current] if current else [])


class _Overlay:
    """Caption band above the (upscaled) camera image: instruction, then frame and scores.

    With a cue: a line (two when long) naming it (``cue``), and for side-by-side views a line
    of ``panels`` labels, one above each panel."""

    FONT_SCALE = 0.5
    LINE_H = 20

    def __init__(self, meta: dict, image_w: int, image_h: int, scale: int, cue: str = "",
                 panels: Sequence[str] = ()):
        import cv2
        self.cv2 = cv2
        self.font = cv2.FONT_HERSHEY_SIMPLEX
        self.w, self.h, self.scale = image_w * scale, image_h * scale, scale
        instruction = meta.get("instruction") or (
            "(no language instruction: the cue alone)" if cue
            else "(instruction withheld: empty language)")
        self.lines = _wrap(instruction, self.w - 16, self.font, self.FONT_SCALE, 1)[:3]
        self.cue_lines = _wrap(cue, self.w - 16, self.font, 0.42, 1)[:2] if cue else []
        self.panels = tuple(panels)
        complete = meta.get("complete")
        score = []
        if meta.get("intent_score") is not None:
            score.append(f"IS {float(meta['intent_score']):.2f}")
        if meta.get("exec_score") is not None:
            score.append(f"ES {float(meta['exec_score']):.2f}")
        if complete is not None:
            score.append(f"CR {'yes' if complete else 'no'}")
        self.scores = "  ".join(score)
        self.task = f"{meta.get('task_id', '?')} r{meta.get('round', '?')} seed {meta.get('seed', '?')}"
        extra = len(self.cue_lines) + bool(self.panels)
        self.band = self.LINE_H * (len(self.lines) + 2 + extra) + 8

    @property
    def size(self) -> tuple[int, int]:
        return self.w, self.h + self.band

    def compose(self, rgb: np.ndarray, index: int, last: int, t: float) -> np.ndarray:
        """RGB frame with the caption band on top."""
        cv2 = self.cv2
        image = rgb if self.scale == 1 else cv2.resize(rgb, (self.w, self.h), interpolation=cv2.INTER_LINEAR)
        frame = np.zeros((self.h + self.band, self.w, 3), dtype=np.uint8)
        frame[self.band:] = image
        y = self.LINE_H
        white, grey, green = (255, 255, 255), (190, 190, 190), (120, 230, 120)
        for line in self.lines:
            cv2.putText(frame, line, (8, y), self.font, self.FONT_SCALE, white, 1, cv2.LINE_AA)
            y += self.LINE_H
        for line in self.cue_lines:
            cv2.putText(frame, line, (8, y), self.font, 0.42, (255, 140, 255), 1, cv2.LINE_AA)
            y += self.LINE_H
        cv2.putText(frame, self.task, (8, y), self.font, 0.42, grey, 1, cv2.LINE_AA)
        y += self.LINE_H
        cv2.putText(frame, f"frame {index}/{last}  t {t:5.2f} s", (8, y), self.font,
                    self.FONT_SCALE, white, 1, cv2.LINE_AA)
        if self.scores:
            tw = cv2.getTextSize(self.scores, self.font, self.FONT_SCALE, 1)[0][0]
            cv2.putText(frame, self.scores, (self.w - tw - 8, y), self.font, self.FONT_SCALE,
                        green, 1, cv2.LINE_AA)
        if self.panels:
            y += self.LINE_H
            pw = self.w // len(self.panels)
            for k, text in enumerate(self.panels):
                cv2.putText(frame, text, (k * pw + 8, y), self.font, 0.42, grey, 1, cv2.LINE_AA)
        return frame


class _Mp4Writer:
    def __init__(self, path: Path, fps: float, size: tuple[int, int]):
        import cv2
        self.cv2 = cv2
        self.path = path
        self.writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
        if not self.writer.isOpened():
            raise RuntimeError(f"OpenCV cannot write mp4v video to {path}")

    def add(self, rgb: np.ndarray) -> None:
        self.writer.write(self.cv2.cvtColor(rgb, self.cv2.COLOR_RGB2BGR))

    def close(self) -> None:
        self.writer.release()


class _GifWriter:
    def __init__(self, path: Path, fps: float):
        self.path, self.fps, self.frames = path, fps, []

    def add(self, rgb: np.ndarray) -> None:
        from PIL import Image
        self.frames.append(Image.fromarray(rgb).quantize(colors=128))

    def close(self) -> None:
        if self.frames:
            self.frames[0].save(self.path, save_all=True, append_images=self.frames[1:],
                                duration=max(20, int(round(1000 / self.fps))), loop=0)


def count_video_frames(path: str | Path) -> int:
    """Frames in an MP4 (decoded with OpenCV) or a GIF (PIL)."""
    path = Path(path)
    if path.suffix.lower() == ".gif":
        from PIL import Image
        with Image.open(path) as im:
            return int(getattr(im, "n_frames", 1))
    import cv2
    cap = cv2.VideoCapture(str(path))
    n = 0
    while cap.isOpened():
        ok, _ = cap.read()
        if not ok:
            break
        n += 1
    cap.release()
    return n


@dataclass
class ReplayFrame:
    """One rendered frame of a replay: tick index, world state, the raw camera image and, when
    a cue conditioner is given, the image the policy saw (else None)."""
    index: int
    world: Any
    raw: np.ndarray
    cued: np.ndarray | None = None
    cue_ms: float = 0.0  # time spent conditioning this frame


def _check_replayable(episode_path, record, meta) -> None:
    if record.commands is None or len(record.commands) == 0:
        raise ValueError(f"{episode_path}: the record holds no commands to replay")
    for key in ("scene", "layout", "seed"):
        if meta.get(key) is None:
            raise ValueError(f"{episode_path}: meta lacks {key!r}, cannot rebuild the episode")


def replay_frames(record, meta: Mapping, backend, camera: str = VIDEO_CAMERA, stride: int = 1,
                  conditioner=None, cue_objects=()):
    """Replay a record's commands on `backend` (reset to meta's scene, layout, seed) and yield a
    ReplayFrame for frame 0 (after reset), every `stride`-th frame and the last one.

    `conditioner` (``cues.replay.CueConditioner``) adds the cued image: the frame goes through
    the overlay's code path with the replayed world state, joint state and the focal length the
    sim's ``camera_info`` carries for `camera`. `cue_objects`: the episode's scene cue cards
    (``cues.replay.episode_scene_objects``), part of the reset like in the sim node.
    """
    from vla_bridge.sim_nodes.session import SimSession
    session = SimSession(backend)
    session.begin(meta["scene"], meta["layout"], int(meta["seed"]), cue_objects=tuple(cue_objects))
    focal = {camera: float(backend.camera_model(camera).focal_px)} if conditioner is not None else None
    n = len(record.commands)
    for i in range(n):
        if i:
            session.step_action(record.commands[i])
        if i % stride and i != n - 1:
            continue
        world = backend.world_state()
        raw = backend.render(camera)
        cued, ms = None, 0.0
        if conditioner is not None:
            t = time.perf_counter()
            cued = conditioner({camera: raw}, world, backend.joint_positions(), focal)[camera]
            ms = (time.perf_counter() - t) * 1e3
        yield ReplayFrame(i, world, raw, cued, ms)


def _episode_view(cue_info, seed, view: str | None):
    """(CueSpec to draw or None, view actually shown, note, placement) for one episode."""
    from vla_bridge.cues.replay import cue_placement, episode_cue
    if view is not None and view not in VIDEO_VIEWS:
        raise ValueError(f"video view must be one of {', '.join(VIDEO_VIEWS)}, got {view!r}")
    placement = cue_placement(cue_info)
    spec = episode_cue(cue_info, seed) if placement is not None else None  # checks it rebuilds
    if placement == "scene":  # a card in the sim: every replayed image shows it, nothing to draw
        note = "" if view in (None, "cued") else (
            f"{view} view asked, but the cue is a card in the scene: the sim images show it")
        return None, "cued", note, placement
    shown = view or ("cued" if spec is not None else "raw")
    if spec is None and shown != "raw":
        return None, "raw", f"{shown} view asked, but the episode showed no cue: raw images", None
    return (spec if shown != "raw" else None), shown, "", placement


def render_episode_video(episode_path: str | Path, out_path: str | Path, *, backend=None,
                         camera: str = VIDEO_CAMERA, stride: int = 2, fps: float | None = None,
                         scale: int = 2, fmt: str = "mp4", meta_override: dict | None = None,
                         label: str | None = None, cue: Mapping | None = None,
                         view: str | None = None) -> VideoResult:
    """Replay a saved episode's commands in MuJoCo and write a captioned video of `camera`.

    Frame 0 is the scene after reset; frame i (i >= 1) follows the i-th executed command.
    Every `stride`-th frame and the last one are rendered (rendering dominates the cost on
    a CPU renderer), played at `fps` (default: real time, 1 / (control period x stride)).
    `fmt` "mp4" falls back to "gif" when OpenCV cannot
    encode; the output suffix follows the format actually written. `meta_override` replaces
    meta fields (e.g. the scores of the results row). `backend` (a MujocoBackend) may be
    shared between calls to keep compiled scene models.

    `cue` is the results row's ``cue`` (default: meta's ``cue``, if any). When it shows a cue,
    the evaluator's CueSpec is rebuilt and `view` chooses what the video shows: "cued" (what
    the policy saw; the default for a cue episode), "raw" (the sim's images; the default
    without a cue) or "both" (raw left, cued right: twice as wide). The caption names the
    protocol, family / variant and cue task. A cue placed in the scene (``placement`` "scene")
    is not drawn: the replay resets with the sim node's card, so every view is the sim image.
    """
    import tempfile

    from vla_bridge.cues.replay import CueConditioner, cue_label, episode_scene_objects
    from vla_bridge.recording import load_episode

    t0 = time.perf_counter()
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    record, meta = load_episode(episode_path)
    meta = {**meta, **(meta_override or {})}
    _check_replayable(episode_path, record, meta)
    cue_info = cue if cue is not None else meta.get("cue")
    spec, shown, note, placement = _episode_view(cue_info, meta["seed"], view)
    ghosts = _ghost_renderer(spec, cue_info, meta)
    conditioner = CueConditioner(spec, ghosts) if spec is not None else None
    # a scene cue: the sim node's card, rebuilt for the reset (textures live until the end)
    textures = tempfile.TemporaryDirectory(prefix="vla_bridge_replay_cues_") if placement == "scene" else None
    cards = episode_scene_objects(cue_info, meta["seed"], textures.name) if textures else []
    own_backend = backend is None
    if own_backend:
        from vla_bridge.sim_nodes.mujoco_backend import MujocoBackend
        backend = MujocoBackend()
    control_period = float(getattr(backend, "control_period", 0.06))
    fps = float(fps) if fps else 1.0 / (control_period * stride)
    n = len(record.commands)
    described = cue_label(cue_info)
    caption = ""
    if described:
        caption = (f"cue (a card in the scene): {described}" if placement == "scene" else
                   f"cue: {described}" if shown != "raw" else f"cue (not drawn, raw view): {described}")
    panels = ("raw camera", "cued: what the policy saw") if shown == "both" else ()
    overlay = _Overlay(meta, backend.width * (2 if shown == "both" else 1), backend.height, scale,
                       cue=caption, panels=panels)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    writer: Any = None
    if fmt == "mp4":
        try:
            writer = _Mp4Writer(out_path.with_suffix(".mp4"), fps, overlay.size)
        except Exception as exc:
            note = (note + "; " if note else "") + f"mp4 failed ({exc}); wrote GIF"
    elif fmt != "gif":
        raise ValueError(f"video format must be mp4 or gif, got {fmt!r}")
    if writer is None:
        writer = _GifWriter(out_path.with_suffix(".gif"), fps)
    drift, written, cue_ms = 0.0, 0, []
    try:
        for f in replay_frames(record, meta, backend, camera, stride, conditioner, cards):
            for arm, tcp in f.world.tcp.items():
                if arm in record.tcp_pos:
                    drift = max(drift, float(np.abs(np.asarray(tcp.pos) - record.tcp_pos[arm][f.index]).max()))
            if f.cued is not None:
                cue_ms.append(f.cue_ms)
            if shown == "both":
                image = np.concatenate([f.raw, f.cued], axis=1)
            else:  # a scene cue's "cued" view is the raw image: the card is in the scene
                image = f.raw if f.cued is None else f.cued
            writer.add(overlay.compose(image, f.index, n - 1, f.index * control_period))
            written += 1
    finally:
        writer.close()
        if ghosts is not None:
            ghosts.close()
        if textures is not None:
            textures.cleanup()
        if own_backend:
            backend.close()
    path = writer.path
    if isinstance(writer, _Mp4Writer) and (not path.is_file() or path.stat().st_size == 0):
        raise RuntimeError(f"OpenCV wrote no data to {path}")
    if drift > REPLAY_DRIFT_WARN_M:
        note = (note + "; " if note else "") + (f"replay diverged from the record by {drift:.4f} m "
                                                 "(not the recorded episode)")
    return VideoResult(episode=label or str(episode_path), path=str(path),
                       format=path.suffix.lstrip("."), frames=written, width=overlay.size[0],
                       height=overlay.size[1], fps=round(fps, 3), episode_frames=n,
                       render_s=round(time.perf_counter() - t0, 3), max_tcp_drift_m=drift, note=note,
                       view=shown, cue=described,
                       cue_ms_per_frame=round(float(np.mean(cue_ms)), 3) if cue_ms else None)


def _ghost_renderer(spec, cue_info, meta):
    """An F3 cue whose ghosts the evaluator rendered on a scene copy (row["cue"]["ghosts"]):
    the same renderer for the replay; else None (projected boxes, as the policy saw them)."""
    if spec is None or (cue_info or {}).get("ghosts") != "rendered":
        return None
    from vla_bridge.cues.sim_ghosts import MirrorGhostRenderer
    renderer = MirrorGhostRenderer()
    renderer.reset(meta["scene"], meta["layout"], int(meta["seed"]))
    return renderer


def render_videos(run_dir: str | Path, rows: Sequence[Mapping], count: int, *, stride: int = 2,
                  fps: float | None = None, fmt: str = "mp4", camera: str = VIDEO_CAMERA,
                  stream=None, view: str | None = None) -> tuple[list[VideoResult], list[str]]:
    """Videos of the first `count` episodes (results order) whose episode file exists, into
    <run>/videos/<scene>/<task>_r<round>.<mp4|gif>; returns (results, errors). `view`: see
    render_episode_video (None: cued for episodes that showed a cue, else raw)."""
    from vla_bridge.progress import Progress
    run_dir = Path(run_dir)
    if view is not None and view not in VIDEO_VIEWS:
        raise ReportError(f"video view must be one of {', '.join(VIDEO_VIEWS)}, got {view!r}")
    chosen = [r for r in rows if r.get("episode_file") and (run_dir / r["episode_file"]).is_file()][:count]
    if not chosen:
        return [], [f"no episode files to replay in {run_dir} (the run saved none)"]
    from vla_bridge.sim_nodes.mujoco_backend import MujocoBackend
    backend = MujocoBackend()
    results, errors = [], []
    try:
        with Progress(len(chosen), "videos", stream=stream) as bar:
            for r in chosen:
                episode = Path(r["episode_file"])
                inside = episode.parts[:1] == ("episodes",)
                inner = episode.relative_to("episodes") if inside else Path(episode.name)
                out = run_dir / "videos" / inner.with_suffix("")
                try:
                    res = render_episode_video(
                        run_dir / episode, out, backend=backend, camera=camera, stride=stride,
                        fps=fps, fmt=fmt, label=str(episode), cue=r.get("cue"), view=view,
                        meta_override={k: r[k] for k in ("intent_score", "exec_score", "complete")
                                       if k in r})
                    res.path = str(Path(res.path).relative_to(run_dir))
                    results.append(res)
                    item = f"{episode.stem} ({res.frames} frames, {res.render_s:.1f} s)"
                except Exception as exc:
                    errors.append(f"{episode}: {type(exc).__name__}: {exc}")
                    item = f"{episode.stem} FAILED: {exc}"
                bar.update(item=item)
    finally:
        backend.close()
    return results, errors


# =============================================================================== the report

@dataclass
class ReportOptions:
    paper_model: str | None = None
    plots: bool = False
    videos: int = 0
    compare: str | Path | None = None
    n_boot: int = DEFAULT_BOOT
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE
    video_stride: int = 2
    video_fps: float | None = None
    video_format: str = "mp4"
    camera: str = VIDEO_CAMERA
    video_view: str | None = None  # "cued" | "raw" | "both"; None: cued if the episode had a cue
    paper_file: str | Path | None = None
    progress_stream: Any = field(default=None, repr=False)


def build_report(run_dir: str | Path, options: ReportOptions | None = None, **kwargs) -> dict:
    """Everything the report shows, as one JSON-able dict (percent units). Writes plots and
    videos when asked (into the run directory), not report.md/json (see write_report)."""
    opts = options or ReportOptions(**kwargs)
    run_dir = Path(run_dir)
    rows = load_rows(run_dir)
    if not rows:
        raise ReportError(f"{run_dir}: no results (results.jsonl missing or empty)")
    info = load_run_info(run_dir)
    report: dict[str, Any] = {
        "run_dir": str(run_dir), "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "run": {"status": info.get("status"), "started": info.get("started"),
                "finished": info.get("finished"), "arguments": info.get("arguments", {}),
                "versions": info.get("versions", {})},
        "units": "percent",
        "method": {"point": "summary.json's: mean IS/ES over episodes, task-macro CR",
                   "interval": "percentile bootstrap over tasks, stratified by scene/level",
                   "n_boot": opts.n_boot, "seed": opts.seed, "confidence": opts.confidence},
        "errors": [],
    }
    table = results_table(rows, opts.n_boot, opts.seed, opts.confidence)
    report["groups"] = table
    paper = None
    if opts.paper_model or opts.compare:
        paper = load_paper(opts.paper_file)
    report["paper"] = beside_paper(table, paper_model(paper, opts.paper_model)) if opts.paper_model else None
    report["intact"] = intact_rates(run_dir, rows)
    from vla_bridge.evaluation import latency_summary
    report["policy_latency"] = latency_summary(rows)
    report["cues"] = cue_table(rows)

    empty_table, table_for_plot = None, table
    report["compare"] = None
    if opts.compare:
        other = Path(opts.compare)
        other_rows = load_rows(other)
        if not other_rows:
            raise ReportError(f"{other}: no results to compare with")
        flags = (_empty_language(info), _empty_language(load_run_info(other)))
        normal, empty, normal_rows, empty_rows = run_dir, other, rows, other_rows
        note = ""
        if flags[0] is True and flags[1] is not True:
            normal, empty, normal_rows, empty_rows = other, run_dir, other_rows, rows
            note = f"{run_dir} is the empty-language run; roles swapped"
        elif flags[1] is not True:
            note = (f"{other} is not marked empty_language in its run.json; "
                    "treated as the empty-language run anyway")
        groups = compare_runs(normal_rows, empty_rows, opts.n_boot, opts.seed, opts.confidence, paper)
        report["compare"] = {"normal_run": str(normal), "empty_run": str(empty), "note": note,
                             "groups": groups}
        if not groups:
            report["errors"].append(f"compare: no task in common between {normal} and {empty}")
        if empty == run_dir:  # the plots show the normal run as "ours", this one dotted
            empty_table = table
            table_for_plot = results_table(normal_rows, opts.n_boot, opts.seed, opts.confidence)
        else:
            empty_table = results_table(empty_rows, opts.n_boot, opts.seed, opts.confidence)

    report["plots"] = []
    if opts.plots:
        try:
            entry = paper_model(paper, opts.paper_model) if opts.paper_model else None
            paths = plot_levels(table_for_plot, run_dir / "plots", entry, empty_table, run_dir.name)
            report["plots"] = [str(p.relative_to(run_dir)) for p in paths]
        except Exception as exc:
            report["errors"].append(f"plots: {type(exc).__name__}: {exc}")

    report["videos"] = []
    if opts.videos > 0:
        videos, errors = render_videos(run_dir, rows, opts.videos, stride=opts.video_stride,
                                       fps=opts.video_fps, fmt=opts.video_format,
                                       camera=opts.camera, stream=opts.progress_stream,
                                       view=opts.video_view)
        report["videos"] = [asdict(v) for v in videos]
        report["errors"] += [f"videos: {e}" for e in errors]
    return report


# ------------------------------------------------------------------------------- markdown

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


def cue_table(rows: Sequence[Mapping]) -> dict | None:
    """LIBERO-VIFO metrics of the run's cue-protocol episodes (None when it has none)."""
    from vla_bridge.cues.protocols import cue_metrics
    if not any((r.get("cue") or {}).get("protocol") for r in rows):
        return None
    return cue_metrics(rows)


def format_markdown(report: dict) -> str:
    table, paper = report["groups"], report.get("paper")
    run = report["run"]
    args = run.get("arguments") or {}
    total = table["all"]
    out = [f"# Run report: {Path(report['run_dir']).name}", ""]
    out.append(f"- run directory: `{report['run_dir']}`; status: {run.get('status') or 'unknown'}"
               f"; generated {report['generated']}")
    if args:
        keys = ("policy", "scene", "levels", "tasks", "rounds", "base_seed", "lock_step", "empty_language")
        out.append("- arguments: " + ", ".join(f"{k}={args[k]}" for k in keys if k in args and args[k] != ""))
    failed = f", {total['n_failed']} failed (scored 0)" if total["n_failed"] else ""
    out.append(f"- {total['n_episodes']} episodes of {total['n_tasks']} tasks{failed}")
    out.append("")

    # Table-1 style: per scene, rows ours / paper, columns level x metric
    out += ["## Table 1 (percent)", ""]
    scenes = sorted({v["scene"] for g, v in table.items() if g != "all"})
    for scene in scenes:
        levels = [lv for lv in LEVELS if _group_key(scene, lv) in table]
        header = [scene] + [f"{lv} {m}" for lv in levels for m in METRICS]
        rows = [["ours"] + [_fmt(table[_group_key(scene, lv)][m]["value"]) for lv in levels for m in METRICS]]
        if paper:
            rows.append([f"paper {paper['model']}"] +
                        [_fmt(paper["cells"].get(_group_key(scene, lv), {}).get(m))
                         for lv in levels for m in METRICS])
        out += _md_table(header, rows) + [""]

    out += ["## Per scene/level with 95% intervals", ""]
    header = ["group", "episodes", "tasks", "IS %", "ES %", "CR %", "CR micro %", "IS full %", "ES full %"]
    if paper:
        header += [f"paper {paper['model']} IS / ES / CR", "paper outside our CI"]
    rows = []
    for group, v in table.items():
        row = [group, v["n_episodes"], v["n_tasks"], _fmt_ci(v["IS"]), _fmt_ci(v["ES"]), _fmt_ci(v["CR"]),
               _fmt(v["CR_episode_micro"]), _fmt(v["IS_full_rate"]), _fmt(v["ES_full_rate"])]
        if paper:
            cell = paper["cells"].get(group)
            outside = paper["outside_ci"].get(group)
            row += [" / ".join(_fmt(cell[m]) for m in METRICS) if cell else "–",
                    "–" if not cell else "n/a" if outside is None else ", ".join(outside) or "none"]
        rows.append(row)
    out += _md_table(header, rows)
    m = report["method"]
    out += ["", f"Intervals: {int(m['confidence'] * 100)}% percentile bootstrap over tasks "
            f"(stratified by scene/level, {m['n_boot']} replicates, seed {m['seed']}); CR is "
            "task-macro (RoboFollow's), \"CR micro\" the plain episode rate. "
            "(n/a): fewer than 2 tasks.", ""]

    intact = report.get("intact")
    if intact:
        out += ["## INT-ACT rates (re-scored from the episode files)", ""]
        header = ["group", "episodes", "intention %", "grasp %", "task success %", "wrong object %",
                  "intention-action gap"]
        rows = [[g, v["n_episodes"], _fmt(v["intention_correct_rate"]), _fmt(v["grasp_success_rate"]),
                 _fmt(v["task_success_rate"]), _fmt(v["wrong_object_attempt_rate"]),
                 _fmt(v["intention_action_gap"])] for g, v in intact["groups"].items()]
        out += _md_table(header, rows)
        if intact["n_without_file"]:
            out.append(f"\n{intact['n_without_file']} episode(s) have no episode file and are not included.")
        for e in intact["errors"]:
            out.append(f"- could not re-score {e}")
        out.append("")

    cues = report.get("cues")
    if cues:
        from vla_bridge.cues.protocols import FAMILY_LABELS
        from vla_bridge.cues.protocols import METRICS as CUE_METRICS
        out += ["## Visual-cue protocols (LIBERO-VIFO Table 2 style, percent)", ""]
        fams = sorted(cues["by_family"])
        header = ["metric"] + [FAMILY_LABELS.get(f, f) for f in fams] + ["Avg.", "All"]
        out += _md_table(header, [[label] + [_fmt(cues["by_family"][f].get(key)) for f in fams]
                                  + [_fmt(cues["average"].get(key)), _fmt(cues["overall"].get(key))]
                                  for key, label in CUE_METRICS])
        counts = ", ".join(f"{p or 'none'} {c['episodes']} ({c['failed']} failed)"
                           for p, c in cues["episodes"].items())
        out += ["", f"Episodes per protocol: {counts}. Avg. is the mean over families, All pools "
                "every episode; a failed episode counts as not completed.", ""]

    latency = report.get("policy_latency")
    if latency:
        out += ["## Policy latency per call (ms)", "",
                "inference: the backend's predict call; overhead: the policy node's own share "
                "(observation assembly, validation, scheduling, publishing); the rest is the "
                "node's breakdown (`latency_ms`).", ""]
        out += _md_table(["timing", "calls", "mean", "p50", "p95", "max"],
                         [[k, m["calls"], f"{m['mean']:.3f}", f"{m['p50']:.3f}", f"{m['p95']:.3f}",
                           f"{m['max']:.3f}"] for k, m in latency.items()]) + [""]

    compare = report.get("compare")
    if compare:
        out += ["## Empty language: drop (normal - empty), percent points", "",
                f"normal: `{compare['normal_run']}`, empty language: `{compare['empty_run']}`"
                + (f" ({compare['note']})" if compare["note"] else ""), ""]
        header = ["group", "tasks"] + [f"{m} normal / empty" for m in METRICS] + \
                 [f"{m} drop [95% CI]" for m in METRICS] + ["paper π₀.₅ drop IS / ES / CR"]
        rows = []
        for g, v in compare["groups"].items():
            pd = v.get("paper_drop")
            rows.append([g, v["n_tasks"]] +
                        [f"{_fmt(v[m]['normal'])} / {_fmt(v[m]['empty'])}" for m in METRICS] +
                        [(f"{_fmt(v[m]['drop'])} [{_fmt(v[m]['lo'])}, {_fmt(v[m]['hi'])}]"
                          if v[m]["lo"] is not None else f"{_fmt(v[m]['drop'])} (n/a)") for m in METRICS] +
                        [" / ".join(_fmt(pd[m]) for m in METRICS) if pd else "–"])
        out += _md_table(header, rows) + [""]

    if report.get("plots"):
        out += ["## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in report["plots"]] + [""]
    if report.get("videos"):
        out += ["## Videos", ""]
        header = ["episode", "video", "view", "frames (of episode)", "size", "render s",
                  "replay drift m", "note"]
        rows = [[v["episode"], f"[{Path(v['path']).name}]({v['path']})",
                 v.get("view", "raw") + (f" (cue: {v['cue']})" if v.get("cue") else ""),
                 f"{v['frames']} ({v['episode_frames']})", f"{v['width']}x{v['height']}",
                 f"{v['render_s']:.1f}", f"{v['max_tcp_drift_m']:.1e}", v["note"] or ""]
                for v in report["videos"]]
        out += _md_table(header, rows) + [""]
    if report.get("errors"):
        out += ["## Problems", ""] + [f"- {e}" for e in report["errors"]] + [""]
    return "\n".join(out)


def format_console(report: dict) -> str:
    """A short plain-text table for the terminal."""
    paper = report.get("paper")
    head = f"{'group':<12}{'eps':>5}{'tasks':>6}  " + "".join(f"{m + ' % [95% CI]':<22}" for m in METRICS)
    if paper:
        head += f"paper {paper['model']} IS/ES/CR"
    lines = [head, "-" * len(head)]
    for group, v in report["groups"].items():
        line = (f"{group:<12}{v['n_episodes']:>5}{v['n_tasks']:>6}  " +
                "".join(f"{_fmt_ci(v[m]):<22}" for m in METRICS))
        if paper and group in paper["cells"]:
            line += " / ".join(_fmt(paper["cells"][group][m]) for m in METRICS)
        lines.append(line)
    return "\n".join(lines)


def write_report(report: dict, run_dir: str | Path | None = None) -> tuple[Path, Path]:
    """report.md and report.json into the run directory (atomic replace)."""
    run_dir = Path(run_dir or report["run_dir"])
    md, js = run_dir / "report.md", run_dir / "report.json"
    for path, text in ((md, format_markdown(report)),
                       (js, json.dumps(report, indent=1, ensure_ascii=False, default=str))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(path)
    return md, js


# =============================================================================== CLI

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="run directory (holds results.jsonl)")
    parser.add_argument("--paper", nargs="?", const=DEFAULT_PAPER_MODEL, default=None, metavar="MODEL",
                        help=f"show the paper's Table 1 numbers of MODEL beside ours (default "
                             f"{DEFAULT_PAPER_MODEL}; ASCII spellings like pi05 work)")
    parser.add_argument("--plots", action="store_true", help="write plots/<scene>.png (IS/ES/CR over L0..L3)")
    parser.add_argument("--videos", type=int, default=0, metavar="N",
                        help="replay the first N saved episodes and write videos/<scene>/<task>_r<round>.mp4")
    parser.add_argument("--compare", default=None, metavar="OTHER_RUN",
                        help="the empty-language run (--empty_language) of the same tasks: table of the drop")
    parser.add_argument("--video-stride", type=int, default=2,
                        help="render every Nth frame (default 2; a CPU renderer takes ~10-75 ms a frame)")
    parser.add_argument("--video-fps", type=float, default=None,
                        help="playback frame rate (default: real time, 1 / (0.06 s x stride))")
    parser.add_argument("--video-format", choices=("mp4", "gif"), default="mp4",
                        help="mp4 (OpenCV mp4v; falls back to GIF) or gif")
    parser.add_argument("--camera", default=VIDEO_CAMERA, help=f"camera to render (default {VIDEO_CAMERA})")
    parser.add_argument("--video-view", choices=VIDEO_VIEWS, default=None,
                        help="what the videos show: cued (the images the policy saw under a "
                             "visual-cue protocol), raw (the sim's images) or both (side by side, "
                             "twice as wide); default: cued for episodes that showed a cue, else raw")
    parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOT, help="bootstrap replicates")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE)


def run(args: argparse.Namespace) -> int:
    """Exit 0: report written; 1: written, but a requested plot/video failed; 2: bad input."""
    if args.videos < 0 or args.video_stride < 1 or args.bootstrap < 1 or not 0 < args.confidence < 1:
        print("error: --videos >= 0, --video-stride >= 1, --bootstrap >= 1 and 0 < --confidence < 1",
              file=sys.stderr)
        return 2
    options = ReportOptions(paper_model=args.paper, plots=args.plots, videos=args.videos,
                            compare=args.compare, n_boot=args.bootstrap, seed=args.seed,
                            confidence=args.confidence, video_stride=args.video_stride,
                            video_fps=args.video_fps, video_format=args.video_format,
                            camera=args.camera, video_view=args.video_view)
    try:
        report = build_report(args.run_dir, options)
    except (ReportError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    md, js = write_report(report)
    print(format_console(report))
    if report["intact"]:
        g = report["intact"]["groups"]["all"]
        print(f"INT-ACT ({report['intact']['n_episodes_scored']} episodes): intention "
              f"{g['intention_correct_rate']:.1f}%, grasp {g['grasp_success_rate']:.1f}%, "
              f"task success {g['task_success_rate']:.1f}%, "
              f"wrong object {g['wrong_object_attempt_rate']:.1f}%")
    if report["compare"] and "all" in report["compare"]["groups"]:
        a = report["compare"]["groups"]["all"]
        print("empty-language drop (all): " + ", ".join(f"{m} {_fmt(a[m]['drop'])}" for m in METRICS))
    for p in report["plots"]:
        print(f"plot: {Path(args.run_dir) / p}")
    for v in report["videos"]:
        view = f", {v['view']} view" if v.get("cue") or v.get("view", "raw") != "raw" else ""
        print(f"video: {Path(args.run_dir) / v['path']} ({v['frames']} frames, {v['render_s']:.1f} s{view})")
    for e in report["errors"]:
        print(f"problem: {e}", file=sys.stderr)
    print(f"wrote {md} and {js}")
    return 1 if report["errors"] else 0
