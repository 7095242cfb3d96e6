"""Paired sim-vs-real statistics: does success in simulation predict success on the real arm?

`vla-bridge report --pair SIM_RUN REAL_RUN` reads the two runs' results.jsonl and writes
``pair_report.md`` / ``pair_report.json`` (the text: ``paired_text``). Pure Python (math
only), no rclpy.

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

Beyond the 2x2 table (formulas and references in ``sim_real``)
    * ``ppi``: the real success rate estimated from the paired trials plus the sim run's
      sim-only trials (prediction-powered inference; PPI++'s tuned lambda by default, the
      classical lambda = 1 beside it), next to the real-only Wilson interval.
    * ``sample_size``: real trials needed for a full interval width (``target_width``) from
      real trials alone and with the sim run, and the saving in percent.
    * ``across_policies``: with several (sim, real) run pairs, one per policy, MMRV and
      Pearson r of the policies' paired sim and real rates with bootstrap intervals
      (``multi_paired_report``); with one pair the section says why it is skipped.

Caveat: the rounds of one instruction are treated as independent pairs. They share the
instruction, the object layout and the policy's habits for it, so their outcomes are
correlated; with few instructions of very different difficulty the intervals are too narrow
and the p-value too small. Read the per-instruction table beside the pooled numbers.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

from vla_bridge.reporting.pilot_report import wilson_interval
from vla_bridge.reporting.common import ReportError, load_rows
from vla_bridge.evaluation.run_dir import RunDirectory
from vla_bridge.reporting import sim_real
from vla_bridge.reporting.sim_real import DEFAULT_TARGET_WIDTH

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
                  sim_run: str = "sim", real_run: str = "real",
                  target_width: float = DEFAULT_TARGET_WIDTH) -> dict:
    """The paired analysis of two runs' rows as one JSON-able dict; ReportError when no trial
    is usable in both."""
    paired = pair_trials(sim_rows, real_rows)
    pairs = paired["pairs"]
    if not pairs:
        usable = {run: len(_usable(rows)[0]) for run, rows in zip(RUNS, (sim_rows, real_rows))}
        raise ReportError(f"no common pairs: no (scene, task_id, round) has a status 'ok' row "
                          f"in both runs (sim {usable['sim']}, real {usable['real']} ok trials)")
    n_only = {run: sum(u["run"] == run for u in paired["unpaired"]) for run in RUNS}
    sim_only = sim_only_rows(sim_rows, pairs)
    return {"sim_run": sim_run, "real_run": real_run,
            "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "units": "percent",
            "confidence": confidence, "pairing": "(scene, task_id, round), status 'ok' rows only",
            "n_pairs": len(pairs), "n_instructions": len({k[:2] for k, _, _ in pairs}),
            "n_sim_only": n_only["sim"], "n_real_only": n_only["real"],
            "excluded_not_ok": paired["excluded"], "unpaired": paired["unpaired"],
            "warnings": paired["warnings"], "overall": overall(*_counts(pairs), confidence),
            "per_instruction": per_instruction(pairs, confidence), "caveat": CAVEAT,
            "ppi": ppi_section(pairs, sim_only, confidence),
            "sample_size": sample_size_section(pairs, len(sim_only), target_width, confidence),
            "across_policies": {"n_policies": 1, "skipped": ONE_POLICY}}


# ====================================================================== sim-to-real extras

ONE_POLICY = ("one policy: MMRV and Pearson r compare several policies' sim and real success "
              "rates (give --pair SIM_RUN REAL_RUN once per policy)")


def _outcomes(pairs) -> tuple[list[int], list[int]]:
    """(y: real outcomes, f: sim outcomes) of the pairs, 0/1."""
    return ([int(bool(real.get("complete"))) for _, _, real in pairs],
            [int(bool(sim.get("complete"))) for _, sim, _ in pairs])


def sim_only_rows(sim_rows: list[dict], pairs) -> list[tuple[tuple, dict]]:
    """The sim run's usable trials without a paired real trial (``pair_trials``' unpaired
    rows of run "sim"): the unlabelled set of PPI, as (key, row)."""
    paired_keys = {key for key, _, _ in pairs}
    return [(key, row) for key, row in sorted(_usable(sim_rows)[0].items(),
                                              key=lambda kv: _sort_key(kv[0]))
            if key not in paired_keys]


def _ppi_json(est: dict) -> dict:
    def p(x):
        return None if x is None else _pct(x)
    width = (None if est["ci_low"] is None else _pct(est["ci_high"] - est["ci_low"]))
    return {"method": est["method"], "lambda": round(est["lambda"], 6),
            "estimate_pct": p(est["estimate"]), "ci_low_pct": p(est["ci_low"]),
            "ci_high_pct": p(est["ci_high"]), "width_pct": width,
            "se_pct": p(est["se"]),
            "rectifier_variance": "2x2 table with 0.5 added to each cell (Agresti & Min 2005)",
            "interval": "normal (CLT), clipped to [0, 100]",
            "interval_note": est["interval_note"]}


def ppi_section(pairs, sim_only: list[tuple[tuple, dict]], confidence: float = 0.95) -> dict:
    """The prediction-powered estimate of the real success rate (``sim_real.ppi_mean``):
    tuned (the default) and classical, beside the real-only Wilson rate and the naive sim
    rate (every usable sim trial, paired or not)."""
    y, f = _outcomes(pairs)
    f_u = [int(bool(row.get("complete"))) for _, row in sim_only]
    n, m = len(y), len(f_u)
    out = {"n_paired": n, "n_sim_only": m, "default": "tuned",
           "real_only": rate(sum(y), n, confidence),
           "naive_sim": rate(sum(f) + sum(f_u), n + m, confidence),
           "tuned": None, "classical": None, "skipped": None, "notes": []}
    if m == 0:
        out["skipped"] = (f"the sim run has no trial beyond the {n} paired ones (N = n): PPI "
                          f"is the real-only rate and gives no gain")
        return out
    out["tuned"] = _ppi_json(sim_real.ppi_mean(y, f, f_u, None, confidence))
    out["classical"] = _ppi_json(sim_real.ppi_mean(y, f, f_u, 1.0, confidence))
    paired_tasks = {key[:2] for key, _, _ in pairs}
    strangers = sum(key[:2] not in paired_tasks for key, _ in sim_only)
    if strangers:
        out["notes"].append(f"{strangers} of the {m} sim-only trials are of instructions with no "
                            f"paired trial; PPI assumes the paired trials are drawn like the "
                            f"sim-only ones")
    if n < 30:
        out["notes"].append(f"{n} paired trials: the CLT interval is approximate")
    return out


def sample_size_section(pairs, n_sim_only: int, target_width: float = DEFAULT_TARGET_WIDTH,
                        confidence: float = 0.95) -> dict:
    """Real trials for a full interval width `target_width` (a fraction), real only and with
    the sim run (``sim_real``: real_only_trials, wilson_trials, ppi_trials)."""
    a, b, c, d = _counts(pairs)
    n = a + b + c + d
    p = (a + c) / n
    corrected = b + c == 0  # sim predicted every pair: plan PPI with 0.5 added to each cell
    cells = (a + 0.5, b + 0.5, c + 0.5, d + 0.5) if corrected else (a, b, c, d)
    real_normal = sim_real.real_only_trials(p, target_width, confidence)
    tuned = sim_real.ppi_trials(*cells, n_sim_only, target_width, confidence, tuned=True)
    tuned_inf = sim_real.ppi_trials(*cells, None, target_width, confidence, tuned=True)
    classical = sim_real.ppi_trials(*cells, n_sim_only, target_width, confidence, tuned=False)
    classical_inf = sim_real.ppi_trials(*cells, None, target_width, confidence, tuned=False)

    def save(x):
        s = sim_real.saving(real_normal, x)
        return None if s is None else _pct(s)

    notes = []
    if real_normal is None:
        notes.append("every paired real trial has the same outcome: the normal plan is 0 "
                     "trials (undefined); the Wilson figure still holds")
    if corrected:
        notes.append("sim and real agree on every pair: the PPI plans use the paired table "
                     "with 0.5 added to each cell")
    if n_sim_only == 0:
        notes.append("no sim-only trials: 'with sim' equals real only; 'unlimited sim' is what "
                     "a large extra sim run could give")
    return {"target_width_pct": _pct(target_width), "confidence": confidence,
            "p_real_pct": _pct(p), "n_sim_only": n_sim_only,
            "planning": "moments of the paired table (plug-in, divisor n)",
            "real_only_normal": real_normal,
            "real_only_wilson": sim_real.wilson_trials(p, target_width, confidence),
            "with_sim_tuned": tuned, "with_sim_classical": classical,
            "unlimited_sim_tuned": tuned_inf, "unlimited_sim_classical": classical_inf,
            "saving_pct": save(tuned), "saving_classical_pct": save(classical),
            "saving_unlimited_pct": save(tuned_inf), "small_sample_correction": corrected,
            "notes": notes, "reference": sim_real.SAVING_REFERENCE}


def _policy_label(report: dict, real_rows: list[dict]) -> str:
    names = {row.get("policy") for row in real_rows if row.get("policy")}
    return str(names.pop()) if len(names) == 1 else Path(report["real_run"]).name or "policy"


def across_policies(reports: list[dict], outcomes: list[list[tuple[int, int]]],
                    n_boot: int = 2000, seed: int = 0, confidence: float = 0.95) -> dict:
    """MMRV and Pearson r of the policies' paired sim and real rates with bootstrap intervals
    (``sim_real.policy_bootstrap``); `outcomes[k]`: policy k's (sim, real) outcomes."""
    k = len(reports)
    if k < 2:
        return {"n_policies": k, "skipped": ONE_POLICY}
    sim = [sum(s for s, _ in o) / len(o) for o in outcomes]
    real = [sum(r for _, r in o) / len(o) for o in outcomes]
    boot = sim_real.policy_bootstrap(outcomes, n_boot, seed, confidence)
    r = sim_real.pearson(sim, real) if k >= 3 else None
    if k < 3:
        pearson_note = "2 policies: Pearson r is +-1 by construction (needs >= 3)"
    elif r is None:
        pearson_note = ("undefined: the " + ("sim" if len(set(sim)) == 1 else "real")
                        + " success rates do not vary across the policies")
    else:
        pearson_note = None
    r_ci = boot["pearson"] if r is not None else None
    return {"n_policies": k, "skipped": None,
            "policies": [{"policy": rep["policy"], "sim_run": rep["sim_run"],
                          "real_run": rep["real_run"], "n_pairs": rep["n_pairs"],
                          "sim_pct": _pct(s), "real_pct": _pct(x)}
                         for rep, s, x in zip(reports, sim, real)],
            "rates": "each policy's paired trials (the same trials in sim and real)",
            "mmrv_pct": _pct(sim_real.mmrv(sim, real)),
            "mmrv_ci_low_pct": _pct(boot["mmrv"][0]), "mmrv_ci_high_pct": _pct(boot["mmrv"][1]),
            "pearson_r": None if r is None else round(r, 6),
            "pearson_ci_low": None if r_ci is None else round(r_ci[0], 6),
            "pearson_ci_high": None if r_ci is None else round(r_ci[1], 6),
            "pearson_note": pearson_note,
            "bootstrap": {"n_boot": n_boot, "seed": seed, "interval": "percentile",
                          "over": "each policy's paired trials, resampled with replacement, "
                                  "policies independently",
                          "pearson_undefined_replicates": boot["pearson_undefined"]}}


