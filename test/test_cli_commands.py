"""The `vla-bridge` sub-commands that replaced `python -m` verbs, and `vla-bridge bench`'s one
sub-command per benchmark: each has a --help with only its own flags, `bench X` calls the
benchmark with the same arguments and defaults as the flat parser did, the cheap ones run,
and no module keeps the old `python -m` entry."""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.cli_process import run_cli
from vla_bridge.cli import SUBCOMMANDS, build_parser, main as cli_main
from vla_bridge.cli.bench import BENCHMARKS

REPO = Path(__file__).resolve().parent.parent
TASK = "L0_place_yellow_block_1_behind_red_sphere"
LIBERO_SUITES = "libero_spatial,libero_object,libero_goal,libero_10"

#: benchmark -> the flags it takes (the flat parser accepted all of them for every benchmark)
BENCH_FLAGS = {
    "overhead": {"--task", "--episodes"},
    "recording": {"--task", "--episodes"},
    "throughput": {"--per-level"},
    "campaign": {"--per-level", "--rounds"},
    "cpu": {"--task", "--short", "--long", "--policy", "--record", "--sim"},
    "multinode": {"--per-level", "--rounds"},
    "sapien": {"--task", "--episodes", "--figure", "--no-graph"},
    "crosssim": {"--scene", "--levels", "--policy", "--output"},
    "libero": {"--suite", "--tasks", "--inits", "--no-graph"},
    "libero-cost": {"--suite", "--tasks", "--inits", "--workers", "--cpu-inits", "--policy",
                    "--domain-base"},
    "libero-vifo": {"--output", "--suite", "--tasks", "--inits", "--families", "--protocols",
                    "--policy", "--vqa"},
    "policy": {"--calls", "--warmup", "--policy", "--chunk-size", "--async",
               "--temporal-ensemble", "--no-graph"},
    "cues": {"--repeats", "--sim", "--examples", "--instances"},
    "heartbeat": {"--seconds", "--hogs", "--kills", "--mode", "--gil-hold"},
}

#: the sub-commands that were `python -m` verbs, and a flag or argument each --help names
VERBS = {
    "console": "--sheet",        # python -m vla_bridge.reporting.operator_console
    "markers": "DIR",            # python -m vla_bridge.robot_nodes.tracker.tracker --print-markers
    "cue-table": "RUN_DIR",      # python -m vla_bridge.evaluation.cues.metrics
    "init-policy": "--chunk-size",  # python -m vla_bridge.policy_nodes.torch_policy init
    "entropy": "--summary",      # python -m vla_bridge.benchmarks.robofollow.entropy
    "grounding": "--help",       # python -m vla_bridge.benchmarks.vifo.grounding
    "dds-cleanup": "--help",     # python -m vla_bridge.ros.dds_shm
}


