"""Paired sim-vs-real statistics: does success in simulation predict success on the real arm?

`vla-bridge report --pair SIM_RUN REAL_RUN` reads the two runs' results.jsonl and writes
``pair_report.md`` / ``pair_report.json``. Pure Python (math only), no rclpy.

Pairing
    A trial is (scene, task_id, round): round r of an instruction in sim is paired with round r
    of the same instruction on the real arm. Only rows with status "ok" count (an errored
    episode says nothing about the policy). A trial usable in one run only is counted and
    listed as unpaired, never silently dropped; a pair whose two rows give different
    instruction texts is still paired, with a warning. Every number below is over the pairs.

Per instruction (scene, task_id)
    sim and real successes / trials with 95% Wilson score intervals (``pilot_report``).

Overall, over the n pairs: a = both succeed, b = sim only, c = real only, d = both fail.
    * p_sim = (a+b)/n and p_real = (a+c)/n, each with a Wilson interval.
    * The paired difference p_sim - p_real = (b - c)/n with a 95% interval by Newcombe's
      hybrid score method for paired proportions (Newcombe 1998, Stat Med 17:2635, method 10):
          L = D - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)
          U = D + sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2)
      (l1, u1), (l2, u2): the Wilson limits of p_sim and p_real; phi: the correlation of the
      paired outcomes, (ad - bc) / sqrt((a+b)(c+d)(a+c)(b+d)), 0 when any margin is 0, its
      numerator shrunk to max(ad - bc - n/2, 0) when ad > bc as method 10 specifies (without
      that, a table where every pair agrees gets a zero-width interval).
      Why this method: the Wald interval (b - c)/n +- z se collapses to zero width when b = c = 0
      and leaves [-1, 1] near the ends; two independent Wilson intervals ignore that sim and
      real outcomes of one trial are correlated and come out too wide. Method 10 keeps Wilson's
      small-sample behaviour and uses the pairing; its limits stay within [-1, 1].
    * McNemar's exact test on the discordant pairs: under p_sim = p_real, b ~ Bin(b + c, 1/2);
      two-sided p = min(1, 2 P(X <= min(b, c))), 1 when there is no discordant pair.
    * Agreement (a + d)/n with a Wilson interval, and Cohen's kappa (agreement beyond chance),
      undefined (None) when both runs have a single outcome (chance agreement is then 1).

Caveat: the rounds of one instruction are treated as independent pairs. They share the
instruction, the object layout and the policy's habits for it, so their outcomes are
correlated; with few instructions of very different difficulty the intervals are too narrow
and the p-value too small. Read the per-instruction table beside the pooled numbers.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

from vla_bridge.reporting.pilot_report import wilson_interval
from vla_bridge.reporting.common import ReportError, load_rows
from vla_bridge.reporting.markdown import _md_table
from vla_bridge.evaluation.run_dir import RunDirectory

PAIR_REPORT_MD = "pair_report.md"
PAIR_REPORT_JSON = "pair_report.json"
RUNS = ("sim", "real")
CAVEAT = ("rounds of one instruction are treated as independent pairs; they share the "
          "instruction and its layout, so with few instructions the intervals are too narrow "
          "and the p-value too small")


# ================================================================================ statistics

def paired_phi(a: int, b: int, c: int, d: int) -> float:
    """Newcombe's (method 10) correlation of the paired outcomes: 0 when a margin is 0; when
    ad > bc its numerator is shrunk by n/2 (a continuity correction, floored at 0)."""
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    num = a * d - b * c
    if num > 0:
        num = max(num - (a + b + c + d) / 2.0, 0.0)
    return num / math.sqrt(margins)


def newcombe_paired_interval(a: int, b: int, c: int, d: int,
                             confidence: float = 0.95) -> tuple[float, float]:
    """Interval for p1 - p2 = (b - c)/n, p1 = (a+b)/n, p2 = (a+c)/n (Newcombe 1998, method 10)."""
    n = a + b + c + d
    if n <= 0 or min(a, b, c, d) < 0:
        raise ValueError(f"need non-negative counts with n > 0, got {(a, b, c, d)}")
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, confidence)
    l2, u2 = wilson_interval(a + c, n, confidence)
    phi = paired_phi(a, b, c, d)
    # the lower limit needs p1 low and p2 high; the correlation narrows it when phi > 0
    down = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    up = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    diff = p1 - p2
    return max(-1.0, diff - math.sqrt(max(down, 0.0))), min(1.0, diff + math.sqrt(max(up, 0.0)))


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: 2 P(X <= min(b, c)), X ~ Bin(b + c, 1/2), at most 1."""
    m = b + c
    if m == 0:
        return 1.0
    tail = sum(math.comb(m, k) for k in range(min(b, c) + 1)) / 2.0 ** m
    return min(1.0, 2.0 * tail)


