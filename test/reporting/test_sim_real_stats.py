"""Sim-to-real statistics of `vla-bridge report --pair` (vla_bridge/reporting/sim_real.py):
the prediction-powered estimate of the real success rate, the real trials a target width
needs, MMRV and Pearson r across policies with their bootstrap, checked against values worked
out by hand here, seeded synthetic replications, and the command line on run directories."""
from __future__ import annotations

import json
import math
import random
import statistics

import pytest

from support.run_dirs import write_run

from vla_bridge.reporting import sim_real
from vla_bridge.reporting.paired import ONE_POLICY, multi_paired_report, paired_report
from vla_bridge.reporting.paired_text import format_paired_console, format_paired_markdown
from vla_bridge.reporting.pilot_report import wilson_interval

Z = 1.959964  # the 97.5% normal quantile
Z2 = Z * Z  # 3.841459


def _table(a: int, b: int, c: int, d: int) -> tuple[list[int], list[int]]:
    """(y real, f sim) of a paired table: a both succeed, b sim only, c real only, d neither."""
    y = [1] * a + [0] * b + [1] * c + [0] * d
    f = [1] * a + [1] * b + [0] * c + [0] * d
    return y, f


# ================================================================================ PPI by hand

# Paired table a=4, b=2, c=1, d=3 (n = 10): p_real = 5/10, p_sim (paired) = 6/10.
# Sim-only trials: 14 successes of N = 20 (0.7): the sim run is rosier than its paired part.
Y, F = _table(4, 2, 1, 3)
F_U = [1] * 14 + [0] * 6


def test_classical_ppi_by_hand():
    # theta = mean(f~) + mean(y - f) = 0.7 + (c - b)/n = 0.7 - 0.1 = 0.6
    # var(f) over all 30 sim trials (20 successes): (30/29)(2/3)(1/3) = 20/87 = 0.229885
    #   sim term = 0.229885 / 20 = 0.0114943
    # rectifier variance over the table + 0.5 per cell: weights (4.5, 2.5, 1.5, 3.5)/12 for
    #   (y,f) = (1,1), (0,1), (1,0), (0,0); y - f = 0, -1, 1, 0
    #   mean -1/12, E[v^2] = 4/12 -> var = 1/3 - 1/144 = 0.326389; / n = 0.0326389
    #   (the raw sample variance would be 2.9/9 = 0.322222)
    # se^2 = 0.0114943 + 0.0326389 = 0.0441332 -> se 0.210079, half-width 0.411749
    # -> [0.188251, 1.011749], clipped to [0.188251, 1]
    e = sim_real.ppi_mean(Y, F, F_U, 1.0)
    assert e["estimate"] == pytest.approx(0.6)
    assert e["sim_term_var"] == pytest.approx(20 / 87 / 20)
    assert e["rectifier_var"] == pytest.approx((1 / 3 - 1 / 144) / 10)
    assert e["rectifier_var_unadjusted"] == pytest.approx(2.9 / 9 / 10)
    assert e["se"] == pytest.approx(0.210079, abs=1e-6)
    assert (e["ci_low"], e["ci_high"]) == pytest.approx((0.188251, 1.0), abs=1e-5)


def test_tuned_ppi_by_hand():
    # cov(y, f) over the pairs: sum (y - 0.5)(f - 0.6) = 4(0.2) + 2(-0.2) + 1(-0.3) + 3(0.3) = 1.0
    #   -> 1/9 = 0.111111
    # lambda* = cov / ((1 + n/N) var(f)) = (1/9) / (1.5 * 20/87) = 87/270 = 0.322222
    # theta = lambda 0.7 + mean(y) - lambda mean(f) = 0.5 + 0.1 lambda = 0.532222
    # y - lambda f on the cells: 0.677778, -0.322222, 1, 0; weights (4.5, 2.5, 1.5, 3.5)/12
    #   mean 3.744444/12 = 0.312037, E[v^2] = 3.826790/12 = 0.318899 -> var 0.221532
    # se^2 = lambda^2 (20/87)/20 + 0.221532/10 = 0.0011934 + 0.0221532 = 0.0233466
    # -> se 0.152796, half-width 0.299474 -> [0.232748, 0.831697]
    lam = sim_real.tuned_lambda(Y, F, F_U)
    assert lam == pytest.approx(87 / 270)
    e = sim_real.ppi_mean(Y, F, F_U)  # lam=None: tuned
    assert e["lambda"] == pytest.approx(87 / 270)
    assert e["estimate"] == pytest.approx(0.5 + 0.1 * 87 / 270)
    assert e["se"] == pytest.approx(0.152796, abs=1e-6)
    assert (e["ci_low"], e["ci_high"]) == pytest.approx((0.232748, 0.831697), abs=1e-5)