def multi_paired_report(runs: list[tuple[list[dict], list[dict], str, str]],
                        confidence: float = 0.95, target_width: float = DEFAULT_TARGET_WIDTH,
                        n_boot: int = 2000, seed: int = 0) -> dict:
    """Several policies, each a (sim_rows, real_rows, sim_run, real_run): every policy's paired
    report (``policies``) and the comparison across them (``across_policies``)."""
    reports, outcomes = [], []
    for sim_rows, real_rows, sim_run, real_run in runs:
        try:
            report = paired_report(sim_rows, real_rows, confidence, sim_run, real_run,
                                   target_width)
        except ReportError as exc:
            raise ReportError(f"{sim_run} vs {real_run}: {exc}") from None
        report["policy"] = _policy_label(report, real_rows)
        pairs = pair_trials(sim_rows, real_rows)["pairs"]
        y, f = _outcomes(pairs)
        outcomes.append(list(zip(f, y)))
        reports.append(report)
    labels = [r["policy"] for r in reports]
    for r in reports:
        if labels.count(r["policy"]) > 1:
            r["policy"] = f"{r['policy']} ({r['real_run']})"
    across = across_policies(reports, outcomes, n_boot, seed, confidence)
    for r in reports:
        r["across_policies"] = {"n_policies": len(reports), "skipped": "see the top level"}
    return {"generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "units": "percent",
            "confidence": confidence, "n_policies": len(reports), "policies": reports,
            "across_policies": across}


