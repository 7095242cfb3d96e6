"""Operator console for real pilot trials: the outcomes the tracker cannot see, one trial at a time.

    vla-bridge console --plan pilot.yaml --sheet runs/pilot/sheet.jsonl
    vla-bridge console --tasks L0_pickup_yellow_block_3 --trials 5 \\
        --sheet runs/pilot/sheet.jsonl --results runs/pilot/results.jsonl \\
        --run "vla-bridge launch robofollow_real --tasks {task} --rounds {trial} --output runs/pilot"

For every instruction and trial not yet in the trial sheet it
  1. pauses for the scene reset ("Enter" when ready; `s` skips the trial for now, `q` stops),
  2. optionally runs the trial (`--run` command template; with the real graph's resume, a
     launch with `--rounds {trial}` runs exactly that round),
  3. shows the tracker's automatic stage scores for it (`--results`, the graph's results.jsonl),
  4. asks each stage as y/n (what the camera cannot judge: a slipping grasp, a knocked object),
     then free-text notes, and
  5. appends the trial to the sheet (JSON lines, fsync'ed; a CSV copy is rewritten beside it).
A trial counts as a success when every stage is answered yes (`--success all`, default) or when
the last one is (`--success last`). The pilot report (vla_bridge.reporting.pilot_report: per-instruction
table, pooled and per-category rates with 95% Wilson intervals, plus per-stage rates) is printed
at the end and written with `--report`.

Interrupting (Ctrl-C, end of input) loses only the trial being asked: rerunning the same command
resumes at the first trial missing from the sheet. `--answers FILE` reads the operator's answers
from a file (one per line, `#` comment lines ignored, `-` for an empty answer), so tests and
rehearsals can drive the console; running out of answers stops it like end of input.

Plan file (YAML or JSON):
    trials: 5                    # per instruction
    stages: [reached, grasped, lifted]   # default questions
    instructions:
      - {text: "Use your right arm to pick up the blue cube.", group: held_out}
      - {text: "...", group: training, category: stack, stages: [grasped, placed, released],
         task: L0_...}           # task: the suite task the graph runs for it (--run, --results)
"""
from __future__ import annotations

import csv
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import yaml

from vla_bridge.reporting import pilot_report as P

DEFAULT_STAGES = ("reached the right object", "grasped it", "lifted it")
#: questions per RoboFollow action (Scene 1 pick-ups and relative placements)
ACTION_STAGES = {
    "pickup": DEFAULT_STAGES,
    "place": ("grasped the right object", "placed it at the named relation",
              "released it and withdrew"),
}
YES, NO = ("y", "yes"), ("n", "no")


class StopConsole(Exception):
    """The operator quit, or the input ended: the sheet keeps every finished trial."""


class ScriptError(ValueError):
    """A scripted answer does not fit its question."""

# ---------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class PlannedInstruction:
    text: str
    trials: int
    stages: tuple[str, ...]
    group: str = "all"
    category: str | None = None
    task: str | None = None  # suite task id the graph runs for it


@dataclass(frozen=True)
class PlannedTrial:
    instruction: PlannedInstruction
    trial: int  # 1-based

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.instruction.group, self.instruction.text, self.trial)


def load_plan(path: str | Path) -> list[PlannedInstruction]:
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict) or not data.get("instructions"):
        raise ValueError(f"{path}: a plan needs an `instructions` list")
    trials = int(data.get("trials", 1))
    stages = tuple(data.get("stages") or DEFAULT_STAGES)
    out = []
    for i, item in enumerate(data["instructions"], 1):
        item = {"text": item} if isinstance(item, str) else dict(item)
        if not item.get("text"):
            raise ValueError(f"{path}: instruction {i} has no text")
        out.append(PlannedInstruction(
            text=str(item["text"]), trials=int(item.get("trials", trials)),
            stages=tuple(item.get("stages") or stages), group=str(item.get("group", "all")),
            category=item.get("category"), task=item.get("task")))
    _check_unique(out)
    return out


def plan_from_tasks(task_ids: Iterable[str], trials: int) -> list[PlannedInstruction]:
    """Instructions of suite tasks (vla_bridge.benchmarks.robofollow.tasks), with stage questions by action."""
    from vla_bridge.benchmarks.robofollow.tasks import load_suite, select_tasks

    ids = [t for t in task_ids if t]
    tasks = select_tasks(load_suite(), "", "", ",".join(ids))
    by_id = {t.id: t for t in tasks}
    out = []
    for task_id in ids:
        task = by_id[task_id]
        stages = ACTION_STAGES["pickup" if task.action == "pickup" else "place"]
        out.append(PlannedInstruction(task.instruction, trials, stages, group=task.level,
                                      task=task.id))
    _check_unique(out)
    return out


def _check_unique(plan: list[PlannedInstruction]) -> None:
    keys = [(p.group, p.text) for p in plan]
    if len(set(keys)) != len(keys):
        raise ValueError("an instruction appears twice in the same group of the plan")


