"""Real-robot pilot report: per-instruction success counts, pooled rates with 95% Wilson score
intervals, and a per-category (pick vs stack) breakdown, as RoboFollow's real-robot pilot
reports them (App. C.1: 20/40 = 50% [35.2, 64.8], 6/40 = 15% [7.1, 29.1]).

Pure Python, no rclpy. Like the paper, the pooled interval treats every trial as an
independent Bernoulli draw: it ignores instruction heterogeneity and dependence between trials.

A pilot's run directory also gets `vla-bridge report`'s report.md / report.json (the
tracker-scored episodes), so the pilot report is ``pilot_report.md`` / ``pilot_report.json``
beside them (``pilot_report_path``); `vla-bridge report` shows it in report.md.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

CATEGORY_PICK = "pick"
CATEGORY_STACK = "stack"
CATEGORY_OTHER = "other"
CATEGORIES = (CATEGORY_PICK, CATEGORY_STACK)

_STACK = re.compile(r"\bstack\b|\bon top of\b|\bonto\b|\bplace\b.*\bon\b|\bput\b.*\bon\b", re.IGNORECASE)
_PICK = re.compile(r"\bpick\b|\bgrasp\b|\blift\b|\bgrab\b", re.IGNORECASE)


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval (fractions) for `successes` out of `trials`."""
    if trials <= 0:
        raise ValueError(f"trials must be positive, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be in 0..{trials}, got {successes}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / trials
    z2n = z * z / trials
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / trials + z2n / (4.0 * trials)) / (1.0 + z2n)
    lo = 0.0 if successes == 0 else max(0.0, centre - half)  # exact at the ends
    hi = 1.0 if successes == trials else min(1.0, centre + half)
    return lo, hi


def instruction_category(instruction: str) -> str:
    """"stack" for stacking / placing-on instructions, "pick" for pick-ups, else "other"."""
    if _STACK.search(instruction):
        return CATEGORY_STACK
    if _PICK.search(instruction):
        return CATEGORY_PICK
    return CATEGORY_OTHER


@dataclass(frozen=True)
class Rate:
    successes: int
    trials: int
    confidence: float = 0.95

    @property
    def rate(self) -> float:
        return self.successes / self.trials if self.trials else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.trials, self.confidence)

    def percent(self) -> tuple[float, float, float]:
        """(rate, low, high) in percent."""
        lo, hi = self.interval
        return 100.0 * self.rate, 100.0 * lo, 100.0 * hi

    def __str__(self) -> str:
        r, lo, hi = self.percent()
        return f"{self.successes}/{self.trials} = {r:.1f}% [{lo:.1f}, {hi:.1f}]"

    def to_dict(self) -> dict:
        r, lo, hi = self.percent()
        return {"successes": self.successes, "trials": self.trials, "rate_pct": round(r, 2),
                "ci_low_pct": round(lo, 2), "ci_high_pct": round(hi, 2),
                "confidence": self.confidence}


@dataclass(frozen=True)
class TrialResult:
    """One pilot rollout. `group` separates instruction sets (e.g. training / held-out)."""
    instruction: str
    success: bool
    group: str = "all"
    category: str | None = None  # default: instruction_category(instruction)


@dataclass
class GroupReport:
    group: str
    pooled: Rate
    per_instruction: dict[str, Rate] = field(default_factory=dict)  # in first-seen order
    per_category: dict[str, Rate] = field(default_factory=dict)
    categories: dict[str, str] = field(default_factory=dict)  # instruction -> category

    def to_dict(self) -> dict:
        return {"group": self.group, "pooled": self.pooled.to_dict(),
                "per_instruction": [{"instruction": k, "category": self.categories[k],
                                     **v.to_dict()} for k, v in self.per_instruction.items()],
                "per_category": {k: v.to_dict() for k, v in self.per_category.items()}}


def trials_from_counts(rows: Iterable[tuple], group: str = "all") -> list[TrialResult]:
    """(instruction, successes, trials) rows -> individual TrialResults (for tables of counts)."""
    out: list[TrialResult] = []
    for instruction, successes, trials in rows:
        if not 0 <= successes <= trials:
            raise ValueError(f"{instruction!r}: successes {successes} not in 0..{trials}")
        out += [TrialResult(instruction, k < successes, group) for k in range(trials)]
    return out


def trials_from_results(rows: Iterable[dict], success_key: str = "complete",
                        group_key: str | None = None) -> list[TrialResult]:
    """results.jsonl rows (see evaluation.result_row) -> TrialResults; a row's success is
    ``row[success_key]`` (truthy), its group ``row[group_key]`` when given."""
    out = []
    for row in rows:
        if "instruction" not in row or success_key not in row:
            raise ValueError(f"result row lacks 'instruction' or {success_key!r}: {sorted(row)}")
        group = str(row.get(group_key, "all")) if group_key else "all"
        out.append(TrialResult(str(row["instruction"]), bool(row[success_key]), group,
                               row.get("category")))
    return out


