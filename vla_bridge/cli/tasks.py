"""`vla-bridge tasks`: list, filter and dry-run the RoboFollow suites (and, with ``--intact``,
INT-ACT's probes on Scene 2)."""
from __future__ import annotations

import argparse
import sys
from collections import Counter


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scene", default="", help="comma-separated scenes (default: all)")
    parser.add_argument("--levels", default="", help="comma-separated levels L0..L3 (default: all)")
    parser.add_argument("--tasks", default="",
                        help="comma-separated task ids (override --scene/--levels)")
    parser.add_argument("--rounds", type=int, default=10, help="rounds per task (protocol: 10)")
    parser.add_argument("--seed", "--base-seed", dest="seed", type=int, default=42,
                        help="base seed, as `launch --seed` (default 42)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the trials (task, round, seed) a run would execute")
    parser.add_argument("--instructions", action="store_true", help="show each instruction")
    parser.add_argument("--intact", nargs="?", const="all", default="",
                        help="list INT-ACT's probes instead: 'all' (the default when given "
                             "alone), or comma-separated subcategories, categories or probe ids, "
                             "as `launch robofollow_sim --intact`")


def _probes(args: argparse.Namespace) -> int:
    from vla_bridge.benchmarks.intact import probes

    try:
        chosen = probes.select_spec(args.intact)
    except ValueError as exc:  # an unknown subcategory or probe id
        print(f"vla-bridge tasks: {exc}", file=sys.stderr)
        return 2
    for p in chosen:
        edits = p.task.edits
        print(f"{p.subcategory:<22}  {p.task.arm:<5}  {p.task.action:<6}  {p.id}")
        if args.instructions:
            print(f"      {p.task.instruction}")
            print(f"      source {p.task.source}; varies {p.base}"
                  + (f"; scene edits {edits}" if edits else "") + (f"; {p.note}" if p.note else ""))
    per_sub = Counter(p.subcategory for p in chosen)
    print("\nprobes per subcategory: " + ", ".join(f"{s} {n}" for s, n in per_sub.items()))
    print(f"{len(chosen)} probes")
    return 0


def run(args: argparse.Namespace) -> int:
    from vla_bridge.benchmarks.robofollow.tasks import load_suite, plan_trials, select_tasks

    if args.intact:
        return _probes(args)

    try:
        tasks = select_tasks(load_suite(), args.scene, args.levels, args.tasks)
    except ValueError as exc:  # unknown scene, level or task id (with close matches)
        print(f"vla-bridge tasks: {exc}", file=sys.stderr)
        return 2
    trials = plan_trials(tasks, args.rounds, args.seed)
    if args.dry_run:
        for t in trials:
            print(f"{t.task.scene}  {t.task.level}  {t.task.id}  round {t.round}  seed {t.seed}")
    else:
        for t in tasks:
            line = f"{t.scene}  {t.level}  {t.arm:<5}  {t.action:<16}  {t.id}"
            print(line + (f"\n      {t.instruction}" if args.instructions else ""))
    per_group = Counter((t.task.scene, t.task.level) for t in trials)
    print("\ntrials per scene/level:")
    for (scene, level), n in sorted(per_group.items()):
        print(f"  {scene}/{level}: {n}")
    print(f"{len(tasks)} tasks x {args.rounds} rounds = {len(trials)} trials")
    return 0