def _help(*args: str, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*args, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def _options(help_text: str) -> set[str]:
    """The long options of a --help's options section."""
    section = help_text.split("\noptions:\n", 1)[1]
    return set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", section, re.M)) - {"--help"}


# ------------------------------------------------------------------------ bench


def test_bench_help_lists_every_benchmark_with_one_line(capsys):
    text = _help("bench", capsys=capsys)
    assert list(BENCHMARKS) == list(BENCH_FLAGS)
    for name, bench in BENCHMARKS.items():
        assert re.search(rf"^    {re.escape(name)}\s", text, re.M), name
        assert "\n" not in bench.help and bench.help.split()[0] in text


@pytest.mark.parametrize("name", sorted(BENCH_FLAGS))
def test_each_benchmark_has_only_its_own_flags(name, capsys):
    text = _help("bench", name, capsys=capsys)
    assert text.startswith(f"usage: vla-bridge bench {name} ")
    assert _options(text) == BENCH_FLAGS[name]


def test_bench_overhead_help_names_task_not_families(capsys):
    text = _help("bench", "overhead", capsys=capsys)
    assert "--task" in text and "--episodes" in text
    assert "--families" not in text and "--per-level" not in text


#: the benchmarks' entry points in vla_bridge/perf/, replaced by recorders below
PERF_FUNCTIONS = {
    "vla_bridge.perf.graph": ("overhead", "recording", "throughput"),
    "vla_bridge.perf.campaign": ("scale", "multinode"),
    "vla_bridge.perf.sapien": ("speed", "figure", "crosssim"),
    "vla_bridge.perf.libero": ("speed",),
    "vla_bridge.perf.libero_vifo": ("protocol_table",),
    "vla_bridge.perf.libero_cost": ("cost",),
    "vla_bridge.perf.cues": ("print_costs",),
    "vla_bridge.perf.cpu": ("cpu",),
}


def _calls(monkeypatch, module: str, *functions: str) -> list:
    """Replace module.function(s) by recorders; the list of (function, args, kwargs) calls."""
    import importlib
    calls = []
    mod = importlib.import_module(module)
    for fn in functions:
        monkeypatch.setattr(mod, fn, lambda *a, _fn=fn, **k: calls.append((_fn, a, k)) or 0)
    return calls


@pytest.mark.parametrize("argv, module, expected", [
    (["overhead"], "vla_bridge.perf.graph", ("overhead", (TASK, 4), {})),
    (["overhead", "--task", "T", "--episodes", "3"], "vla_bridge.perf.graph",
     ("overhead", ("T", 3), {})),
    (["recording"], "vla_bridge.perf.graph", ("recording", (TASK, 4), {})),
    (["throughput"], "vla_bridge.perf.graph", ("throughput", (2,), {})),
    (["throughput", "--per-level", "1"], "vla_bridge.perf.graph", ("throughput", (1,), {})),
    (["campaign"], "vla_bridge.perf.campaign", ("scale", (2, 2), {})),
    (["multinode", "--rounds", "3"], "vla_bridge.perf.campaign", ("multinode", (2, 3), {})),
    (["sapien"], "vla_bridge.perf.sapien", ("speed", (TASK, 4), {"graph": True})),
    (["sapien", "--no-graph", "--episodes", "2"], "vla_bridge.perf.sapien",
     ("speed", (TASK, 2), {"graph": False})),
    (["sapien", "--figure", "f.png"], "vla_bridge.perf.sapien", ("figure", (TASK, "f.png"), {})),
    (["crosssim"], "vla_bridge.perf.sapien", ("crosssim", ("scene1", "", "oracle", None), {})),
    (["crosssim", "--scene", "", "--levels", "L0", "--policy", "hold", "--output", "o.json"],
     "vla_bridge.perf.sapien", ("crosssim", ("", "L0", "hold", "o.json"), {})),
    (["libero"], "vla_bridge.perf.libero", ("speed", (LIBERO_SUITES, "", "0"), {"graph": True})),
    (["libero", "--suite", "libero_goal", "--tasks", "0-1", "--inits", "0-4", "--no-graph"],
     "vla_bridge.perf.libero", ("speed", ("libero_goal", "0-1", "0-4"), {"graph": False})),
    (["libero-cost"], "vla_bridge.perf.libero_cost",
     ("cost", ("libero_object", "0-3", "0-1", [1, 2], (1, 2), "libero_oracle", 100), {})),
    (["libero-cost", "--workers", "4", "--cpu-inits", "2,5", "--inits", "0-9"],
     "vla_bridge.perf.libero_cost",
     ("cost", ("libero_object", "0-3", "0-9", [4], (2, 5), "libero_oracle", 100), {})),
    (["libero-vifo"], "vla_bridge.perf.libero_vifo",
     ("protocol_table", ("runs/libero_vifo", LIBERO_SUITES, "", "0", "F1,F2,F3,F4,F5,F6,F7,F8",
                         "original,authorized,conflict,no_language", "libero_oracle", ""), {})),
    (["libero-vifo", "--output", "o", "--families", "F8", "--protocols", "conflict", "--policy",
      "hold", "--vqa", "random"], "vla_bridge.perf.libero_vifo",
     ("protocol_table", ("o", LIBERO_SUITES, "", "0", "F8", "conflict", "hold", "random"), {})),
    (["cues"], "vla_bridge.perf.cues", ("print_costs", (200, False), {})),
    (["cues", "--repeats", "5", "--sim"], "vla_bridge.perf.cues", ("print_costs", (5, True), {})),
    (["cpu"], "vla_bridge.perf.cpu", ("cpu", (TASK, 2, 6, ["oracle"], ()), {})),
    (["cpu", "--short", "1", "--long", "3", "--policy", "hold", "--policy", "oracle", "--record"],
     "vla_bridge.perf.cpu", ("cpu", (TASK, 1, 3, ["hold", "oracle"], ("--record", "true")), {})),
    (["cpu", "--sim", "sapien"], "vla_bridge.perf.cpu",
     ("cpu", (TASK, 2, 6, ["oracle"], ("--sim", "sapien")), {})),
])
def test_bench_runs_the_benchmark_with_the_old_arguments_and_defaults(argv, module, expected,
                                                                       monkeypatch):
    calls = _calls(monkeypatch, module, *PERF_FUNCTIONS[module])
    assert cli_main(["bench", *argv]) == 0
    assert calls == [expected]


@pytest.mark.parametrize("argv, expected", [
    ([], {"calls": 200, "warmup": 20, "policy": "hold", "chunk_size": 50,
          "async_inference": False, "temporal_ensemble": False, "graph": True}),
    (["--calls", "5", "--warmup", "1", "--policy", "oracle", "--chunk-size", "10", "--async",
      "--temporal-ensemble", "--no-graph"],
     {"calls": 5, "warmup": 1, "policy": "oracle", "chunk_size": 10, "async_inference": True,
      "temporal_ensemble": True, "graph": False}),
])
def test_bench_policy_gets_the_flags_of_the_old_module(argv, expected, monkeypatch):
    from vla_bridge.perf import policy
    seen = []
    monkeypatch.setattr(policy, "measure", lambda args: seen.append(vars(args)) or 0)
    assert cli_main(["bench", "policy", *argv]) == 0
    assert {k: seen[0][k] for k in expected} == expected


def test_bench_cues_instances_prints_the_filter_counts(capsys):
    assert cli_main(["bench", "cues", "--instances"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("variant")
    assert re.search(r"^F1 banner\s+554\s+0\s", out, re.M)
    assert "\nskipped task types per variant:\n" in out
    assert "overlay cost" not in out  # --instances only


# ------------------------------------------------------------------------ the former python -m verbs


@pytest.mark.parametrize("name", sorted(VERBS))
def test_each_former_verb_is_a_subcommand_with_a_help(name, capsys):
    assert name in SUBCOMMANDS
    text = _help(name, capsys=capsys)
    assert text.startswith(f"usage: vla-bridge {name} ")
    assert VERBS[name] in text


def test_entropy_json_report(capsys):
    assert cli_main(["entropy"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert round(report["robofollow"]["bits"], 3) == 3.782
    assert report["libero"]["paper_bits"]["mean"] == 0.880


def test_grounding_prints_each_scene(capsys):
    assert cli_main(["grounding"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith("    ")]
    assert [ln.split(":")[0] for ln in lines] == ["scene1", "scene2", "scene3", "scene4"]
    assert lines[0].startswith("scene1: 116/116 parsed, source grounded 116/116")


def test_markers_writes_one_png_per_board_and_object_marker(tmp_path, capsys):
    from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig
    config = TrackerConfig.load(None)
    assert cli_main(["markers", str(tmp_path / "markers")]) == 0
    out = capsys.readouterr().out.splitlines()
    pngs = sorted((tmp_path / "markers").glob("*.png"))
    assert len(pngs) == len(out) == len(config.board) + len(config.objects) > 0
    assert all(ln.endswith("mm wide") and ": print the black square " in ln for ln in out)


def test_dds_cleanup_removes_the_files_of_dead_processes(tmp_path, monkeypatch, capsys):
    from vla_bridge.ros import dds_shm
    monkeypatch.setattr(dds_shm, "clean_stale_shm",
                        functools.partial(dds_shm.clean_stale_shm, tmp_path))
    old = time.time() - 60
    for name, size in (("fastdds_0123456789abcdef", 4096), ("fastdds_0123456789abcdef_el", 0),
                       ("other_program_segment", 8)):
        (tmp_path / name).write_bytes(b"\0" * size)
        os.utime(tmp_path / name, (old, old))
    assert cli_main(["dds-cleanup"]) == 0
    assert capsys.readouterr().out == ("removed 2 stale Fast DDS shared-memory file(s) (0 MiB) "
                                       "left by dead processes; 0 in use\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other_program_segment"]


def test_dds_cleanup_runs_on_this_machine():
    result = run_cli("dds-cleanup", timeout=60)  # its own process (support/cli_process)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"removed \d+ stale Fast DDS shared-memory file\(s\) \(\d+ MiB\) left by "
                        r"dead processes; \d+ in use\n", result.stdout), result.stdout


@pytest.mark.parametrize("path", [
    "vla_bridge/reporting/operator_console.py", "vla_bridge/ros/dds_shm.py",
    "vla_bridge/evaluation/cues/metrics.py", "vla_bridge/benchmarks/robofollow/entropy.py",
    "vla_bridge/benchmarks/vifo/instructions/grounding.py", "robot_nodes/tracker/tracker.py",
    "policy_nodes/torch_policy.py", "vla_bridge/perf/policy.py", "vla_bridge/perf/cues.py",
])
def test_the_old_python_m_entries_are_gone(path):
    source = (REPO / path).read_text()
    assert '__name__ == "__main__"' not in source
    assert not re.search(r"^def main\(", source, re.M)


def test_top_level_help_imports_no_heavy_library():
    code = ("import sys\nfrom vla_bridge.cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torch', 'mujoco', 'rclpy', 'sapien', 'ray'}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    for name in [*VERBS, "bench"]:
        assert f"    {name}" in result.stdout


# ------------------------------------------------------------------------ params


def test_params_lists_every_node_with_its_config_class(capsys):
    assert cli_main(["params"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "policy_node: PolicyConfig (robofollow_sim, libero_sim, robofollow_real)" in out
    assert "evaluator_node: EngineConfig + LiberoConfig (libero_sim)" in out
    assert ("evaluator_node: EngineConfig + RoboFollowConfig (robofollow_sim, robofollow_real)"
            in out)
    assert out[-1] == "`vla-bridge params NODE [--graph GRAPH]`: its parameters"


def test_params_of_a_node_is_its_config_help_with_the_graphs_values(capsys):
    from vla_bridge.policy_nodes.policy_node import PolicyConfig
    from vla_bridge.ros.node_config import help_text
    assert cli_main(["params", "policy_node", "--graph", "libero_sim"]) == 0
    title, *lines = capsys.readouterr().out.splitlines()
    assert title == "policy_node (PolicyConfig; libero_sim):"
    assert [ln.split(" [config/")[0] for ln in lines] == [
        f"  {ln}" for ln in help_text(PolicyConfig).splitlines()]
    assert "  chunk_size (int, default 50): actions the policy returns per call " \
           "[config/libero_sim.yaml: 5]" in lines  # the file's value, what runs
    assert not any("image_source" in ln and "[config/" in ln for ln in lines)  # the default


def test_params_of_an_unknown_node_is_one_line_naming_the_nodes(capsys):
    assert cli_main(["params", "policy_nodee"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no node 'policy_nodee' in any graph" in err
    assert "policy_node" in err.split("nodes: ")[1]