def cohen_kappa(a: int, b: int, c: int, d: int) -> float | None:
    """(p_o - p_e) / (1 - p_e); None when p_e = 1 (each run has one outcome only)."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    expected = p1 * p2 + (1 - p1) * (1 - p2)
    if expected >= 1.0:
        return None
    return ((a + d) / n - expected) / (1 - expected)


# ================================================================================== pairing

def trial_name(key: tuple) -> str:
    scene, task, round_ = key
    return f"{scene}/{task}/r{round_}"


def _usable(rows: list[dict]) -> tuple[dict[tuple, dict], dict[tuple, str]]:
    """(rows with status "ok" by (scene, task_id, round), the status of the other rows);
    a repeated trial keeps its first row, as the report does."""
    ok, other = {}, {}
    for row in rows:
        key = (row.get("scene"), row.get("task_id"), row.get("round"))
        if None in key:
            continue
        if row.get("status") == "ok":
            ok.setdefault(key, row)
        else:
            other.setdefault(key, str(row.get("status")))
    return ok, other


def pair_trials(sim_rows: list[dict], real_rows: list[dict]) -> dict:
    """Pair the runs' usable rows: {"pairs": [(key, sim_row, real_row)], "unpaired": [...],
    "excluded": {"sim": n, "real": n} (rows not "ok"), "warnings": [...]}."""
    (sim, sim_other), (real, real_other) = _usable(sim_rows), _usable(real_rows)
    pairs, unpaired, warnings = [], [], []
    for key in sorted(set(sim) | set(real), key=_sort_key):
        if key in sim and key in real:
            pairs.append((key, sim[key], real[key]))
            texts = (sim[key].get("instruction") or "", real[key].get("instruction") or "")
            if texts[0] != texts[1]:
                warnings.append(f"{trial_name(key)}: different instructions, sim {texts[0]!r}, "
                                f"real {texts[1]!r} (paired anyway)")
            continue
        run, other, other_status = (("sim", "real", real_other) if key in sim
                                    else ("real", "sim", sim_other))
        why = f"status {other_status[key]!r}" if key in other_status else "no row"
        unpaired.append({"trial": trial_name(key), "run": run, "other": f"{other}: {why}"})
    excluded = {"sim": len(sim_other), "real": len(real_other)}
    return {"pairs": pairs, "unpaired": unpaired, "excluded": excluded, "warnings": warnings}


def _sort_key(key: tuple) -> tuple:
    scene, task, round_ = key
    return (str(scene), str(task), round_ if isinstance(round_, int) else 0, str(round_))


# =================================================================================== report

def _pct(x: float) -> float:
    return round(100.0 * x, 4)


def rate(successes: int, trials: int, confidence: float = 0.95) -> dict:
    """successes / trials with its Wilson interval, in percent."""
    lo, hi = wilson_interval(successes, trials, confidence)
    return {"successes": successes, "trials": trials, "rate_pct": _pct(successes / trials),
            "ci_low_pct": _pct(lo), "ci_high_pct": _pct(hi)}


def _counts(pairs) -> tuple[int, int, int, int]:
    a = b = c = d = 0
    for _, sim, real in pairs:
        s, r = bool(sim.get("complete")), bool(real.get("complete"))
        a, b, c, d = a + (s and r), b + (s and not r), c + (r and not s), d + (not s and not r)
    return a, b, c, d


def overall(a: int, b: int, c: int, d: int, confidence: float = 0.95) -> dict:
    """Every pooled number of the 2x2 table of pairs (percent units)."""
    n = a + b + c + d
    lo, hi = newcombe_paired_interval(a, b, c, d, confidence)
    kappa = cohen_kappa(a, b, c, d)
    return {"table": {"a_both": a, "b_sim_only": b, "c_real_only": c, "d_neither": d, "n": n},
            "sim": rate(a + b, n, confidence), "real": rate(a + c, n, confidence),
            "difference": {"sim_minus_real_pct": _pct((b - c) / n), "ci_low_pct": _pct(lo),
                           "ci_high_pct": _pct(hi), "phi": round(paired_phi(a, b, c, d), 6),
                           "method": "Newcombe 1998 hybrid score, paired (method 10)"},
            "mcnemar_exact_p": round(mcnemar_exact_p(b, c), 6),
            "agreement": rate(a + d, n, confidence),
            "kappa": None if kappa is None else round(kappa, 6)}


def per_instruction(pairs, confidence: float = 0.95) -> list[dict]:
    """One row per (scene, task_id): its instruction, sim and real rates, b and c."""
    groups: dict[tuple, list] = {}
    for pair in pairs:
        groups.setdefault(pair[0][:2], []).append(pair)
    out = []
    for (scene, task), group in groups.items():
        a, b, c, d = _counts(group)
        n = len(group)
        text = group[0][1].get("instruction") or group[0][2].get("instruction") or ""
        out.append({"scene": scene, "task_id": task, "instruction": text, "pairs": n,
                    "sim": rate(a + b, n, confidence), "real": rate(a + c, n, confidence),
                    "sim_only": b, "real_only": c})
    return out


def paired_report(sim_rows: list[dict], real_rows: list[dict], confidence: float = 0.95,
                  sim_run: str = "sim", real_run: str = "real") -> dict:
    """The paired analysis of two runs' rows as one JSON-able dict; ReportError when no trial
    is usable in both."""
    paired = pair_trials(sim_rows, real_rows)
    pairs = paired["pairs"]
    if not pairs:
        usable = {run: len(_usable(rows)[0]) for run, rows in zip(RUNS, (sim_rows, real_rows))}
        raise ReportError(f"no common pairs: no (scene, task_id, round) has a status 'ok' row "
                          f"in both runs (sim {usable['sim']}, real {usable['real']} ok trials)")
    n_only = {run: sum(u["run"] == run for u in paired["unpaired"]) for run in RUNS}
    return {"sim_run": sim_run, "real_run": real_run,
            "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "units": "percent",
            "confidence": confidence, "pairing": "(scene, task_id, round), status 'ok' rows only",
            "n_pairs": len(pairs), "n_instructions": len({k[:2] for k, _, _ in pairs}),
            "n_sim_only": n_only["sim"], "n_real_only": n_only["real"],
            "excluded_not_ok": paired["excluded"], "unpaired": paired["unpaired"],
            "warnings": paired["warnings"], "overall": overall(*_counts(pairs), confidence),
            "per_instruction": per_instruction(pairs, confidence), "caveat": CAVEAT}


def _run_rows(run_dir: Path) -> list[dict]:
    """The rows of one run directory; a missing directory or results.jsonl is a ReportError."""
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir}: no such run directory")
    if not RunDirectory(run_dir).results_path.is_file():
        raise ReportError(f"{run_dir}: no results.jsonl")
    return load_rows(run_dir)


def build_paired_report(sim_dir: str | Path, real_dir: str | Path,
                        confidence: float = 0.95) -> dict:
    sim_dir, real_dir = Path(sim_dir), Path(real_dir)
    return paired_report(_run_rows(sim_dir), _run_rows(real_dir), confidence,
                         str(sim_dir), str(real_dir))


def write_paired_report(report: dict, out_dir: str | Path) -> tuple[Path, Path]:
    """pair_report.md and pair_report.json into out_dir (created; atomic replace)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / PAIR_REPORT_MD, out_dir / PAIR_REPORT_JSON
    for path, text in ((md, format_paired_markdown(report)),
                       (js, json.dumps(report, indent=1, ensure_ascii=False))):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(path)
    return md, js


