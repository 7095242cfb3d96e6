"""Sim-to-real statistics beyond the 2x2 table: the real success rate estimated with the help of
a large sim run (prediction-powered inference), the real trials a chosen interval width needs
with and without sim, and, across several policies, how well sim ranks and tracks real.

Pure Python (``math``, ``random`` and ``statistics`` of the standard library), no rclpy. Every
function takes and returns fractions; ``paired.py`` turns them into the report's percent.

Notation. A paired trial i = 1..n was run in sim and on the real arm: f_i = 1 when it succeeded
in sim (the "prediction"), y_i = 1 when it succeeded on the arm (the label). The sim run's
other usable trials (``pair_trials``' unpaired rows of run "sim": no usable real row) are the
unlabelled set, f~_j, j = 1..N. z: the normal quantile of the confidence level.

Prediction-powered estimate of p_real (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic 2023,
"Prediction-powered inference", Science 382:669; used for robot policies by SureSim, Badithela
et al. 2025, arXiv 2510.04354):
    theta(lambda) = lambda * mean_j f~_j + mean_i (y_i - lambda f_i)
    se^2(lambda)  = lambda^2 var(f) / N + var~(y - lambda f) / n
    interval      = theta +- z se, clipped (with theta) to [0, 1]
  * classical PPI: lambda = 1. The rectifier mean_i (y_i - f_i) removes sim's bias, so theta is
    unbiased for p_real whatever the sim-to-real gap; the gain over the real-only mean comes
    from var(y - f) < var(y), which needs sim and real outcomes to be strongly correlated
    (and not too different in rate). With a weak correlation classical PPI can be *wider*
    than real-only.
  * power-tuned PPI++ (Angelopoulos, Duchi, Zrnic 2023, "PPI++: Efficient prediction-powered
    inference", arXiv 2311.01453), the report's default: the lambda that minimises se^2,
        lambda* = cov(y, f) / ((1 + n/N) var(f)),   clipped to [0, 1],
    estimated from the data (cov over the n pairs). lambda = 0 is the real-only mean, so
    tuned PPI is asymptotically never worse than real-only; it falls to lambda = 0 when sim
    says nothing about real (cov <= 0, or sim has one outcome only).
  * var(f) is estimated over all n + N sim trials (they come from one distribution, which is
    what PPI assumes anyway) and cov(y, f) over the n pairs, both with divisor (count - 1).
  * var~(y - lambda f), the rectifier's variance, is not the raw sample variance over the
    pairs but the variance of y - lambda f over the pairs' 2x2 table with 0.5 added to each
    cell (cells (y, f) = (1,1), (0,1), (1,0), (0,0) weigh (count + 0.5)/(n + 2)): the
    adjustment of Agresti & Min 2005 (Stat Med 24:729) for matched proportions, whose
    difference (c - b)/n is exactly the lambda = 1 rectifier, used here for the variance only
    (the estimate stays PPI's unbiased one). The raw variance collapses to 0 when every pair
    has the same y - lambda f (sim and real agree on every pair, or every real trial failed),
    which would treat the rectifier as known exactly; and near 0 or 1 the Wald-type interval
    undercovers. In 500 seeded replications per setting (n = 20-50 pairs, N = 500-1000,
    p_sim/p_real = 0.9/0.5, 0.6/0.5, 0.95/0.9) the adjusted 95 % PPI++ interval covered p_real
    91-95 % of the time, the raw one 85-93 % (0.85 at 0.95/0.9); test_sim_real_stats.py
    checks two of the settings. Every variance is then > 0, so no interval collapses.
  * Equivalently theta(lambda) = lambda' mean_all(f) + mean_i(y_i - lambda' f_i) over all
    n + N sim trials with lambda' = lambda (n + N)/N: the "mean over every sim trial"
    spelling is the same family, so nothing is lost by keeping the two sets apart.
  * No sim trial beyond the paired ones (N = 0, i.e. the whole sim run is the paired set):
    PPI is the real-only mean; the report says so instead of printing a second copy of it.
  * n < 2: one pair says nothing about the rectifier's spread; the estimate is given, the
    interval is not (``interval_note`` says why).
  * The CLT interval is asymptotic; with a few dozen pairs it is approximate (SureSim uses
    non-asymptotic Waudby-Smith-Ramdas intervals for that reason). And PPI assumes the paired
    trials are a random subset of the sim trials' distribution: sim-only trials of
    instructions never run on the arm shift what theta estimates.

Real trials needed for a full width w at confidence c (h = w/2), planned with the moments of
the paired table (plug-in, divisor n): p = p_real, q = p_sim, s_y^2 = p(1 - p),
s_f^2 = q(1 - q), cov = P(both) - p q.
  * real only, normal:  n = ceil(z^2 p (1 - p) / h^2)  (the Wald width; undefined at p = 0, 1);
    real only, Wilson: the least n with 2 z sqrt(p(1-p)/n + z^2/(4n^2)) / (1 + z^2/n) <= w.
  * with sim, classical PPI: n = ceil(z^2 s_r^2 / (h^2 - z^2 s_f^2 / N)), s_r^2 = var(y - f) =
    s_y^2 + s_f^2 - 2 cov; undefined when z^2 s_f^2 / N >= h^2 (the sim term alone is wider).
  * with sim, tuned PPI++: the least n with z^2 V(n) <= h^2,
    V(n) = min over lambda in [0, 1] of lambda^2 s_f^2 / N + (s_y^2 - 2 lambda cov + lambda^2
    s_f^2) / n  (decreasing in n; unclipped it is s_y^2 (1 - rho^2 N / (N + n)) / n).
    "Unlimited sim" is N -> infinity: n = ceil(z^2 min_lambda var(y - lambda f) / h^2).
    When sim and real agree on every pair (b = c = 0) the PPI plans use the table with 0.5
    added to each cell, as the interval does (else the residual variance is 0).
  * saving = 1 - n_with_sim / n_real_only (normal), the like-for-like comparison. SureSim
    reports 20-25 % fewer hardware trials at equal interval width for its policies.

Across K >= 2 policies, each with its paired sim and real success rates S_k, R_k:
  * MMRV, mean maximum rank violation (Li et al. 2024, "Evaluating Real-World Robot
    Manipulation Policies in Simulation", SimplerEnv):
        MMRV = (1/K) sum_i max_j |R_i - R_j| 1[(S_i < S_j) != (R_i < R_j)]
    (0: sim orders every pair of policies as real does; a violation costs the real gap of the
    policies it swaps. Ties count as SimplerEnv counts them: equal sim rates with different
    real rates are a violation.)
  * Pearson r of (S_k, R_k), K >= 3 (with 2 policies it is +-1 by construction); undefined
    when the sim or the real rates do not vary.
  * Bootstrap: each policy's paired trials are resampled with replacement (n_k of them, the
    same resample for its sim and real outcome, so the pairing is kept), every policy
    independently; MMRV and r are recomputed; the percentile interval of ``n_boot``
    replicates from ``random.Random(seed)``. Replicates where r is undefined are left out
    and counted. This is the sampling error of the rates given these policies, not of the
    choice of policies, and it inherits the rounds-are-independent caveat.
"""
from __future__ import annotations

