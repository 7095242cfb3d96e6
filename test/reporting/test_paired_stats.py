"""`vla-bridge report --pair SIM_RUN REAL_RUN`: the paired sim-vs-real statistics checked
against numbers worked out by hand here (Wilson, Newcombe's paired interval, McNemar, kappa),
the pairing of trials, the edge cases, and the command line with its error exits."""
from __future__ import annotations

import json
import math

import pytest

from support.cli_process import run_cli
from support.run_dirs import write_run
from vla_bridge.reporting.pilot_report import wilson_interval
from vla_bridge.reporting.common import ReportError
from vla_bridge.reporting.paired import (cohen_kappa, mcnemar_exact_p,
                                         newcombe_paired_interval, overall, pair_trials,
                                         paired_phi, paired_report)
from vla_bridge.reporting.paired_text import format_paired_console, format_paired_markdown

Z = 1.959964  # the 97.5% normal quantile


def _wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    """Wilson score limits written out: (k + z²/2 ± z sqrt(k(n-k)/n + z²/4)) / (n + z²)."""
    centre = (k + Z * Z / 2) / (n + Z * Z)
    half = Z * math.sqrt(k * (n - k) / n + Z * Z / 4) / (n + Z * Z)
    return centre - half, centre + half


# ================================================================================ statistics

def test_wilson_of_8_of_10_is_the_textbook_value():
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert _wilson_by_hand(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)


def test_newcombe_worked_example_with_negative_correlation():
    # a=1 both succeed, b=9 sim only, c=3 real only, d=7 both fail; n = 20.
    # p_sim = 10/20 = 0.5, p_real = 4/20 = 0.2, difference D = 0.3 = (9 - 3)/20.
    # Wilson 10/20: centre (10 + 1.920729)/23.841459 = 0.5, half 0.200702 -> [0.299298, 0.700702]
    # Wilson  4/20: centre (4 + 1.920729)/23.841459 = 0.248338, half 0.167680
    #               -> [0.080658, 0.416017]
    # phi = (ad - bc)/sqrt((a+b)(c+d)(a+c)(b+d)) = (7 - 27)/sqrt(10*10*4*16) = -20/80 = -0.25
    #   (ad < bc: no n/2 correction)
    # lower: (p1-l1)² - 2 phi (p1-l1)(u2-p2) + (u2-p2)²
    #      = 0.200702² + 0.5 * 0.200702 * 0.216017 + 0.216017²
    #      = 0.040281 + 0.021678 + 0.046663 = 0.108622 -> sqrt 0.329579 -> L = -0.029579
    # upper: (u1-p1)² - 2 phi (u1-p1)(p2-l2) + (p2-l2)²
    #      = 0.200702² + 0.5 * 0.200702 * 0.119342 + 0.119342²
    #      = 0.040281 + 0.011976 + 0.014243 = 0.066500 -> sqrt 0.257876 -> U = 0.557876
    l1, u1 = _wilson_by_hand(10, 20)
    l2, u2 = _wilson_by_hand(4, 20)
    assert (l1, u1, l2, u2) == pytest.approx((0.299298, 0.700702, 0.080658, 0.416017), abs=1e-6)
    phi = -0.25
    lower = 0.3 - math.sqrt((0.5 - l1) ** 2 - 2 * phi * (0.5 - l1) * (u2 - 0.2) + (u2 - 0.2) ** 2)
    upper = 0.3 + math.sqrt((u1 - 0.5) ** 2 - 2 * phi * (u1 - 0.5) * (0.2 - l2) + (0.2 - l2) ** 2)
    assert (lower, upper) == pytest.approx((-0.029579, 0.557876), abs=1e-5)
    assert paired_phi(1, 9, 3, 7) == pytest.approx(-0.25)
    assert newcombe_paired_interval(1, 9, 3, 7) == pytest.approx((-0.029579, 0.557876), abs=1e-4)


