"""`vla-bridge bench BENCHMARK [flags]`: performance benchmarks that print figures, one
sub-command per benchmark, each with only its own flags (`vla-bridge bench BENCHMARK --help`).

The code is in vla_bridge/perf/: the node graph (graph.py: overhead, recording, throughput),
campaigns over Ray (campaign.py: campaign, multinode), SAPIEN against MuJoCo (sapien.py: sapien,
crosssim), LIBERO (libero.py; libero_cost.py: episodes per hour per core) and the LIBERO-VIFO
protocols (libero_vifo.py), the policy node
(policy.py), the cue overlays (cues.py) and the PiPER heartbeat watchdog (heartbeat.py). Each benchmark below is a (help, add_arguments, run)
triple; its modules load only when it runs.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

TASK = "L0_place_yellow_block_1_behind_red_sphere"
LIBERO_SUITES = "libero_spatial,libero_object,libero_goal,libero_10"


@dataclass(frozen=True)
class Benchmark:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# ------------------------------------------------------------------------ shared flags


def _task_and_episodes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", default=TASK, help=f"the task timed (default {TASK})")
    p.add_argument("--episodes", type=int, default=4,
                   help="episodes per side; the first of each side is a warm-up (default 4)")


def _per_level(p: argparse.ArgumentParser) -> None:
    p.add_argument("--per-level", type=int, default=2,
                   help="tasks sampled per scene and level (default 2)")


def _per_level_and_rounds(p: argparse.ArgumentParser) -> None:
    _per_level(p)
    p.add_argument("--rounds", type=int, default=2, help="rounds per task (default 2)")


def _libero_tasks(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default=LIBERO_SUITES, help="comma-separated LIBERO suites")
    p.add_argument("--tasks", default="", help="task numbers per suite, e.g. 0-9 ('' = all)")
    p.add_argument("--inits", default="0", help="initial states per task, e.g. 0-4 (default 0)")


# ------------------------------------------------------------------------ the node graph


def _run_overhead(args: argparse.Namespace) -> int:
    from vla_bridge.perf.graph import overhead
    return overhead(args.task, args.episodes)


def _run_recording(args: argparse.Namespace) -> int:
    from vla_bridge.perf.graph import recording
    return recording(args.task, args.episodes)


def _run_throughput(args: argparse.Namespace) -> int:
    from vla_bridge.perf.graph import throughput
    return throughput(args.per_level)


# ------------------------------------------------------------------------ campaigns


def _run_campaign(args: argparse.Namespace) -> int:
    from vla_bridge.perf import campaign
    return campaign.scale(args.per_level, args.rounds)


def _cpu_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", default=TASK, help=f"the task run (default {TASK})")
    p.add_argument("--short", type=int, default=2, help="episodes of the short run (default 2)")
    p.add_argument("--long", type=int, default=6, help="episodes of the long run (default 6)")
    p.add_argument("--policy", action="append", default=None, metavar="SPEC",
                   help="policy backend spec, once per policy (default: oracle)")
    p.add_argument("--record", action="store_true", help="with record:=true (the recorder node)")
    p.add_argument("--sim", choices=("mujoco", "sapien"), default="mujoco",
                   help="the simulator of the sim node (default mujoco)")


def _run_cpu(args: argparse.Namespace) -> int:
    from vla_bridge.perf.cpu import cpu
    extra = (("--record", "true") if args.record else ()) + \
        (("--sim", args.sim) if args.sim != "mujoco" else ())
    return cpu(args.task, args.short, args.long, args.policy or ["oracle"], extra)


def _run_multinode(args: argparse.Namespace) -> int:
    from vla_bridge.perf import campaign
    return campaign.multinode(args.per_level, args.rounds)


# ------------------------------------------------------------------------ simulators


def _sapien_arguments(p: argparse.ArgumentParser) -> None:
    _task_and_episodes(p)
    p.add_argument("--figure", default=None, metavar="PNG",
                   help="instead of timing, write MuJoCo/SAPIEN images of --task here")
    p.add_argument("--no-graph", action="store_true",
                   help="time in one process only, not through the graph")


def _run_sapien(args: argparse.Namespace) -> int:
    from vla_bridge.perf import sapien
    if args.figure:
        return sapien.figure(args.task, args.figure)
    return sapien.speed(args.task, args.episodes, graph=not args.no_graph)


def _crosssim_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scene", default="scene1", help="comma-separated scenes ('' = all four)")
    p.add_argument("--levels", default="", help="comma-separated levels ('' = all)")
    p.add_argument("--policy", default=None, help="policy backend spec (default oracle)")
    p.add_argument("--output", default=None, metavar="FILE",
                   help="write the rows to this JSON file")


def _run_crosssim(args: argparse.Namespace) -> int:
    from vla_bridge.perf import sapien
    return sapien.crosssim(args.scene, args.levels, args.policy or "oracle", args.output)


def _libero_arguments(p: argparse.ArgumentParser) -> None:
    _libero_tasks(p)
    p.add_argument("--no-graph", action="store_true",
                   help="time in one process only, not through the graph")


def _run_libero(args: argparse.Namespace) -> int:
    from vla_bridge.perf import libero
    return libero.speed(args.suite, args.tasks, args.inits, graph=not args.no_graph)


def _libero_cost_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default="libero_object",
                   help="LIBERO suite(s) (default libero_object)")
    p.add_argument("--tasks", default="0-3", help="task numbers per suite (default 0-3)")
    p.add_argument("--inits", default="0-1", help="initial states per task (default 0-1)")
    p.add_argument("--workers", default="1,2",
                   help="campaign workers, one campaign per value (default 1,2)")
    p.add_argument("--cpu-inits", default="1,2", metavar="N,M",
                   help="the CPU slope's two graph runs: the first N and the first M initial "
                        "states of --inits (default 1,2)")
    p.add_argument("--policy", default="libero_oracle", help="policy backend spec (default "
                                                             "libero_oracle)")
    p.add_argument("--domain-base", type=int, default=100,
                   help="the campaigns' --domain-base (worker i: ROS domain DOMAIN_BASE + i)")


def _run_libero_cost(args: argparse.Namespace) -> int:
    import sys

    from vla_bridge.perf import libero_cost
    try:
        workers = [int(w) for w in args.workers.split(",")]
        short, long = (int(n) for n in args.cpu_inits.split(","))
    except ValueError:
        print("vla-bridge bench libero-cost: error: --workers takes numbers (1,2) and "
              "--cpu-inits two (N,M)", file=sys.stderr)
        return 2
    return libero_cost.cost(args.suite, args.tasks, args.inits, workers, (short, long),
                            args.policy, args.domain_base)


def _libero_vifo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", default=None,
                   help="the runs' directory (default runs/libero_vifo)")
    _libero_tasks(p)
    p.add_argument("--families", default="F1,F2,F3,F4,F5,F6,F7,F8",
                   help="cue families, each at its default variant")
    p.add_argument("--protocols", default="original,authorized,conflict,no_language",
                   help="protocols to run")
    p.add_argument("--policy", default=None, help="policy backend spec (default libero_oracle)")
    p.add_argument("--vqa", default="",
                   help="a VQA backend spec (random, http?url=...) that also answers Part I-A on "
                        "the same tasks: table2.txt has all four parts")


def _run_libero_vifo(args: argparse.Namespace) -> int:
    from vla_bridge.perf import libero_vifo
    return libero_vifo.protocol_table(args.output or "runs/libero_vifo", args.suite, args.tasks,
                                      args.inits, args.families, args.protocols,
                                      args.policy or "libero_oracle", args.vqa)


# ------------------------------------------------------------------------ policy node, cues


def _policy_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calls", type=int, default=200, help="measured calls (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="calls not measured (default 20)")
    p.add_argument("--policy", default="hold", help="backend spec (default hold: ~0 model time)")
    p.add_argument("--chunk-size", type=int, default=50, help="actions per chunk (default 50)")
    p.add_argument("--async", dest="async_inference", action="store_true",
                   help="async_inference in the node (worker thread + splice)")
    p.add_argument("--temporal-ensemble", action="store_true",
                   help="temporal_ensemble in the node")
    p.add_argument("--no-graph", dest="graph", action="store_false",
                   help="skip the run through the whole graph")


def _run_policy(args: argparse.Namespace) -> int:
    from vla_bridge.perf import policy
    return policy.measure(args)


def _cues_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=200,
                   help="insertions timed per variant; the median is printed (default 200)")
    p.add_argument("--sim", action="store_true", help="use a MuJoCo-rendered frame")
    p.add_argument("--examples", metavar="DIR", help="also write the example PNGs to DIR")
    p.add_argument("--instances", action="store_true",
                   help="only print the cue instances the compatibility filter builds over the "
                        "554 RoboFollow tasks, per variant, and which task types it skips")


def _run_cues(args: argparse.Namespace) -> int:
    from vla_bridge.perf import cues
    if args.instances:
        print(cues.instance_report())
        return 0
    cues.print_costs(args.repeats, args.sim)
    if args.examples:
        for path in cues.save_examples(args.examples):
            print("wrote", path)
    return 0


# ------------------------------------------------------------------------ the PiPER watchdog


def _heartbeat_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=20.0,
                   help="seconds of a live, GIL-holding policy per row (default 20)")
    p.add_argument("--hogs", default="0,2,4", help="busy-loop CPU hogs per row (default 0,2,4)")
    p.add_argument("--kills", type=int, default=5, help="SIGKILLs timed per row (default 5)")
    p.add_argument("--mode", choices=("process", "thread", "both"), default="both",
                   help="where the policy's heartbeat comes from: its child process (the "
                        "node's default), a thread of the policy process, or both (default)")
    p.add_argument("--gil-hold", type=float, default=1.0,
                   help="seconds each predict holds the GIL (default 1.0)")


def _run_heartbeat(args: argparse.Namespace) -> int:
    from vla_bridge.perf import heartbeat
    return heartbeat.run(args)


# ------------------------------------------------------------------------ the registry

BENCHMARKS: dict[str, Benchmark] = {
    "overhead": Benchmark("the node graph's wall time against the same episodes in one process",
                          _task_and_episodes, _run_overhead),
    "recording": Benchmark("what record:=true costs: wall time with and without the recorder, "
                           "bag sizes", _task_and_episodes, _run_recording),
    "throughput": Benchmark("oracle trials per minute through the graph, and the full "
                            "protocol's projected wall time", _per_level, _run_throughput),
    "campaign": Benchmark("a campaign with 1 and with 2 Ray workers: trials per minute, the "
                          "speed-up", _per_level_and_rounds, _run_campaign),
    "cpu": Benchmark("CPU-seconds per episode of every node, split into physics, rendering, "
                     "messages, serialisation, DDS and glue (slope of two graph runs)",
                     _cpu_arguments, _run_cpu),
    "multinode": Benchmark("a local 2-node Ray cluster, one node killed mid-campaign: where "
                           "each unit ran", _per_level_and_rounds, _run_multinode),
    "sapien": Benchmark("wall time per episode in SAPIEN against MuJoCo (or --figure: their "
                        "images)", _sapien_arguments, _run_sapien),
    "crosssim": Benchmark("a policy's IS / ES / CR in MuJoCo and in SAPIEN side by side, and "
                          "every task that differs", _crosssim_arguments, _run_crosssim),
    "libero": Benchmark("LIBERO control steps per second, and per-suite wall time and oracle "
                        "success through the graph", _libero_arguments, _run_libero),
    "libero-cost": Benchmark("LIBERO episodes per hour per core: a campaign's throughput with W "
                             "workers and CPU-seconds per episode (slope), beside vla-eval's",
                             _libero_cost_arguments, _run_libero_cost),
    "libero-vifo": Benchmark("LIBERO-VIFO's closed-loop protocols on LIBERO's tasks through the "
                             "graph, and their table", _libero_vifo_arguments, _run_libero_vifo),
    "policy": Benchmark("the policy node's own cost per call and observation-to-action latency "
                        "over DDS", _policy_arguments, _run_policy),
    "cues": Benchmark("cue overlay cost per frame at 320x240 per family and variant (or the "
                      "example sheets, the instance counts)", _cues_arguments, _run_cues),
    "heartbeat": Benchmark("the PiPER node's heartbeat watchdog under load: hold latency after "
                           "the policy dies, false holds with a GIL-holding predict",
                           _heartbeat_arguments, _run_heartbeat),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="which", metavar="BENCHMARK", required=True)
    for name, bench in BENCHMARKS.items():
        bench.add_arguments(sub.add_parser(name, help=bench.help, description=bench.help))


def run(args: argparse.Namespace) -> int:
    return BENCHMARKS[args.which].run(args)
