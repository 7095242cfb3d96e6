"""`vla-bridge sweep GRAPH --axis AXIS [--levels 0,1,2] --output DIR [--metric NAME] -- [launch
arguments]`: one `vla-bridge launch` per level of a perturbation axis (DIR/L<level>; level 0
unperturbed), one after the other, then the success rate per level with 95 % Wilson intervals
(DIR/sweep.json, sweep.md, sweep.png: `reporting.sweep`). A level whose directory holds a run
is resumed (launch skips the trials it has). `vla-bridge sweep --summarize DIR` rebuilds the
summary from the run directories without running anything."""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

PROG = "vla-bridge sweep"
#: launch arguments the sweep sets itself, per level
OWN_LAUNCH_ARGS = ("perturb", "output")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("graph", nargs="?", default=None,
                        help="graph each level runs (robofollow_sim, libero_sim, ...)")
    add_options(parser)
    parser.add_argument("launch_args", nargs=argparse.REMAINDER,
                        help="after --: more `vla-bridge launch GRAPH` arguments, the same for "
                             "every level (e.g. -- --scene scene1 --levels L0 --rounds 2); "
                             "the sweep sets --perturb and --output itself")


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--axis", default=None,
                        help="perturbation axis (`vla-bridge perturb list`)")
    parser.add_argument("--levels", default=None,
                        help="comma-separated levels, e.g. 0,1,2 (default: 0..the axis's top)")
    parser.add_argument("--output", default=None,
                        help="sweep directory: one run directory per level (L0, L1, ...), "
                             "sweep.json, sweep.md, sweep.png")
    parser.add_argument("--metric", default=None,
                        help="the row field that is an episode's success (default: complete "
                             "for RoboFollow, success for LIBERO; a dotted path reaches into "
                             "nested fields)")
    parser.add_argument("--summarize", default=None, metavar="DIR",
                        help="rebuild DIR's sweep.json/md/png from its run directories; runs "
                             "nothing")


class UsageError(ValueError):
    """A bad command line: one line on stderr, exit 2."""


def split_arguments(args: argparse.Namespace) -> tuple[argparse.Namespace, list[str]]:
    """The sweep's options given after GRAPH (argparse hands them over with the launch
    arguments), parsed out of what comes before ``--``; what follows ``--`` is the launch's."""
    from vla_bridge.cli import _Parser

    rest = list(args.launch_args or [])
    own, launch = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest \
        else (rest, [])
    parser = _Parser(prog=PROG, allow_abbrev=False, add_help=False)
    add_options(parser)
    parser.set_defaults(**{k: v for k, v in vars(args).items()
                           if k not in ("command", "graph", "launch_args")})
    options, unknown = parser.parse_known_args(own)
    if unknown:
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (launch arguments go "
                         f"after --: {PROG} GRAPH --axis AXIS --output DIR -- --scene scene1)")
    for arg in launch:
        name = arg.lstrip("-").split(":=")[0].split("=")[0].replace("-", "_")
        if (arg.startswith("--") or ":=" in arg) and name in OWN_LAUNCH_ARGS:
            raise UsageError(f"the sweep sets --{name} of each level itself; leave {arg!r} out "
                             "of the launch arguments")
    return options, launch


def run(args: argparse.Namespace) -> int:
    from vla_bridge.reporting import sweep

    try:
        options, launch_args = split_arguments(args)
        if options.summarize:
            return _summarize(sweep, options)
        graph, axis, levels, out = _plan(sweep, args.graph, options)
    except ValueError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    return _run_levels(sweep, graph, axis, levels, out, options.metric, launch_args)


def _plan(sweep, graph: str | None, options) -> tuple[str, str, list[int], Path]:
    from vla_bridge.ros.launch_args import GRAPHS

    if not graph:
        raise UsageError("give GRAPH (e.g. robofollow_sim), or --summarize DIR")
    if graph not in GRAPHS:
        raise UsageError(f"unknown graph {graph!r}; the graphs: {', '.join(sorted(GRAPHS))}")
    if not options.axis:
        raise UsageError("--axis is required (`vla-bridge perturb list` names the axes)")
    if not options.output:
        raise UsageError("--output DIR is required (each level runs in DIR/L<level>)")
    axis = sweep.check_axis(options.axis)
    return graph, axis, sweep.parse_levels(options.levels, axis), Path(options.output)