def test_newcombe_worked_example_with_the_n_over_2_correction():
    # a=20, b=12, c=2, d=16; n = 50: p_sim = 32/50 = 0.64, p_real = 22/50 = 0.44, D = 0.2.
    # Wilson 32/50 -> [0.501410, 0.758613]; 22/50 -> [0.311622, 0.576940]
    # ad - bc = 320 - 24 = 296 > n/2 = 25 -> numerator 296 - 25 = 271;
    # phi = 271 / sqrt(32*18*22*28) = 271 / 595.6643 = 0.454954
    # lower: 0.138590² - 2*0.454954*0.138590*0.136940 + 0.136940²
    #      = 0.019207 - 0.017268 + 0.018753 = 0.020691 -> sqrt 0.143845 -> L = 0.056155
    # upper: 0.118613² - 2*0.454954*0.118613*0.128378 + 0.128378²
    #      = 0.014069 - 0.013855 + 0.016481 = 0.016695 -> sqrt 0.129207 -> U = 0.329207
    assert _wilson_by_hand(32, 50) == pytest.approx((0.501410, 0.758613), abs=1e-6)
    assert _wilson_by_hand(22, 50) == pytest.approx((0.311622, 0.576940), abs=1e-6)
    assert paired_phi(20, 12, 2, 16) == pytest.approx(271 / math.sqrt(32 * 18 * 22 * 28))
    assert newcombe_paired_interval(20, 12, 2, 16) == pytest.approx((0.056155, 0.329207), abs=1e-4)


# Method-10 rows of Newcombe 1998 (Stat Med 17:2635) Table III, as quoted by secondary sources
# (the paper itself was not at hand). The hand formula above reproduces every one of them to
# 1e-4, and without the n/2 correction of phi the rows with ad > bc come out different.
TABLE_III_METHOD_10 = [
    ((36, 12, 2, 0), (0.0569, 0.3404)),
    ((20, 12, 2, 16), (0.0562, 0.3292)),
    ((36, 14, 0, 0), (0.1528, 0.4167)),
    ((35, 14, 0, 1), (0.1461, 0.4175)),
    ((0, 29, 1, 0), (0.6666, 0.9882)),
    ((1, 98, 0, 1), (0.9171, 0.9916)),
    ((0, 30, 0, 0), (0.8395, 1.0)),
    ((54, 0, 0, 0), (-0.0664, 0.0664)),
    ((53, 0, 0, 1), (-0.0729, 0.0729)),
    ((27, 0, 0, 27), (-0.0351, 0.0351)),
]


@pytest.mark.parametrize("cells, published", TABLE_III_METHOD_10)
def test_newcombe_table_iii(cells, published):
    assert newcombe_paired_interval(*cells) == pytest.approx(published, abs=1e-4)


def test_phi_rules():
    assert paired_phi(0, 3, 0, 0) == 0.0  # a zero margin: phi 0, as Newcombe specifies
    assert paired_phi(5, 0, 0, 0) == 0.0
    assert paired_phi(1, 0, 0, 1) == 0.0  # ad - bc = 1 <= n/2 = 1: shrunk to 0
    assert paired_phi(5, 0, 0, 5) == pytest.approx((25 - 5) / 25)  # not 1: the correction
    assert paired_phi(0, 5, 5, 0) == pytest.approx(-1.0)  # ad < bc: no correction