def test_lambda_is_clipped_and_falls_to_zero():
    # y = f on every pair, var(f) over all sim small against cov: cov / ((1 + n/N) var) > 1
    y, f = _table(5, 0, 0, 5)  # cov = var_pairs(f) = 10/9 * 0.25 = 0.277778
    f_u = [1] * 100  # pooled var(f) over 110 trials: 105 ones -> (110/109)(105/110)(5/110)
    assert sim_real.tuned_lambda(y, f, f_u) == 1.0
    y, f = _table(0, 5, 5, 0)  # negative correlation: sim says nothing useful -> real only
    assert sim_real.tuned_lambda(y, f, [1, 0] * 10) == 0.0
    e = sim_real.ppi_mean(y, f, [1, 0] * 10)
    assert e["estimate"] == pytest.approx(0.5) and e["lambda"] == 0.0
    assert sim_real.tuned_lambda(*_table(3, 0, 0, 0), [1, 1]) == 0.0  # sim one outcome only


def test_ppi_edge_cases_do_not_crash():
    e = sim_real.ppi_mean([1], [1], [1, 0, 1])  # n = 1: estimate, no interval
    assert e["estimate"] == pytest.approx(1.0 * 0 + 1.0)  # lambda falls to 0 -> y itself
    assert e["ci_low"] is None and "fewer than 2" in e["interval_note"]
    e = sim_real.ppi_mean([1], [1], [1, 0, 1], 1.0)
    assert e["estimate"] == pytest.approx(2 / 3) and e["ci_low"] is None
    # every pair agrees and every trial succeeds: the raw variance is 0, the adjusted is not
    y, f = _table(10, 0, 0, 0)
    e = sim_real.ppi_mean(y, f, [1] * 50, 1.0)
    assert e["rectifier_var_unadjusted"] == 0.0 and e["rectifier_var"] > 0
    assert e["estimate"] == 1.0 and e["ci_high"] == 1.0 and 0.5 < e["ci_low"] < 1.0
    with pytest.raises(ValueError):
        sim_real.ppi_mean(y, f, [])  # N = 0 is the report's "no gain" case, not a number


# ==================================================================== biased sim, replicated

def _draw(rng: random.Random, p_sim: float, p_real: float) -> tuple[int, int]:
    """One trial's (y real, f sim): real success always succeeds in sim too, and a real
    failure succeeds in sim with (p_sim - p_real)/(1 - p_real): the strongest correlation
    these two rates allow, rho = sqrt(p_real (1 - p_sim) / (p_sim (1 - p_real)))."""
    y = int(rng.random() < p_real)
    return y, (1 if y else int(rng.random() < (p_sim - p_real) / (1 - p_real)))


def _replicate(p_sim, p_real, n, big_n, reps=500, seed=7):
    rng = random.Random(seed)
    out = {"covered": {1.0: 0, None: 0}, "estimate": {1.0: 0.0, None: 0.0},
           "width": {1.0: 0.0, None: 0.0}, "naive": 0.0, "wilson_width": 0.0}
    for _ in range(reps):
        pairs = [_draw(rng, p_sim, p_real) for _ in range(n)]
        f_u = [_draw(rng, p_sim, p_real)[1] for _ in range(big_n)]
        y, f = [p[0] for p in pairs], [p[1] for p in pairs]
        out["naive"] += (sum(f) + sum(f_u)) / (n + big_n) / reps
        lo, hi = wilson_interval(sum(y), n)
        out["wilson_width"] += (hi - lo) / reps
        for lam in (1.0, None):
            e = sim_real.ppi_mean(y, f, f_u, lam)
            out["covered"][lam] += e["ci_low"] <= p_real <= e["ci_high"]
            out["estimate"][lam] += e["estimate"] / reps
            out["width"][lam] += (e["ci_high"] - e["ci_low"]) / reps
    out["covered"] = {k: v / reps for k, v in out["covered"].items()}
    return out