def summarize(trials: Iterable[TrialResult], confidence: float = 0.95) -> dict[str, GroupReport]:
    """Per group: pooled rate, per-instruction and per-category rates with Wilson intervals."""
    counts: dict[str, dict[str, list[int]]] = {}
    cats: dict[str, dict[str, str]] = {}
    for t in trials:
        per = counts.setdefault(t.group, {})
        c = per.setdefault(t.instruction, [0, 0])
        c[0] += int(bool(t.success))
        c[1] += 1
        category = t.category or instruction_category(t.instruction)
        known = cats.setdefault(t.group, {}).setdefault(t.instruction, category)
        if known != category:
            raise ValueError(f"instruction {t.instruction!r} given two categories: "
                             f"{known!r} and {category!r}")
    reports = {}
    for group, per in counts.items():
        by_cat: dict[str, list[int]] = {}
        for instruction, (s, n) in per.items():
            bc = by_cat.setdefault(cats[group][instruction], [0, 0])
            bc[0] += s
            bc[1] += n
        ordered = [c for c in CATEGORIES if c in by_cat] + sorted(set(by_cat) - set(CATEGORIES))
        reports[group] = GroupReport(
            group=group,
            pooled=Rate(sum(s for s, _ in per.values()), sum(n for _, n in per.values()), confidence),
            per_instruction={k: Rate(s, n, confidence) for k, (s, n) in per.items()},
            per_category={c: Rate(*by_cat[c], confidence) for c in ordered},
            categories=dict(cats[group]))
    return reports


def format_report(reports: dict[str, GroupReport]) -> str:
    """Markdown: one per-instruction table per group, then pooled and per-category rates."""
    pct = round(100 * next(iter(reports.values())).pooled.confidence) if reports else 95
    lines = []
    for group, rep in reports.items():
        lines += [f"### {group}", "", "| # | instruction | category | successes/trials |",
                  "| --- | --- | --- | --- |"]
        for i, (instruction, rate) in enumerate(rep.per_instruction.items(), 1):
            lines.append(f"| {i} | {instruction} | {rep.categories[instruction]} | "
                         f"{rate.successes}/{rate.trials} |")
        lines.append("")
    lines += [f"| group | pooled ({pct}% Wilson) | " +
              " | ".join(f"{c}" for c in CATEGORIES) + " |",
              "| --- | --- | " + " | ".join("---" for _ in CATEGORIES) + " |"]
    for group, rep in reports.items():
        cells = [str(rep.per_category[c]) if c in rep.per_category else "-" for c in CATEGORIES]
        lines.append(f"| {group} | {rep.pooled} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# =============================================================================== the files

PILOT_REPORT_NAME = "pilot_report.md"  # beside vla-bridge report's report.md, never it
RUN_REPORT_NAME = "report.md"  # vla-bridge report's (evaluation.report)


def pilot_report_path(path: str | Path) -> Path:
    """Where a pilot report asked for at `path` is written: a directory gets
    pilot_report.md inside; a file named report.md (vla-bridge report's) becomes
    pilot_report.md beside it; any other file name is kept. Its JSON goes beside it
    (``.with_suffix(".json")``)."""
    path = Path(path)
    if path.is_dir():
        return path / PILOT_REPORT_NAME
    return path.with_name(PILOT_REPORT_NAME) if path.name == RUN_REPORT_NAME else path


def is_pilot_data(data: object) -> bool:
    """Whether a report.json holds a pilot report (operator_console's: groups, stages,
    trials) rather than a run report."""
    return isinstance(data, dict) and {"stages", "trials"} <= set(data) and "method" not in data


def move_legacy_report(run_dir: str | Path) -> str:
    """A pilot report written as <run>/report.md (+ report.json), the path the docs named
    before, moved to pilot_report.md / .json so `vla-bridge report` does not overwrite it.
    Returns what was done ("" when nothing was moved)."""
    run_dir = Path(run_dir)
    md, js = run_dir / RUN_REPORT_NAME, run_dir / "report.json"
    target = run_dir / PILOT_REPORT_NAME
    try:
        data = json.loads(js.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not is_pilot_data(data) or target.exists() or target.with_suffix(".json").exists():
        return ""
    js.replace(target.with_suffix(".json"))
    if md.is_file():
        md.replace(target)
    return f"moved the pilot report from {md.name} to {target.name} (and its .json)"