def test_mcnemar_exact():
    # 2 P(X <= 3), X ~ Bin(12, 1/2) = 2 (1 + 12 + 66 + 220) / 4096 = 598/4096 = 0.14600
    assert mcnemar_exact_p(9, 3) == pytest.approx(598 / 4096)
    assert mcnemar_exact_p(9, 3) == pytest.approx(0.146, abs=1e-3)
    assert mcnemar_exact_p(3, 9) == mcnemar_exact_p(9, 3)
    assert mcnemar_exact_p(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact_p(3, 3) == 1.0  # capped at 1
    assert mcnemar_exact_p(0, 0) == 1.0  # no discordant pair: no evidence either way


def test_cohen_kappa():
    # 20/5/10/15: p_o = 35/50 = 0.7; p_sim = 0.5, p_real = 0.6;
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.5 -> kappa = (0.7 - 0.5)/(1 - 0.5) = 0.4
    assert cohen_kappa(20, 5, 10, 15) == pytest.approx(0.4)
    # 1/9/3/7: p_o = 8/20 = 0.4; p_e = 0.5*0.2 + 0.5*0.8 = 0.5 -> kappa = -0.2
    assert cohen_kappa(1, 9, 3, 7) == pytest.approx(-0.2)
    assert cohen_kappa(5, 0, 0, 5) == pytest.approx(1.0)
    assert cohen_kappa(10, 0, 0, 0) is None  # one outcome only: chance agreement is 1


# ================================================================================ edge cases

def test_all_pairs_agree():
    o = overall(5, 0, 0, 5)
    lo, hi = newcombe_paired_interval(5, 0, 0, 5)
    assert o["difference"]["sim_minus_real_pct"] == 0.0
    assert lo == pytest.approx(-hi) and hi > 0.01  # no zero-width interval
    assert o["mcnemar_exact_p"] == 1.0 and o["kappa"] == pytest.approx(1.0)
    assert o["agreement"]["rate_pct"] == 100.0 and o["agreement"]["ci_high_pct"] == 100.0


def test_all_succeed_in_both_runs():
    o = overall(10, 0, 0, 0)
    # every margin of one side is 0 -> phi 0 -> D ± sqrt((1 - l)² + 0) with l = Wilson lower of
    # 10/10 = 10/(10 + z²) = 0.722467
    lower_10_of_10 = 10 / (10 + Z * Z)
    assert lower_10_of_10 == pytest.approx(0.722467, abs=1e-6)
    assert newcombe_paired_interval(10, 0, 0, 0) == pytest.approx(
        (-(1 - lower_10_of_10), 1 - lower_10_of_10), abs=1e-6)
    assert o["sim"]["rate_pct"] == o["real"]["rate_pct"] == 100.0
    assert o["kappa"] is None and o["mcnemar_exact_p"] == 1.0


def test_counts_must_be_sane():
    with pytest.raises(ValueError):
        newcombe_paired_interval(0, 0, 0, 0)
    with pytest.raises(ValueError):
        newcombe_paired_interval(1, -1, 0, 0)


# =================================================================================== pairing

def _row(task: str, round_: int, complete: bool, status: str = "ok", scene: str = "scene1",
         instruction: str | None = None) -> dict:
    """A results.jsonl row as run_dir.result_row writes it (the fields the reader uses)."""
    return {"key": f"{scene}/{task}/r{round_}", "task_id": task, "scene": scene, "level": "L0",
            "round": round_, "seed": 100 + round_, "status": status,
            "error": None if status == "ok" else "policy died",
            "instruction": instruction if instruction is not None else f"do {task}",
            "intent_score": float(complete), "exec_score": float(complete),
            "complete": complete, "stages": []}


def _sim_and_real() -> tuple[list[dict], list[dict]]:
    """task_a: 3 rounds, task_b: 3 rounds; sim has an extra round 4 of task_a (no real row),
    real failed round 3 of task_b (status 'failed') and says task_b's instruction differently
    in round 1. Paired: a=2 (a1, b2), b=2 (a2, b1), c=1 (a3), d=0 -> n = 5."""
    sim = [_row("task_a", 1, True), _row("task_a", 2, True), _row("task_a", 3, False),
           _row("task_a", 4, True), _row("task_b", 1, True), _row("task_b", 2, True),
           _row("task_b", 3, False)]
    real = [_row("task_a", 1, True), _row("task_a", 2, False), _row("task_a", 3, True),
            _row("task_b", 1, False, instruction="do task b, please"), _row("task_b", 2, True),
            _row("task_b", 3, False, status="failed")]
    return sim, real


def test_pairing_lists_what_one_run_lacks_and_warns_on_text():
    sim, real = _sim_and_real()
    paired = pair_trials(sim, real)
    assert [p[0] for p in paired["pairs"]] == [("scene1", "task_a", r) for r in (1, 2, 3)] + \
        [("scene1", "task_b", r) for r in (1, 2)]
    assert paired["unpaired"] == [
        {"trial": "scene1/task_a/r4", "run": "sim", "other": "real: no row"},
        {"trial": "scene1/task_b/r3", "run": "sim", "other": "real: status 'failed'"}]
    assert paired["excluded"] == {"sim": 0, "real": 1}
    assert len(paired["warnings"]) == 1 and "scene1/task_b/r1" in paired["warnings"][0]


def test_report_of_the_rows():
    sim, real = _sim_and_real()
    report = paired_report(sim, real)
    assert report["n_pairs"] == 5 and report["n_instructions"] == 2
    assert report["n_sim_only"] == 2 and report["n_real_only"] == 0
    o = report["overall"]
    assert o["table"] == {"a_both": 2, "b_sim_only": 2, "c_real_only": 1, "d_neither": 0, "n": 5}
    assert o["sim"]["successes"] == 4 and o["real"]["successes"] == 3
    assert o["difference"]["sim_minus_real_pct"] == pytest.approx(20.0)
    lo, hi = newcombe_paired_interval(2, 2, 1, 0)
    assert o["difference"]["ci_low_pct"] == pytest.approx(100 * lo, abs=1e-3)
    assert o["mcnemar_exact_p"] == pytest.approx(1.0)  # 2 * P(X <= 1; 3, 1/2) = 2 * 4/8
    by_task = {r["task_id"]: r for r in report["per_instruction"]}
    assert by_task["task_a"]["sim"]["successes"] == by_task["task_a"]["real"]["successes"] == 2
    assert by_task["task_b"]["pairs"] == 2 and by_task["task_b"]["sim_only"] == 1
    assert by_task["task_a"]["instruction"] == "do task_a"
    json.dumps(report)  # JSON-serialisable
    md, console = format_paired_markdown(report), format_paired_console(report)
    assert "## Sim vs real" in md and "| **sim success** | 2 (a) | 2 (b) |" in md
    assert "scene1/task_a/r4 (in sim only; real: no row)" in md and "independent" in md
    assert "5 paired trials of 2 instructions" in console and "McNemar" in console
    assert "warning: scene1/task_b/r1" in console


def test_one_run_has_no_usable_rows():
    sim, _ = _sim_and_real()
    real = [_row("task_a", 1, True, status="failed")]
    with pytest.raises(ReportError, match="no common pairs"):
        paired_report(sim, real)
    assert pair_trials(sim, [])["unpaired"][0]["other"] == "real: no row"


# ======================================================================================= CLI

@pytest.fixture
def runs(tmp_path):
    sim, real = _sim_and_real()
    return write_run(tmp_path / "sim", sim), write_run(tmp_path / "real", real)


def test_cli_writes_the_pair_report(runs, tmp_path, capsys):
    from vla_bridge.cli import main
    sim, real = runs
    assert main(["report", "--pair", str(sim), str(real)]) == 0
    out = capsys.readouterr().out
    assert "5 paired trials" in out and "pair_report.md" in out
    data = json.loads((real / "pair_report.json").read_text())
    assert data["overall"]["table"]["n"] == 5 and data["sim_run"] == str(sim)
    assert (real / "pair_report.md").read_text().startswith("## Sim vs real")
    assert not (real / "report.md").exists()  # only the paired analysis
    out_dir = tmp_path / "elsewhere" / "pair"
    assert main(["report", "--pair", str(sim), str(real), "--out", str(out_dir)]) == 0
    assert (out_dir / "pair_report.md").is_file() and (out_dir / "pair_report.json").is_file()


def _one_error_line(capsys, *expected: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    for text in expected:
        assert text in err[0], err[0]


@pytest.mark.parametrize("case, expected", [
    ("missing_dir", "no such run directory"),
    ("no_results", "no results.jsonl"),
    ("no_common", "no common pairs"),
])
def test_cli_bad_input_is_one_line_and_exit_2(runs, tmp_path, capsys, case, expected):
    from vla_bridge.cli import main
    sim, real = runs
    other = {"missing_dir": tmp_path / "nope", "no_results": tmp_path / "empty",
             "no_common": write_run(tmp_path / "other", [_row("task_z", 1, True)])}[case]
    (tmp_path / "empty").mkdir()
    assert main(["report", "--pair", str(sim), str(other)]) == 2
    _one_error_line(capsys, expected)


@pytest.mark.parametrize("extra, expected", [
    ([], "give RUN_DIR, or --pair"),
    (["RUN", "--pair"], "not both"),
    (["--pair", "--plots"], "drop --plots"),
    (["RUN", "--out", "x"], "--out goes with --pair only"),
])
def test_cli_mode_errors(runs, capsys, extra, expected):
    from vla_bridge.cli import main
    sim, real = runs
    argv = ["report"]
    for item in extra:
        argv += {"RUN": [str(sim)], "--pair": ["--pair", str(sim), str(real)]}.get(item, [item])
    assert main(argv) == 2
    _one_error_line(capsys, expected)


def test_cli_error_has_no_traceback(tmp_path):
    result = run_cli("report", "--pair", str(tmp_path / "a"), str(tmp_path / "b"),
                     timeout=120)  # its own process (support/cli_process)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: {tmp_path / 'a'}: no such run directory"