def test_biased_sim_is_corrected_and_the_interval_covers():
    # sim succeeds 90 %, real 50 %; rho = sqrt(0.5 * 0.1 / (0.9 * 0.5)) = 1/3, the most two
    # binary outcomes with these rates can have. 50 pairs, 1000 sim-only trials.
    r = _replicate(0.9, 0.5, 50, 1000)
    assert r["naive"] == pytest.approx(0.9, abs=0.01)  # the sim run alone stays at 0.9
    assert r["estimate"][1.0] == pytest.approx(0.5, abs=0.015)  # PPI moves it to 0.5
    assert r["estimate"][None] == pytest.approx(0.5, abs=0.02)
    assert r["covered"][1.0] >= 0.9 and r["covered"][None] >= 0.9
    # one seeded run: the correction, not the average, is what a user sees
    rng = random.Random(3)
    pairs = [_draw(rng, 0.9, 0.5) for _ in range(50)]
    f_u = [_draw(rng, 0.9, 0.5)[1] for _ in range(1000)]
    e = sim_real.ppi_mean([p[0] for p in pairs], [p[1] for p in pairs], f_u)
    assert abs(e["estimate"] - 0.5) < 0.15 and e["ci_low"] <= 0.5 <= e["ci_high"]
    assert sum(f_u) / 1000 > 0.85


def test_correlated_sim_narrows_the_interval():
    # sim 60 %, real 50 %: rho = sqrt(0.5 * 0.4 / (0.6 * 0.5)) = 0.816. PPI++ is narrower than
    # real-only Wilson and still covers.
    r = _replicate(0.6, 0.5, 50, 1000)
    assert r["width"][None] < 0.8 * r["wilson_width"]
    assert r["covered"][None] >= 0.9 and r["covered"][1.0] >= 0.9


# ============================================================================ sample size

def test_real_only_plan_by_hand():
    # normal: n = z^2 p(1-p) / h^2 = 3.841459 * 0.25 / 0.01 = 96.04 -> 97
    assert sim_real.real_only_trials(0.5, 0.20) == 97
    # p = 0.45: 3.841459 * 0.2475 / 0.01 = 95.08 -> 96
    assert sim_real.real_only_trials(0.45, 0.20) == 96
    assert sim_real.real_only_trials(1.0, 0.20) is None  # no variance: no normal plan
    # Wilson at p = 1/2: width = z / sqrt(n + z^2) <= w  <=>  n >= z^2 / w^2 - z^2
    #   = 3.841459 * (25 - 1) = 92.19 -> 93
    assert sim_real.wilson_trials(0.5, 0.20) == 93
    assert sim_real.wilson_width(0.5, 93) == pytest.approx(Z / math.sqrt(93 + Z2))
    assert sim_real.wilson_width(0.5, 92) > 0.20 >= sim_real.wilson_width(0.5, 93)
    # at p = 0 the Wilson width z^2 / (n + z^2) still plans: n >= z^2 (1/w - 1) = 15.37 -> 16
    assert sim_real.wilson_trials(0.0, 0.20) == 16


def test_ppi_plan_by_hand():
    # a=4, b=2, c=1, d=3: p = 0.5, q = 0.6, s_y^2 = 0.25, s_f^2 = 0.24, cov = 0.4 - 0.3 = 0.1
    # classical, N = 1000: s_r^2 = 0.25 + 0.24 - 0.2 = 0.29; room = h^2 - z^2 s_f^2 / N
    #   = 0.01 - 0.000921950 = 0.00907805 -> n = 3.841459 * 0.29 / 0.00907805 = 122.7 -> 123
    assert sim_real.ppi_trials(4, 2, 1, 3, 1000, 0.20, tuned=False) == 123
    # tuned, unlimited sim: lambda = cov / s_f^2 = 0.416667, var = 0.25 - 0.01/0.24 = 0.208333
    #   -> n = 3.841459 * 0.208333 / 0.01 = 80.03 -> 81 (real only 97: saving 1 - 81/97)
    assert sim_real.ppi_trials(4, 2, 1, 3, None, 0.20) == 81
    assert sim_real.saving(97, 81) == pytest.approx(16 / 97)
    # a strongly correlated table a=45, b=5, c=0, d=50: p = 0.45, q = 0.5, cov = 0.225,
    # rho^2 = 0.225^2 / (0.2475 * 0.25) = 0.818182
    # unlimited: var = 0.2475 - 0.225^2/0.25 = 0.045 -> 3.841459 * 0.045 / 0.01 = 17.3 -> 18
    assert sim_real.ppi_trials(45, 5, 0, 50, None, 0.20) == 18
    # N = 100: least n with z^2 s_y^2 (N(1 - rho^2) + n) / (n (N + n)) <= h^2, i.e. the root of
    # h^2 n^2 + (h^2 N - z^2 s_y^2) n - z^2 s_y^2 N (1 - rho^2) = 0:
    #   z^2 s_y^2 = 0.950761; B = 1 - 0.950761 = 0.049239; C = 0.950761 * 100 * 0.181818
    #   n = (-B + sqrt(B^2 + 4 * 0.01 * 17.286564)) / 0.02 = 39.19 -> 40
    #   (lambda there = 0.225 / (1.4 * 0.25) = 0.64, inside [0, 1])
    assert sim_real.ppi_trials(45, 5, 0, 50, 100, 0.20) == 40
    # too few sim trials for classical PPI: the sim term alone is wider than the target
    assert sim_real.ppi_trials(45, 5, 0, 50, 5, 0.05, tuned=False) is None
    assert sim_real.ppi_trials(45, 5, 0, 50, 0, 0.20) == 96  # N = 0: tuned = real only


