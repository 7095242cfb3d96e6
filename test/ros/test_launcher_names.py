"""An unknown LIBERO suite is refused before anything starts (issue #29, point 15).

`vla-bridge launch libero_sim --suite <typo> --dry-run` exited 0 (and a real launch started
three nodes before the evaluator failed). The `suite` argument names its valid values
(LaunchArg.names_from: the LIBERO catalog's suites), so a name outside the catalog is one line
and exit 2, and a catalog with other suites (LIBERO-PRO style variants) is followed as it is.
"""
from __future__ import annotations

import io

import pytest

from vla_bridge import cli
from vla_bridge.benchmarks.libero import protocol
from vla_bridge.ros import launcher
from vla_bridge.ros.launch_args import LIBERO_SIM


def test_a_suite_typo_is_one_line_and_exit_2_even_in_a_dry_run(capsys):
    assert cli.main(["launch", "libero_sim", "--suite", "libero_spatail", "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no node command printed
    assert err.splitlines() == [
        "[launcher] argument 'suite': unknown name(s) ['libero_spatail']; known: "
        + ", ".join(sorted(protocol.load_catalog()))]
    assert cli.main(["launch", "libero_sim", "suite:=libero_goal,libero_1O", "--dry-run"]) == 2
    assert "unknown name(s) ['libero_1O']" in capsys.readouterr().err


def test_a_real_launch_is_refused_before_any_node_starts(capsys):
    out = io.StringIO()
    # (--timeout: a launcher without the check would run the graph, bounded)
    assert launcher.launch("libero_sim", ["--suite", "spatial", "--timeout", "60"], out=out) == 2
    assert out.getvalue() == ""  # no "[launcher] started ..."
    assert "unknown name(s) ['spatial']" in capsys.readouterr().err


def test_every_catalog_suite_and_lists_of_them_pass(capsys):
    suites = sorted(protocol.load_catalog())
    assert set(protocol.STANDARD_SUITES) <= set(suites)
    for value in (*suites, ",".join(suites), " libero_goal , libero_10 ", ""):
        assert cli.main(["launch", "libero_sim", "--suite", value, "--dry-run"]) == 0, value
        assert "suites" in capsys.readouterr().out


def test_the_valid_names_are_the_catalogs_not_a_fixed_list(monkeypatch):
    """A catalog with LIBERO-PRO style suites: its names pass, names it lacks are refused."""
    monkeypatch.setattr(protocol, "load_catalog",
                        lambda: {"libero_spatial_swap": [], "libero_object_lan": []})
    given, _ = launcher.parse_command_line(LIBERO_SIM, ["--suite", "libero_spatial_swap"])
    assert given == {"suite": "libero_spatial_swap"}
    with pytest.raises(ValueError, match=r"unknown name\(s\) \['libero_spatial'\]; known: "
                                         r"libero_object_lan, libero_spatial_swap"):
        launcher.parse_command_line(LIBERO_SIM, ["--suite", "libero_spatial"])
    assert LIBERO_SIM.arg("suite").names_from == ("vla_bridge.benchmarks.libero.protocol:"
                                                   "load_catalog")