def _run_rows(run_dir: Path) -> list[dict]:
    """The rows of one run directory; a missing directory or results.jsonl is a ReportError."""
    if not run_dir.is_dir():
        raise ReportError(f"{run_dir}: no such run directory")
    if not RunDirectory(run_dir).results_path.is_file():
        raise ReportError(f"{run_dir}: no results.jsonl")
    return load_rows(run_dir)


def build_paired_report(sim_dir: str | Path, real_dir: str | Path,
                        confidence: float = 0.95,
                        target_width: float = DEFAULT_TARGET_WIDTH) -> dict:
    sim_dir, real_dir = Path(sim_dir), Path(real_dir)
    return paired_report(_run_rows(sim_dir), _run_rows(real_dir), confidence,
                         str(sim_dir), str(real_dir), target_width)


def build_multi_paired_report(pairs: list[tuple[str | Path, str | Path]],
                              confidence: float = 0.95,
                              target_width: float = DEFAULT_TARGET_WIDTH,
                              n_boot: int = 2000, seed: int = 0) -> dict:
    """``multi_paired_report`` of several (SIM_RUN, REAL_RUN) directories."""
    runs = [(_run_rows(Path(s)), _run_rows(Path(r)), str(s), str(r)) for s, r in pairs]
    return multi_paired_report(runs, confidence, target_width, n_boot, seed)