# ======================================================================== across policies

def test_mmrv_by_hand():
    # sim orders A < B < C, real orders A < C < B: the pair (B, C) is a rank violation worth
    # |0.4 - 0.3| = 0.1. A: no violation -> 0; B: 0.1; C: 0.1 -> MMRV = 0.2 / 3
    sim, real = [0.2, 0.5, 0.6], [0.1, 0.4, 0.3]
    assert sim_real.mmrv(sim, real) == pytest.approx(0.2 / 3)
    assert sim_real.mmrv([0.2, 0.5, 0.6], [0.1, 0.3, 0.4]) == 0.0  # same order
    # the worst violation counts, not the sum: real reverses sim's order A < B < C.
    # A swaps with B (0.3) and C (0.5) -> 0.5; B with A (0.3), C (0.2) -> 0.3;
    # C with A (0.5), B (0.2) -> 0.5; MMRV = (0.5 + 0.3 + 0.5) / 3 = 0.433333
    assert sim_real.mmrv([0.1, 0.2, 0.9], [0.6, 0.3, 0.1]) == pytest.approx(
        (0.5 + 0.3 + 0.5) / 3)
    # ties as SimplerEnv counts them: equal sim, different real is a violation for the one
    # policy whose real rate is lower (0 < 0 is False, 0.2 < 0.4 True) -> 0.2 / 2
    assert sim_real.mmrv([0.5, 0.5], [0.2, 0.4]) == pytest.approx(0.1)


def test_pearson():
    sim, real = [0.2, 0.5, 0.6], [0.1, 0.4, 0.3]
    # by hand: sum dx dy = 0.053333, sum dx^2 = 0.086667, sum dy^2 = 0.046667 -> 0.838628
    assert sim_real.pearson(sim, real) == pytest.approx(0.838628, abs=1e-6)
    assert sim_real.pearson(sim, real) == pytest.approx(statistics.correlation(sim, real))
    assert sim_real.pearson([0.5, 0.5, 0.5], real) is None  # no variance: undefined
    assert sim_real.pearson([0.5], [0.5]) is None


def _policy_outcomes(seed=11):
    rng = random.Random(seed)
    return [[_draw(rng, ps, pr)[::-1] for _ in range(40)]  # (sim, real) per trial
            for ps, pr in ((0.9, 0.6), (0.6, 0.3), (0.75, 0.5), (0.5, 0.2))]


def test_bootstrap_is_seeded_and_contains_the_estimate():
    outcomes = _policy_outcomes()
    sim = [sum(s for s, _ in o) / len(o) for o in outcomes]
    real = [sum(r for _, r in o) / len(o) for o in outcomes]
    point_mmrv, point_r = sim_real.mmrv(sim, real), sim_real.pearson(sim, real)
    a = sim_real.policy_bootstrap(outcomes, 2000, seed=5)
    assert a == sim_real.policy_bootstrap(outcomes, 2000, seed=5)  # same seed, same interval
    assert a != sim_real.policy_bootstrap(outcomes, 2000, seed=6)
    assert a["mmrv"][0] <= point_mmrv <= a["mmrv"][1]
    assert a["pearson"][0] <= point_r <= a["pearson"][1] <= 1.0
    assert a["mmrv"][1] > a["mmrv"][0] and a["pearson"][1] > a["pearson"][0]
    assert 0.0 <= a["mmrv"][0]


