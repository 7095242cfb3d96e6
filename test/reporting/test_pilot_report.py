"""Pilot report: Wilson intervals and the RoboFollow real-robot pilot (App. C.1, Table 10)."""
from __future__ import annotations

import json
import math

import pytest

from vla_bridge.reporting.pilot_report import (Rate, TrialResult, format_report,
                                                instruction_category, move_legacy_report,
                                                summarize, trials_from_counts,
                                                trials_from_results, wilson_interval)

# RoboFollow Table 10: eight training and eight held-out instructions, five trials each
TRAINING = [
    ("Use your right arm to pick up the larger red object.", 5, 5),
    ("Use your right arm to pick up the leftmost cube.", 3, 5),
    ("Use your right arm to pick up the rightmost cube.", 5, 5),
    ("Use your right arm to pick up the blue cylinder.", 1, 5),
    ("Use your right arm to stack the leftmost cube onto the larger red object.", 2, 5),
    ("Use your right arm to stack the leftmost cube onto the smaller blue object.", 3, 5),
    ("Use your right arm to stack the blue cylinder onto the leftmost cube.", 0, 5),
    ("Use your right arm to stack the blue cylinder onto the rightmost cube.", 1, 5),
]
HELD_OUT = [
    ("Use your right arm to pick up the blue cube.", 4, 5),
    ("Use your right arm to pick up the larger blue object.", 2, 5),
    ("Use your right arm to pick up the larger cylinder.", 0, 5),
    ("Use your right arm to pick up the red cube.", 0, 5),
    ("Use your right arm to pick up the smaller cube.", 0, 5),
    ("Use your right arm to pick up the smaller red object.", 0, 5),
    ("Use your right arm to stack the blue cylinder onto the blue cube.", 0, 5),
    ("Use your right arm to place the blue cylinder on top of the red cube.", 0, 5),
]


def _pct(rate: Rate) -> tuple[float, float, float]:
    return tuple(round(v, 1) for v in rate.percent())


@pytest.fixture(scope="module")
def reports():
    trials = trials_from_counts(TRAINING, "training") + trials_from_counts(HELD_OUT, "held_out")
    return summarize(trials)


def test_wilson_reproduces_the_papers_intervals():
    assert tuple(round(100 * v, 1) for v in wilson_interval(20, 40)) == (35.2, 64.8)
    assert tuple(round(100 * v, 1) for v in wilson_interval(6, 40)) == (7.1, 29.1)


def test_pooled_rates_per_instruction_set(reports):
    assert _pct(reports["training"].pooled) == (50.0, 35.2, 64.8)
    assert _pct(reports["held_out"].pooled) == (15.0, 7.1, 29.1)
    assert str(reports["training"].pooled) == "20/40 = 50.0% [35.2, 64.8]"
    assert str(reports["held_out"].pooled) == "6/40 = 15.0% [7.1, 29.1]"


def test_per_instruction_counts_keep_table_order(reports):
    got = [(k, r.successes, r.trials) for k, r in reports["training"].per_instruction.items()]
    assert got == TRAINING
    # with five trials each, the pooled rate is the mean of the instruction rates (the paper)
    rates = [r.rate for r in reports["held_out"].per_instruction.values()]
    assert math.isclose(sum(rates) / len(rates), reports["held_out"].pooled.rate)


def test_category_breakdown_matches_the_paper(reports):
    train, held = reports["training"].per_category, reports["held_out"].per_category
    assert (train["pick"].successes, train["pick"].trials) == (14, 20)
    assert (held["pick"].successes, held["pick"].trials) == (6, 30)
    assert (train["stack"].successes, train["stack"].trials) == (6, 20)
    assert (held["stack"].successes, held["stack"].trials) == (0, 10)
    assert round(train["pick"].rate * 100) == 70 and round(held["pick"].rate * 100) == 20
    assert round(train["stack"].rate * 100) == 30 and held["stack"].rate == 0.0


def test_instruction_categories():
    assert instruction_category("Use your right arm to pick up the red cube.") == "pick"
    assert instruction_category("Use your right arm to stack the cube onto the cylinder.") == "stack"
    assert instruction_category("Use your right arm to place the blue cylinder on top of "
                                "the red cube.") == "stack"
    assert instruction_category("Wave hello.") == "other"


def test_edge_cases_and_errors():
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and 0.0 < hi < 0.35
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0 and 0.65 < lo < 1.0
    assert wilson_interval(5, 10, confidence=0.99)[0] < wilson_interval(5, 10)[0]
    with pytest.raises(ValueError, match="trials"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="two categories"):
        summarize([TrialResult("a", True, category="pick"), TrialResult("a", False, category="stack")])


def test_from_result_rows_and_markdown():
    rows = [{"instruction": "pick up the red cube", "complete": True, "set": "real"},
            {"instruction": "pick up the red cube", "complete": False, "set": "real"},
            {"instruction": "stack the cube onto the bowl", "complete": True, "set": "real"}]
    rep = summarize(trials_from_results(rows, group_key="set"))["real"]
    assert (rep.pooled.successes, rep.pooled.trials) == (2, 3)
    assert rep.per_category["pick"].trials == 2 and rep.per_category["stack"].successes == 1
    text = format_report({"real": rep})
    assert "| 1 | pick up the red cube | pick | 1/2 |" in text
    assert "2/3 = 66.7%" in text
    assert rep.to_dict()["pooled"]["ci_low_pct"] == round(100 * wilson_interval(2, 3)[0], 2)


def test_a_legacy_pilot_report_md_is_moved_only_when_nothing_is_overwritten(tmp_path):
    pilot = {"groups": {}, "stages": {}, "trials": 4}
    (tmp_path / "report.md").write_text("pilot table\n")
    (tmp_path / "report.json").write_text(json.dumps(pilot))
    (tmp_path / "pilot_report.md").write_text("newer pilot\n")
    assert move_legacy_report(tmp_path) == ""  # pilot_report.md exists: leave both alone
    assert (tmp_path / "pilot_report.md").read_text() == "newer pilot\n"
    (tmp_path / "pilot_report.md").unlink()
    assert "moved the pilot report" in move_legacy_report(tmp_path)
    assert (tmp_path / "pilot_report.md").read_text() == "pilot table\n"
    assert json.loads((tmp_path / "pilot_report.json").read_text()) == pilot
    assert not (tmp_path / "report.md").exists() and not (tmp_path / "report.json").exists()
    # a run report's report.json (vla-bridge report's) is not a pilot report
    (tmp_path / "report.json").write_text(json.dumps({"method": {}, "groups": {}}))
    (tmp_path / "pilot_report.md").unlink()
    assert move_legacy_report(tmp_path) == "" and (tmp_path / "report.json").is_file()