# ===================================================================================== text

def _rate_text(r: dict) -> str:
    return (f"{r['successes']}/{r['trials']} = {r['rate_pct']:.1f}% "
            f"[{r['ci_low_pct']:.1f}, {r['ci_high_pct']:.1f}]")


def _difference_text(o: dict) -> str:
    diff, t = o["difference"], o["table"]
    return (f"{diff['sim_minus_real_pct']:+.1f} points [{diff['ci_low_pct']:+.1f}, "
            f"{diff['ci_high_pct']:+.1f}]; McNemar exact p = {o['mcnemar_exact_p']:.3g} "
            f"(discordant pairs: {t['b_sim_only']} only sim succeeded, "
            f"{t['c_real_only']} only real)")


def _kappa_text(o: dict) -> str:
    return "undefined (one outcome only)" if o["kappa"] is None else f"{o['kappa']:.2f}"


def format_paired_console(report: dict) -> str:
    """A few lines for the terminal."""
    o = report["overall"]
    lines = [f"sim vs real: {report['n_pairs']} paired trials of {report['n_instructions']} "
             f"instructions (unpaired: {report['n_sim_only']} in sim only, {report['n_real_only']} "
             f"in real only)",
             f"  sim success   {_rate_text(o['sim'])}",
             f"  real success  {_rate_text(o['real'])}",
             f"  sim - real    {_difference_text(o)}",
             f"  agreement     {_rate_text(o['agreement'])}; Cohen's kappa {_kappa_text(o)}"]
    return "\n".join(lines + [f"warning: {w}" for w in report["warnings"]])