def test_percentile_is_numpys_linear():
    assert sim_real.percentile([1, 2, 3, 4], 0.5) == 2.5
    assert sim_real.percentile(list(range(11)), 0.025) == pytest.approx(0.25)


# =============================================================================== the report

def _row(task, round_, complete, policy="pi05"):
    return {"key": f"scene1/{task}/r{round_}", "task_id": task, "scene": "scene1", "level": "L0",
            "round": round_, "seed": round_, "status": "ok", "error": None,
            "instruction": f"do {task}", "intent_score": float(complete),
            "exec_score": float(complete), "complete": complete, "stages": [], "policy": policy}


def _runs(a, b, c, d, sim_only, policy="pi05"):
    """Rows with the paired table a, b, c, d of task t1 and `sim_only` = (successes, trials)
    further sim rounds of t1 without a real row."""
    sim, real, r = [], [], 0
    for s, y, k in ((1, 1, a), (1, 0, b), (0, 1, c), (0, 0, d)):
        for _ in range(k):
            r += 1
            sim.append(_row("t1", r, bool(s), policy))
            real.append(_row("t1", r, bool(y), policy))
    wins, trials = sim_only
    for i in range(trials):
        r += 1
        sim.append(_row("t1", r, i < wins, policy))
    return sim, real


def test_report_sections_match_the_functions():
    sim, real = _runs(4, 2, 1, 3, (14, 20))
    rep = paired_report(sim, real)
    ppi = rep["ppi"]
    assert ppi["n_paired"] == 10 and ppi["n_sim_only"] == 20 and ppi["default"] == "tuned"
    assert ppi["tuned"]["estimate_pct"] == pytest.approx(100 * (0.5 + 0.1 * 87 / 270), abs=1e-3)
    assert ppi["classical"]["ci_low_pct"] == pytest.approx(18.8251, abs=1e-3)
    assert ppi["real_only"]["rate_pct"] == 50.0 and ppi["naive_sim"]["successes"] == 20
    plan = rep["sample_size"]
    assert plan["real_only_normal"] == 97 and plan["real_only_wilson"] == 93
    assert plan["unlimited_sim_tuned"] == 81
    assert plan["saving_unlimited_pct"] == pytest.approx(100 * 16 / 97, abs=1e-3)
    assert plan["target_width_pct"] == 20.0
    assert rep["across_policies"] == {"n_policies": 1, "skipped": ONE_POLICY}
    json.dumps(rep)
    console, md = format_paired_console(rep), format_paired_markdown(rep)
    assert "PPI++       53.2% [23.3, 83.2]" in console and "real only 97" in console
    assert "across policies: skipped, one policy" in console
    assert "prediction-powered" in md and "SureSim" in md


def test_report_without_extra_sim_trials_says_no_gain():
    sim, real = _runs(4, 2, 1, 3, (0, 0))
    ppi = paired_report(sim, real)["ppi"]
    assert ppi["tuned"] is None and "N = n" in ppi["skipped"] and "no gain" in ppi["skipped"]
    assert "not computed" in format_paired_console(paired_report(sim, real))


def test_report_of_one_pair_and_of_all_agreeing_pairs():
    rep = paired_report(*_runs(1, 0, 0, 0, (3, 5)))
    assert rep["ppi"]["tuned"]["ci_low_pct"] is None
    assert "fewer than 2" in format_paired_console(rep)
    rep = paired_report(*_runs(10, 0, 0, 0, (20, 20)))  # every real trial succeeded
    assert rep["sample_size"]["real_only_normal"] is None
    assert rep["sample_size"]["small_sample_correction"] is True
    assert rep["ppi"]["tuned"]["ci_low_pct"] < 100.0
    format_paired_console(rep), format_paired_markdown(rep)