def _run_levels(sweep, graph: str, axis: str, levels: list[int], out: Path,
                metric: str | None, launch_args: list[str]) -> int:
    from vla_bridge.evaluation.run_dir import RunDirectory

    out.mkdir(parents=True, exist_ok=True)
    stored = {e["level"]: e.get("wall_s") for e in sweep.stored_sweep(out).get("levels", [])}
    walls: dict[int, float] = {}
    done: list[dict] = []
    stopped, code = None, 0
    t0 = time.monotonic()
    for k, level in enumerate(levels, 1):
        run_dir = sweep.level_dir(out, level)
        spec = sweep.spec_of(axis, level)
        print(f"[sweep] {axis} level {level} ({k} of {len(levels)}: "
              f"{spec or 'unperturbed'}) -> {run_dir}; elapsed {time.monotonic() - t0:.0f} s; "
              f"so far: {sweep.progress(done)}", flush=True)
        cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", graph, *launch_args,
               *(["--perturb", spec] if spec else []), "--output", str(run_dir)]
        rows_before = len(RunDirectory(run_dir).results())
        start = time.monotonic()
        code, interrupted = _call(cmd)
        walls[level] = _wall(stored.get(level), time.monotonic() - start,
                             len(RunDirectory(run_dir).results()) > rows_before)
        if interrupted or code != 0:
            why = "interrupted" if interrupted else f"vla-bridge launch exited with code {code}"
            stopped = f"level {level} ({spec or 'unperturbed'}): {why}"
            print(f"{PROG}: {axis} level {level} failed: {why}; stopping the sweep (the summary "
                  f"has the levels done)", file=sys.stderr, flush=True)
            code = code or 130
            break
        done.append(sweep.summarize_level(out, axis, level, metric, walls[level]))
    try:
        summary = sweep.summarize_sweep(out, axis, levels, metric, walls, graph=graph,
                                        launch_args=launch_args, stopped=stopped)
    except ValueError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    _write(sweep, out, summary, time.monotonic() - t0)
    return code


def _wall(before: float | None, now: float, ran: bool) -> float:
    """A level's wall seconds over the sweeps that ran it: a resume that ran nothing new
    keeps the earlier figure, one that ran episodes adds its time to it."""
    if before is None:
        return round(now, 3)
    return round(before + now, 3) if ran else before


def _call(cmd: list[str]) -> tuple[int, bool]:
    """Run one level's launch, its output streaming through; (exit code, interrupted). On
    Ctrl-C the launcher (which gets the signal too) is given time to stop its nodes."""
    proc = subprocess.Popen(cmd)
    try:
        return proc.wait(), False
    except KeyboardInterrupt:
        try:
            return proc.wait(timeout=60), True
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            proc.terminate()
            return proc.wait(), True


def _summarize(sweep, options) -> int:
    out = Path(options.summarize)
    if not out.is_dir():
        raise UsageError(f"--summarize: no directory {out}")
    stored = sweep.stored_sweep(out)
    axis = options.axis or stored.get("axis") or sweep.found_axis(out)
    if not axis:
        raise UsageError(f"--summarize: {out} holds no sweep.json and no perturbed run "
                         "directory (L1, L2, ...); name the axis with --axis")
    axis = sweep.check_axis(axis)
    if options.levels:
        levels = sweep.parse_levels(options.levels, axis)
    else:
        levels = [e["level"] for e in stored.get("levels", [])] or sweep.found_levels(out)
    if not levels:
        raise UsageError(f"--summarize: no level run directory (L0, L1, ...) in {out}")
    walls = {e["level"]: e.get("wall_s") for e in stored.get("levels", [])
             if e.get("wall_s") is not None}
    extra = {k: stored[k] for k in ("graph", "launch_args") if k in stored}
    summary = sweep.summarize_sweep(out, axis, levels, options.metric or stored.get("metric"),
                                    walls, **extra)
    _write(sweep, out, summary, None)
    return 0


def _write(sweep, out: Path, summary: dict, elapsed: float | None) -> None:
    paths = sweep.write_sweep(out, summary)
    took = f" after {elapsed:.0f} s" if elapsed is not None else ""
    print(f"[sweep] {summary['axis']}{took}: {sweep.progress(summary['levels'])}; wrote "
          + ", ".join(str(p) for p in paths), flush=True)
    print(sweep.format_markdown(summary), end="", flush=True)