import math
import random
from statistics import NormalDist
from typing import Sequence

DEFAULT_TARGET_WIDTH = 0.20
SAVING_REFERENCE = ("SureSim (Badithela et al. 2025, arXiv 2510.04354) reports 20-25 % fewer "
                    "hardware trials at equal interval width")


def z_value(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _var(xs: Sequence[float]) -> float:
    """Sample variance (divisor len - 1); 0.0 for fewer than 2 values."""
    if len(xs) < 2:
        return 0.0
    m = _mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def _cov(xs: Sequence[float], ys: Sequence[float]) -> float:
    if len(xs) < 2:
        return 0.0
    mx, my = _mean(xs), _mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (len(xs) - 1)


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


# ============================================================================= PPI estimate

def tuned_lambda(y: Sequence[float], f: Sequence[float], f_unlabelled: Sequence[float]) -> float:
    """PPI++'s lambda* = cov(y, f) / ((1 + n/N) var(f)) clipped to [0, 1]; 0 when N = 0, n < 2
    or sim has one outcome only."""
    n, big_n = len(y), len(f_unlabelled)
    var_f = _var(list(f) + list(f_unlabelled))
    if big_n == 0 or n < 2 or var_f <= 0:
        return 0.0
    return _clip01(_cov(y, f) / ((1.0 + n / big_n) * var_f))


def _smoothed_residual_var(y: Sequence[float], f: Sequence[float], lam: float) -> float:
    """var(y - lam f) over the 2x2 table with 0.5 added to each cell (Agresti & Min 2005)."""
    cells = {(1, 1): 0.5, (0, 1): 0.5, (1, 0): 0.5, (0, 0): 0.5}  # (y, f) -> weight
    for yi, fi in zip(y, f):
        cells[(int(yi), int(fi))] += 1.0
    total = sum(cells.values())
    values = {k: k[0] - lam * k[1] for k in cells}
    mean = sum(w * values[k] for k, w in cells.items()) / total
    return sum(w * (values[k] - mean) ** 2 for k, w in cells.items()) / total


def ppi_mean(y: Sequence[float], f: Sequence[float], f_unlabelled: Sequence[float],
             lam: float | None = None, confidence: float = 0.95) -> dict:
    """The prediction-powered estimate of E[y] with its CLT interval (see the module text).

    y, f: the paired real and sim outcomes; f_unlabelled: the sim-only outcomes; lam: 1.0 for
    classical PPI, None for PPI++'s tuned lambda. Returns fractions: estimate, ci_low, ci_high
    (None with ``interval_note`` saying why), se, lambda and the variance terms."""
    n, big_n = len(y), len(f_unlabelled)
    if n == 0 or len(f) != n:
        raise ValueError(f"need as many sim as real outcomes, n > 0 (got {n}, {len(f)})")
    if big_n == 0:
        raise ValueError("no unlabelled sim trial: PPI is the real-only mean")
    tuned = lam is None
    lam = tuned_lambda(y, f, f_unlabelled) if tuned else float(lam)
    residual = [yi - lam * fi for yi, fi in zip(y, f)]
    raw = lam * _mean(f_unlabelled) + _mean(residual)
    out = {"method": "PPI++ (tuned lambda)" if tuned else "classical PPI (lambda = 1)",
           "lambda": lam, "estimate": _clip01(raw), "estimate_unclipped": raw,
           "n_paired": n, "n_unlabelled": big_n, "se": None, "ci_low": None, "ci_high": None,
           "sim_term_var": None, "rectifier_var": None, "rectifier_var_unadjusted": None,
           "interval_note": None}
    if n < 2:
        out["interval_note"] = "fewer than 2 paired trials: the rectifier's variance is undefined"
        return out
    var_f = _var(list(f) + list(f_unlabelled))
    sim_term = lam * lam * var_f / big_n
    rect_term = _smoothed_residual_var(y, f, lam) / n
    se = math.sqrt(sim_term + rect_term)
    half = z_value(confidence) * se
    out.update(se=se, ci_low=_clip01(raw - half), ci_high=_clip01(raw + half),
               sim_term_var=sim_term, rectifier_var=rect_term,
               rectifier_var_unadjusted=_var(residual) / n)
    return out


# ============================================================================== sample size

def _ceil(x: float) -> int:
    return max(1, math.ceil(x - 1e-9))


def real_only_trials(p: float, width: float, confidence: float = 0.95) -> int | None:
    """n = ceil(z^2 p (1 - p) / (w/2)^2): the normal (Wald) plan; None at p = 0 or 1."""
    var = p * (1.0 - p)
    if var <= 0:
        return None
    z = z_value(confidence)
    return _ceil(z * z * var / (width / 2.0) ** 2)


def wilson_width(p: float, n: int, confidence: float = 0.95) -> float:
    """Full width of the Wilson interval at success rate p over n trials (unclipped)."""
    z = z_value(confidence)
    return 2 * z * math.sqrt(p * (1 - p) / n + z * z / (4.0 * n * n)) / (1 + z * z / n)


def _least_n(ok, upper: int = 1 << 40) -> int | None:
    """The least n in 1..upper with ok(n), ok monotone (False ... True); None if none."""
    if not ok(upper):
        return None
    lo, hi = 1, upper
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


def wilson_trials(p: float, width: float, confidence: float = 0.95) -> int | None:
    """The least n whose Wilson interval at rate p is at most `width` wide."""
    return _least_n(lambda n: wilson_width(p, n, confidence) <= width)


def _table_moments(a: float, b: float, c: float, d: float) -> tuple[float, float, float]:
    """(s_y^2, s_f^2, cov) of the paired table, divisor n; y = real, f = sim."""
    n = a + b + c + d
    p, q = (a + c) / n, (a + b) / n
    return p * (1 - p), q * (1 - q), a / n - p * q


def ppi_trials(a: float, b: float, c: float, d: float, n_sim: int | None, width: float,
               confidence: float = 0.95, tuned: bool = True) -> int | None:
    """Real (paired) trials PPI needs for full width `width` beside n_sim sim-only trials
    (None: unlimited sim), planned with the moments of the table a, b, c, d (a = both
    succeed, b = sim only, c = real only, d = neither). None when no n reaches the width
    (classical PPI with too few sim trials) or the variance is 0. n_sim = 0: tuned PPI is
    the real-only plan, classical PPI has none."""
    s_y, s_f, cov = _table_moments(a, b, c, d)
    z2, h2 = z_value(confidence) ** 2, (width / 2.0) ** 2
    if not tuned:
        if n_sim == 0:
            return None
        s_r = s_y + s_f - 2 * cov
        room = h2 - (0.0 if n_sim is None else z2 * s_f / n_sim)
        if s_r <= 0 or room <= 0:
            return None
        return _ceil(z2 * s_r / room)

    def variance(n: int) -> float:  # V(n) at the best lambda in [0, 1] (convex: clip it)
        if s_f <= 0 or n_sim == 0:
            lam = 0.0
        elif n_sim is None:
            lam = _clip01(cov / s_f)
        else:
            lam = _clip01(cov / ((1 + n / n_sim) * s_f))
        sim_term = 0.0 if n_sim is None or lam == 0 else lam * lam * s_f / n_sim
        return sim_term + (s_y - 2 * lam * cov + lam * lam * s_f) / n

    if variance(1) <= 1e-15:
        return None
    return _least_n(lambda n: z2 * variance(n) <= h2)


def saving(n_real: int | None, n_sim: int | None) -> float | None:
    """1 - n_with_sim / n_real_only (fraction), None when either is undefined."""
    if not n_real or n_sim is None:
        return None
    return 1.0 - n_sim / n_real


# ========================================================================= across policies

def mmrv(sim: Sequence[float], real: Sequence[float]) -> float:
    """Mean maximum rank violation (SimplerEnv, Li et al. 2024), in the rates' units."""
    k = len(sim)
    if k == 0 or len(real) != k:
        raise ValueError("need one sim and one real rate per policy")
    total = 0.0
    for i in range(k):
        total += max((abs(real[i] - real[j]) for j in range(k)
                      if (sim[i] < sim[j]) != (real[i] < real[j])), default=0.0)
    return total / k


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r; None with fewer than 2 points or when xs or ys does not vary."""
    if len(xs) < 2 or len(xs) != len(ys):
        return None
    mx, my = _mean(xs), _mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-15 or syy <= 1e-15:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) with linear interpolation between order statistics (numpy's
    default)."""
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def policy_bootstrap(outcomes: Sequence[Sequence[tuple[int, int]]], n_boot: int = 2000,
                     seed: int = 0, confidence: float = 0.95) -> dict:
    """Percentile intervals of MMRV and Pearson r over resampled trials.

    outcomes[k]: policy k's paired (sim, real) outcomes (0/1). Returns {"mmrv": (lo, hi),
    "pearson": (lo, hi) or None, "pearson_undefined": replicates without an r, "n_boot",
    "seed"}."""
    rng = random.Random(seed)
    mmrvs, rs, undefined = [], [], 0
    for _ in range(n_boot):
        sim, real = [], []
        for pairs in outcomes:
            draw = rng.choices(pairs, k=len(pairs))
            sim.append(sum(s for s, _ in draw) / len(draw))
            real.append(sum(r for _, r in draw) / len(draw))
        mmrvs.append(mmrv(sim, real))
        r = pearson(sim, real)
        if r is None:
            undefined += 1
        else:
            rs.append(r)
    alpha = (1.0 - confidence) / 2.0
    pearson_ci = (percentile(rs, alpha), percentile(rs, 1 - alpha)) if rs else None
    return {"mmrv": (percentile(mmrvs, alpha), percentile(mmrvs, 1 - alpha)),
            "pearson": pearson_ci, "pearson_undefined": undefined, "n_boot": n_boot, "seed": seed}
