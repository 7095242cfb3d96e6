"""Usage errors of the command line are one line on stderr and a non-zero exit, never a
traceback; `tasks` takes the same `--seed` as `launch`; `entropy` has a --help."""
from __future__ import annotations

import os

import pytest

from support.cli_process import run_cli
from vla_bridge.benchmarks.robofollow.tasks import episode_seed

TASK = "L0_pickup_yellow_block_3"


def _run(*args: str, timeout: float = 120):
    """`python -m vla_bridge.cli ARGS`, a process of its own (forked warm: support/cli_process)."""
    env = {k: v for k, v in os.environ.items() if k != "VLA_BRIDGE_API_KEY"}
    return run_cli(*args, timeout=timeout, env=env)


def _assert_one_line_error(result, *expected: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for text in expected:
        assert text in lines[0], lines[0]


@pytest.mark.parametrize("args, expected", [
    (("--tasks", "L0_pickup_yelow_block_3"),
     ("vla-bridge tasks: unknown evaluation task id 'L0_pickup_yelow_block_3'",
      "close matches: L0_pickup_yellow_block_3")),
    (("--scene", "scene9"), ("unknown scene(s) ['scene9']", "valid: scene1, scene2")),
    (("--levels", "L0,L9"), ("unknown level(s) ['L9']",)),
])
def test_tasks_selection_errors_are_one_line(args, expected):
    _assert_one_line_error(_run("tasks", *args), *expected)


@pytest.mark.parametrize("flag", ["--seed", "--base-seed"])
def test_tasks_takes_the_seed_flag_of_launch(flag):
    result = _run("tasks", "--tasks", TASK, "--rounds", "2", "--dry-run", flag, "7")
    assert result.returncode == 0, result.stderr
    for round_ in (1, 2):
        assert f"{TASK}  round {round_}  seed {episode_seed(TASK, round_, 7)}\n" in result.stdout


def test_serve_port_out_of_range_is_one_line():
    result = _run("serve", "--policy", "hold", "--port", "99999")
    _assert_one_line_error(result, "vla-bridge serve: --port must be 0..65535, got 99999")


def test_bad_params_file_fails_before_any_node_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("sim_node:\n  ros__parameters:\n    scene: [scene1\n")
    result = _run("launch", "robofollow_sim", "--params-file", str(bad), "--timeout", "60",
                  timeout=90)
    _assert_one_line_error(result, f"params file {bad}: not valid YAML")
    assert result.returncode == 2 and "started" not in result.stdout  # no node ran


def test_entropy_has_a_help():
    result = _run("entropy", "--help", timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: vla-bridge entropy")
    assert "--summary" in result.stdout and "{" not in result.stdout  # no report computed
    summary = _run("entropy", "--summary", timeout=60)
    assert summary.returncode == 0, summary.stderr
    assert summary.stdout.strip() == ("RoboFollow 3.782 bits (paper 3.782), "
                                      "LIBERO 0.880 bits (paper 0.880)")


@pytest.mark.parametrize("args, expected", [
    (("bench", "bogus"), ("vla-bridge bench: argument BENCHMARK: invalid choice: 'bogus'",
                          "'overhead'", "'cues'", "vla-bridge bench --help")),
    (("bench",), ("vla-bridge bench: the following arguments are required: BENCHMARK",)),
    (("bench", "overhead", "--families", "F1"), ("unrecognized arguments: --families F1",)),
    (("bench", "cues", "--repeats", "many"),
     ("vla-bridge bench cues: argument --repeats: invalid int value: 'many'",)),
    (("no-such-command",), ("vla-bridge: argument COMMAND: invalid choice: 'no-such-command'",)),
])
def test_usage_errors_are_one_line_and_exit_2(args, expected):
    result = _run(*args, timeout=60)
    _assert_one_line_error(result, *expected)
    assert result.returncode == 2 and result.stdout == ""