def test_multi_policy_report():
    runs = []
    for k, (ps, pr) in enumerate(((0.9, 0.6), (0.6, 0.3), (0.75, 0.5))):
        rng = random.Random(k)
        draws = [_draw(rng, ps, pr) for _ in range(60)]
        sim = [_row("t1", i, bool(f), f"p{k}") for i, (_, f) in enumerate(draws)]
        real = [_row("t1", i, bool(y), f"p{k}") for i, (y, _) in enumerate(draws[:30])]
        runs.append((sim, real, f"sim{k}", f"real{k}"))
    rep = multi_paired_report(runs, n_boot=500, seed=1)
    across = rep["across_policies"]
    assert rep["n_policies"] == 3 and [p["policy"] for p in across["policies"]] == ["p0", "p1",
                                                                                      "p2"]
    sim = [p["sim_pct"] / 100 for p in across["policies"]]
    real = [p["real_pct"] / 100 for p in across["policies"]]
    assert across["mmrv_pct"] == pytest.approx(100 * sim_real.mmrv(sim, real), abs=1e-3)
    assert across["pearson_r"] == pytest.approx(statistics.correlation(sim, real), abs=1e-5)
    assert across["mmrv_ci_low_pct"] <= across["mmrv_pct"] <= across["mmrv_ci_high_pct"]
    assert rep == {**multi_paired_report(runs, n_boot=500, seed=1), "generated": rep["generated"]}
    two = multi_paired_report(runs[:2], n_boot=50)["across_policies"]
    assert two["pearson_r"] is None and "2 policies" in two["pearson_note"]
    flat = [(s, [dict(r, complete=True) for r in re], a, b) for s, re, a, b in runs]
    assert "do not vary" in multi_paired_report(flat, n_boot=50)["across_policies"]["pearson_note"]


# ==================================================================================== CLI

@pytest.fixture
def policy_runs(tmp_path):
    """Three policies' (sim, real) run directories: 60 sim rounds, the first 30 also real."""
    dirs = []
    for k, (ps, pr) in enumerate(((0.9, 0.6), (0.6, 0.3), (0.75, 0.5))):
        rng = random.Random(k)
        draws = [_draw(rng, ps, pr) for _ in range(60)]
        sim = [_row("t1", i, bool(f), f"p{k}") for i, (_, f) in enumerate(draws)]
        real = [_row("t1", i, bool(y), f"p{k}") for i, (y, _) in enumerate(draws[:30])]
        dirs.append((write_run(tmp_path / f"sim{k}", sim),
                     write_run(tmp_path / f"real{k}", real)))
    return dirs


def test_cli_one_pair_gains_the_sections(policy_runs, capsys):
    from vla_bridge.cli import main
    sim, real = policy_runs[0]
    assert main(["report", "--pair", str(sim), str(real), "--target-width", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "PPI++" in out and "30-point wide" in out and "across policies: skipped" in out
    data = json.loads((real / "pair_report.json").read_text())
    assert {"overall", "per_instruction", "n_pairs", "ppi", "sample_size",
            "across_policies"} <= set(data)
    assert data["ppi"]["n_sim_only"] == 30 and data["sample_size"]["target_width_pct"] == 30.0


def test_cli_several_policies(policy_runs, tmp_path, capsys):
    from vla_bridge.cli import main
    argv = ["report"]
    for sim, real in policy_runs:
        argv += ["--pair", str(sim), str(real)]
    out_dir = tmp_path / "cmp"
    assert main(argv + ["--out", str(out_dir), "--bootstrap", "300", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "across 3 policies" in out and "MMRV" in out and "Pearson r" in out
    data = json.loads((out_dir / "pair_report.json").read_text())
    assert data["n_policies"] == 3 and data["across_policies"]["bootstrap"]["n_boot"] == 300
    assert (out_dir / "pair_report.md").read_text().startswith("## Sim vs real across 3")
    first = data["across_policies"]
    assert main(argv + ["--out", str(out_dir), "--bootstrap", "300", "--seed", "2"]) == 0
    assert json.loads((out_dir / "pair_report.json").read_text())["across_policies"] == first


@pytest.mark.parametrize("case, expected", [
    ("no_out", "give --out DIR"),
    ("missing", "no such run directory"),
    ("width", "--target-width"),
    ("width_no_pair", "--target-width goes with --pair only"),
])
def test_cli_bad_input_is_one_line(policy_runs, tmp_path, capsys, case, expected):
    from vla_bridge.cli import main
    (s0, r0), (s1, r1) = policy_runs[:2]
    argv = {"no_out": ["--pair", s0, r0, "--pair", s1, r1],
            "missing": ["--pair", s0, r0, "--pair", s1, tmp_path / "nope", "--out", tmp_path],
            "width": ["--pair", s0, r0, "--target-width", "1.5"],
            "width_no_pair": [r0, "--target-width", "0.2"]}[case]
    assert main(["report"] + [str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0], err