def format_paired_markdown(report: dict) -> str:
    """The paired analysis as a short Markdown section."""
    o, t = report["overall"], report["overall"]["table"]
    out = ["## Sim vs real (paired trials)", "",
           f"- sim run `{report['sim_run']}`, real run `{report['real_run']}`; "
           f"{report['n_pairs']} trials paired by (scene, task, round) over "
           f"{report['n_instructions']} instructions; status 'ok' rows only "
           f"(left out as not ok: sim {report['excluded_not_ok']['sim']}, "
           f"real {report['excluded_not_ok']['real']})",
           f"- success: sim {_rate_text(o['sim'])}, real {_rate_text(o['real'])} "
           f"(Wilson {100 * report['confidence']:g}%)",
           f"- sim - real: {_difference_text(o)}; interval: Newcombe's paired hybrid score",
           f"- agreement: {_rate_text(o['agreement'])} of the pairs; "
           f"Cohen's kappa {_kappa_text(o)}",
           f"- caveat: {report['caveat']}", ""]
    out += _md_table(["", "real success", "real failure"],
                     [["**sim success**", f"{t['a_both']} (a)", f"{t['b_sim_only']} (b)"],
                      ["**sim failure**", f"{t['c_real_only']} (c)", f"{t['d_neither']} (d)"]])
    out += ["", "Per instruction (its paired trials):", ""]
    out += _md_table(["scene", "task", "instruction", "sim", "real", "only sim", "only real"],
                     [[r["scene"], r["task_id"], r["instruction"].replace("|", "\\|"),
                       _rate_text(r["sim"]), _rate_text(r["real"]), r["sim_only"],
                       r["real_only"]] for r in report["per_instruction"]])
    if report["unpaired"]:
        out += ["", f"Unpaired trials ({report['n_sim_only']} in sim only, "
                    f"{report['n_real_only']} in real only), not in the numbers above:", ""]
        out += [f"- {u['trial']} (in {u['run']} only; {u['other']})" for u in report["unpaired"]]
    if report["warnings"]:
        out += ["", "Warnings:", ""] + [f"- {w}" for w in report["warnings"]]
    return "\n".join(out)
