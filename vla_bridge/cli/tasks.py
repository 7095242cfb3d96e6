"""`vla-bridge tasks`: list, filter and dry-run the RoboFollow suites (and, with ``--intact``,
INT-ACT's probes on Scene 2, or with ``--intact --benchmark libero`` on LIBERO)."""
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
    parser.add_argument("--benchmark", choices=("robofollow", "libero"), default="robofollow",
                        help="--intact: the probes on RoboFollow's Scene 2 (default) or on "
                             "LIBERO (suite libero_intact: `launch libero_sim --suite "
                             "libero_intact --tasks N`)")
    parser.add_argument("--card", action="store_true",
                        help="--intact (Scene 2): print each probe's real-pilot card: the objects "
                             "on the table, where, with which marker (docs/intact.md)")
    parser.add_argument("--json", action="store_true", help="--card: the cards as JSON")


def _libero_probes(args: argparse.Namespace) -> int:
    from vla_bridge.benchmarks.intact import libero_probes, probes

    names = [n.strip() for n in ("" if args.intact == "all" else args.intact).split(",")
             if n.strip()]
    known = set(probes.SUBCATEGORY_NAMES) | set(probes.CATEGORY_OF.values())
    try:
        ids = [libero_probes.probe(n).id for n in names if n not in known]
    except ValueError as exc:
        print(f"vla-bridge tasks: {exc}", file=sys.stderr)
        return 2
    chosen = [p for p in libero_probes.probes() if not names or p.id in ids
              or p.subcategory in names or p.category in names]
    for p in chosen:
        print(f"{p.index:>2}  {p.subcategory:<22}  {p.id}")
        if args.instructions:
            print(f"      {p.instruction}")
            print(f"      source {p.source_object}; goal {p.goal()[0]}; varies {p.base_id}"
                  + (f"; added {list(p.added)}" if p.added else "")
                  + (f"; {p.note}" if p.note else ""))
    per_sub = Counter(p.subcategory for p in chosen)
    print("\nprobes per subcategory: " + ", ".join(f"{s} {n}" for s, n in per_sub.items()))
    print(f"{len(chosen)} probes (suite {libero_probes.SUITE}; the first column is the task "
          "number for --tasks)")
    return 0


def _probes(args: argparse.Namespace) -> int:
    from vla_bridge.benchmarks.intact import probes

    if args.benchmark == "libero":
        if args.card:
            print("vla-bridge tasks: --card: the LIBERO probes run in LIBERO's simulator only "
                  "(a Panda arm); pilot cards are for the Scene 2 probes", file=sys.stderr)
            return 2
        return _libero_probes(args)

    try:
        chosen = probes.select_spec(args.intact)
    except ValueError as exc:  # an unknown subcategory or probe id
        print(f"vla-bridge tasks: {exc}", file=sys.stderr)
        return 2
    if args.card:
        return _cards(chosen, args.json)
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


def _cards(chosen, as_json: bool) -> int:
    import json

    from vla_bridge.benchmarks.intact import pilot_cards
    from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig

    try:
        markers = TrackerConfig.load()
        cards = [pilot_cards.card(p.id, markers) for p in chosen]
    except ValueError as exc:  # a malformed objects file
        print(f"vla-bridge tasks: {exc}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(cards, indent=1))
    else:
        print("\n".join(pilot_cards.card_text(c) for c in cards), end="")
    missing = sorted({n for c in cards for n in c["missing_markers"]})
    if missing:
        print(f"vla-bridge tasks: no marker for {missing} in the tracker's objects file",
              file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from vla_bridge.benchmarks.robofollow.tasks import load_suite, plan_trials, select_tasks

    if args.intact:
        return _probes(args)
    if args.card or args.json:
        print("vla-bridge tasks: --card and --json go with --intact (a probe's real-pilot card)",
              file=sys.stderr)
        return 2

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