def planned_trials(plan: list[PlannedInstruction]) -> list[PlannedTrial]:
    """Trial-major order: every instruction's trial 1, then every trial 2, ... (a stopped
    pilot then has balanced counts per instruction)."""
    most = max((p.trials for p in plan), default=0)
    return [PlannedTrial(p, k) for k in range(1, most + 1) for p in plan if k <= p.trials]

# --------------------------------------------------------------------------- the sheet


class TrialSheet:
    """Append-only JSON lines, one per finished trial, with a CSV copy beside it."""

    CSV_COLUMNS = ("group", "instruction", "category", "task", "trial", "success", "stages",
                   "notes", "operator", "time", "auto_intent", "auto_exec", "auto_complete")

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.rows: list[dict] = []
        self._newline_first = False  # the file ends inside a line (a write cut by a crash)
        if self.path.exists():
            text = self.path.read_text()
            self._newline_first = bool(text) and not text.endswith("\n")
            for n, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    self.rows.append(json.loads(line))
                except json.JSONDecodeError:  # a line cut by a crash mid-write: ignore it
                    print(f"[console] {self.path}:{n}: unreadable line ignored", file=sys.stderr)

    def done(self) -> set[tuple[str, str, int]]:
        return {(r["group"], r["instruction"], int(r["trial"])) for r in self.rows}

    def append(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            if self._newline_first:  # keep the torn line apart from this one
                f.write("\n")
                self._newline_first = False
            f.write(json.dumps(row, sort_keys=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.rows.append(row)
        self.write_csv()

    def write_csv(self) -> None:
        tmp = self.path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(self.CSV_COLUMNS)
            for r in self.rows:
                auto = r.get("auto") or {}
                writer.writerow([r["group"], r["instruction"], r.get("category") or "",
                                 r.get("task") or "", r["trial"], int(bool(r["success"])),
                                 ";".join(f"{k}={'y' if v else 'n'}"
                                          for k, v in r["stages"].items()),
                                 r.get("notes", ""), r.get("operator", ""), r.get("time", ""),
                                 auto.get("intent_score", ""), auto.get("exec_score", ""),
                                 "" if "complete" not in auto else int(bool(auto["complete"]))])
        tmp.replace(self.path.with_suffix(".csv"))

# -------------------------------------------------------------------------- the answers


class Answers:
    """Where answers come from: the terminal, or a script file (tests, rehearsals)."""

    def __init__(self, script: list[str] | None = None, out: TextIO | None = None,
                 read: Callable[[str], str] = input):
        self.script = script
        self.used = 0
        self.out = out or sys.stdout
        self.read = read

    @classmethod
    def from_file(cls, path: str | Path, out: TextIO | None = None) -> Answers:
        lines = [line.strip() for line in Path(path).read_text().splitlines()]
        return cls([("" if line == "-" else line) for line in lines
                    if line and not line.startswith("#")], out)

    def ask(self, prompt: str) -> str:
        if self.script is None:
            try:
                return self.read(prompt).strip()
            except EOFError:
                raise StopConsole("end of input") from None
        self.out.write(prompt)
        if self.used >= len(self.script):
            self.out.write("\n")
            raise StopConsole(f"the scripted answers ran out after {self.used}")
        answer = self.script[self.used]
        self.used += 1
        self.out.write(answer + "\n")
        return answer

    def choose(self, prompt: str, valid: dict[str, tuple[str, ...]]) -> str:
        """One of `valid`'s keys; the terminal asks again on anything else, a script fails."""
        while True:
            answer = self.ask(prompt).lower()
            for key, spellings in valid.items():
                if answer in spellings:
                    return key
            allowed = sorted(s for spellings in valid.values() for s in spellings if s)
            if self.script is not None:
                raise ScriptError(f"scripted answer {self.used} {answer!r} does not answer "
                                  f"{prompt.strip()!r} (expected one of {allowed})")
            self.out.write(f"  please answer one of {allowed}\n")

# --------------------------------------------------------------------------- the console


@dataclass
class Console:
    plan: list[PlannedInstruction]
    sheet: TrialSheet
    answers: Answers
    out: TextIO = field(default_factory=lambda: sys.stdout)
    operator: str = ""
    success_rule: str = "all"  # all | last
    run_command: str = ""
    results_path: Path | None = None

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def run(self) -> int:
        """Ask every trial missing from the sheet; 0 when the plan is complete, 130 when
        stopped (rerun to resume)."""
        trials = planned_trials(self.plan)
        done = self.sheet.done()
        todo = [t for t in trials if t.key not in done]
        self.say(f"[console] {len(trials)} trials planned, {len(trials) - len(todo)} already in "
                 f"{self.sheet.path}; {len(todo)} to go")
        skipped = 0
        try:
            for n, trial in enumerate(todo, 1):
                skipped += not self.one_trial(trial, n, len(todo))
        except (StopConsole, KeyboardInterrupt) as exc:
            exc = exc if isinstance(exc, StopConsole) else "Ctrl-C"
            self.say(f"[console] stopped ({exc}); {len(self.sheet.rows)} trials saved in "
                     f"{self.sheet.path}. Run the same command again to resume.")
            return 130
        if skipped:
            self.say(f"[console] {skipped} trials skipped; run again to do them")
            return 130
        self.say("[console] pilot complete")
        return 0

    def one_trial(self, trial: PlannedTrial, n: int, total: int) -> bool:
        ins = trial.instruction
        self.say(f"\n[{n}/{total}] {ins.group}: \"{ins.text}\" trial {trial.trial} of "
                 f"{ins.trials}" + (f" (task {ins.task})" if ins.task else ""))
        choice = self.answers.choose("Reset the scene, then press Enter (s = skip, q = quit): ",
                                     {"go": ("", "go", "r", "ready"), "skip": ("s", "skip"),
                                      "quit": ("q", "quit")})
        if choice == "quit":
            raise StopConsole("operator quit")
        if choice == "skip":
            self.say("  skipped (not recorded)")
            return False
        row = {"group": ins.group, "instruction": ins.text, "category": ins.category,
               "task": ins.task, "trial": trial.trial}
        if self.run_command:
            row["run_exit_code"] = self.run_trial(trial)
        auto = self.automatic_scores(trial)
        if auto:
            row["auto"] = auto
            self.say(f"  tracker: IS {auto['intent_score']:.2f} ES {auto['exec_score']:.2f} "
                     f"CR {'yes' if auto['complete'] else 'no'} ({auto['status']})")
        stages = {}
        for i, stage in enumerate(ins.stages, 1):
            answer = self.answers.choose(f"  stage {i}/{len(ins.stages)} - {stage}? [y/n] ",
                                         {"y": YES, "n": NO})
            stages[stage] = answer == "y"
        notes = self.answers.ask("  notes (Enter for none): ")
        success = all(stages.values()) if self.success_rule == "all" else \
            list(stages.values())[-1]
        row.update(stages=stages, success=success, notes=notes, operator=self.operator,
                   time=time.strftime("%Y-%m-%dT%H:%M:%S"))
        self.sheet.append(row)
        self.say(f"  saved: {'SUCCESS' if success else 'failure'}")
        return True

    def run_trial(self, trial: PlannedTrial) -> int:
        ins = trial.instruction
        argv = [a.format(task=ins.task or "", trial=trial.trial, round=trial.trial,
                         instruction=ins.text, group=ins.group)
                for a in shlex.split(self.run_command)]
        self.say(f"  running: {shlex.join(argv)}")
        try:
            code = subprocess.call(argv)
        except OSError as exc:
            self.say(f"  could not run the trial: {exc}")
            return -1
        self.say(f"  trial command exited with {code}")
        return code

    def automatic_scores(self, trial: PlannedTrial) -> dict | None:
        """The graph's scores of this trial (results.jsonl row of its task and round)."""
        ins = trial.instruction
        if self.results_path is None or not ins.task or not self.results_path.exists():
            return None
        found = None
        for line in self.results_path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("task_id") == ins.task and int(row.get("round", -1)) == trial.trial:
                found = row
        if found is None:
            return None
        return {"status": found.get("status"), "intent_score": found.get("intent_score", 0.0),
                "exec_score": found.get("exec_score", 0.0),
                "complete": bool(found.get("complete")), "error": found.get("error"),
                "stages": found.get("stages", [])}

# ---------------------------------------------------------------------------- the report


def sheet_trials(rows: Iterable[dict]) -> list[P.TrialResult]:
    """Trial-sheet rows -> pilot_report trials (success, instruction, group, category)."""
    return [P.TrialResult(r["instruction"], bool(r["success"]), r.get("group", "all"),
                          r.get("category")) for r in rows]


def stage_rates(rows: Iterable[dict]) -> dict[str, dict[str, P.Rate]]:
    """Per group: yes-rate of every stage question over the trials that asked it."""
    counts: dict[str, dict[str, list[int]]] = {}
    for r in rows:
        per = counts.setdefault(r.get("group", "all"), {})
        for stage, ok in r["stages"].items():
            c = per.setdefault(stage, [0, 0])
            c[0] += int(bool(ok))
            c[1] += 1
    return {g: {s: P.Rate(*c) for s, c in per.items()} for g, per in counts.items()}


def report(rows: list[dict]) -> tuple[str, dict]:
    """(markdown, JSON-able dict) of the pilot so far."""
    if not rows:
        return "no trials recorded yet\n", {}
    groups = P.summarize(sheet_trials(rows))
    text = P.format_report(groups)
    stages = stage_rates(rows)
    text += "\n| group | stage | yes (95% Wilson) |\n| --- | --- | --- |\n"
    for group, per in stages.items():
        for stage, rate in per.items():
            text += f"| {group} | {stage} | {rate} |\n"
    data = {"groups": {g: rep.to_dict() for g, rep in groups.items()},
            "stages": {g: {s: r.to_dict() for s, r in per.items()} for g, per in stages.items()},
            "trials": len(rows)}
    return text, data


def write_report(rows: list[dict], path: str | Path) -> str:
    text, data = report(rows)
    path = P.pilot_report_path(path)  # never vla-bridge report's report.md
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n")
    return text
