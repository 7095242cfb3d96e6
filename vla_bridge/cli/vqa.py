"""`vla-bridge vqa`: LIBERO-VIFO Part I-A, the four cue questions asked of a VQA backend on
cued MuJoCo renders of RoboFollow's scenes, or (``--benchmark libero``) on LIBERO's own first
observations (resumable; per-family stage accuracy and full-chain accuracy)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vla_bridge.benchmarks.vifo.scene_cards import check_placement
from vla_bridge.vqa import (RESULTS_FILE, VqaBackendUnavailable, format_vqa_table,
                                       make_vqa_backend, parse_cues, run_vqa)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", required=True,
                        help="VQA backend spec: random[?seed=N], http?url=URL[&timeout=S], oracle "
                             "(privileged, pipeline check only) or package.module:Class[?k=v]")
    parser.add_argument("--benchmark", choices=("robofollow", "libero"), default="robofollow",
                        help="robofollow: RoboFollow's tasks in MuJoCo (default); libero: "
                             "LIBERO's 40 tasks, images rendered by .venv-libero (--suites, "
                             "--tasks as numbers, --inits, --frames)")
    parser.add_argument("--suites", default="",
                        help="libero: comma-separated suites (default: the four standard ones)")
    parser.add_argument("--inits", default="0",
                        help="libero: initial states, e.g. 0 or 0-4 (the instance seeds)")
    parser.add_argument("--frames", default="runs/libero_frames",
                        help="libero: where LIBERO's rendered frames are kept (missing ones "
                             "are rendered with .venv-libero)")
    parser.add_argument("--scene", default="", help="comma-separated scenes (default: all)")
    parser.add_argument("--levels", default="", help="comma-separated levels L0..L3 (default: all)")
    parser.add_argument("--tasks", default="",
                        help="comma-separated task ids (override --scene/--levels); libero: "
                             "task numbers such as 0-9")
    parser.add_argument("--limit", type=int, default=0, help="only the first N selected tasks")
    parser.add_argument("--families", default="", help="comma-separated families (default: F1..F8)")
    parser.add_argument("--variant", default="",
                        help="'' each family's default, 'all', a variant name, or F2=arrow,F6=hazard")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--rounds", type=int, default=1,
                       help="seeds per task: the benchmark episode seeds of rounds 1..N (default 1)")
    seeds.add_argument("--seeds", default="", help="explicit comma-separated seeds instead")
    parser.add_argument("--camera", default="cam_high", help="camera to render (default cam_high)")
    parser.add_argument("--placement", choices=("overlay", "scene"), default="overlay",
                        help="overlay: draw the cue into the render (default); scene: stand it in "
                             "the workspace as a card (F1, F6, F8; paper section 4.2)")
    parser.add_argument("--output", default="runs/vqa",
                        help="output directory, resumed when it exists (libero's default: "
                             "runs/vqa_libero)")


def _int_list(text: str, flag: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{flag} takes comma-separated integers, got {text!r}") from None


def _ask(backend, ask, output: str, notes=()) -> int:
    """Run ``ask()`` (the runner, which returns the metrics), close the backend, print the
    table; 1 with one line when the backend or the run fails."""
    try:
        metrics = ask()
    except (VqaBackendUnavailable, ValueError, RuntimeError) as exc:
        print(f"vla-bridge vqa: {exc}", file=sys.stderr)
        return 1
    finally:
        backend.close()
    print(format_vqa_table(metrics))
    for note in notes:
        print(note(metrics))
    print(f"results: {Path(output) / RESULTS_FILE}")
    return 0


def run_libero(args: argparse.Namespace) -> int:
    from vla_bridge.benchmarks.libero.protocol import load_catalog
    from vla_bridge.contract import LIBERO_PANDA
    from vla_bridge.vqa.libero import plan_libero_instances, run_libero_vqa
    output = args.output if args.output != "runs/vqa" else "runs/vqa_libero"
    try:
        if args.placement != "overlay":
            raise ValueError("--benchmark libero draws the cues (--placement overlay): LIBERO's "
                             "scenes take no cue cards")
        if args.camera not in LIBERO_PANDA.camera_names:
            raise ValueError(f"unknown LIBERO camera {args.camera!r}; valid: "
                             f"{', '.join(LIBERO_PANDA.camera_names)}")
        cues = parse_cues(args.families, args.variant)
        plan_libero_instances(load_catalog(), args.suites, args.tasks, cues, args.inits)
        backend = make_vqa_backend(args.backend)
    except ValueError as exc:
        print(f"vla-bridge vqa: {exc}", file=sys.stderr)
        return 2
    return _ask(backend, lambda: run_libero_vqa(
        backend, args.frames, args.suites, args.tasks, cues, args.inits, args.camera, output,
        name=args.backend), output,
        [lambda m: f"skipped (not built on LIBERO, or drawing nothing): {len(m['skipped'])}"])


def run(args: argparse.Namespace) -> int:
    if args.benchmark == "libero":
        return run_libero(args)
    from vla_bridge.contract import ALOHA_PIPER
    from vla_bridge.benchmarks.robofollow.tasks import load_suite, select_tasks

    try:
        if args.camera not in ALOHA_PIPER.camera_names:
            raise ValueError(f"unknown camera {args.camera!r}; valid: "
                             f"{', '.join(ALOHA_PIPER.camera_names)}")
        cues = parse_cues(args.families, args.variant)
        for fam, _variant in cues:
            check_placement(args.placement, fam)
        tasks = select_tasks(load_suite(), args.scene, args.levels, args.tasks)
        seeds = _int_list(args.seeds, "--seeds") if args.seeds else None
        tasks = tasks[:args.limit] if args.limit > 0 else tasks
        if not tasks:
            raise ValueError("no task selected")
        backend = make_vqa_backend(args.backend)
    except ValueError as exc:
        print(f"vla-bridge vqa: {exc}", file=sys.stderr)
        return 2
    return _ask(backend, lambda: run_vqa(backend, tasks, cues, args.rounds, seeds, args.camera,
                                         args.output, name=args.backend,
                                         placement=args.placement), args.output)
