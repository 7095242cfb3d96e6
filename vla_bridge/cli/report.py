"""`vla-bridge report RUN_DIR`: report.md / report.json, plots and replay videos of a run, and
report.html: all of it in one self-contained page (reporting/html.py).

Each call adds its flags to the sections the run's report already has (report.json keeps
them: evaluation.report.memory), so `--paper --plots --videos 3` then `--compare OTHER`
gives one report with all four; `--reset` forgets the earlier sections.

`vla-bridge report --pair SIM_RUN REAL_RUN [--out DIR]` is the other mode: only the paired
sim-vs-real statistics of two runs of the same tasks (evaluation.report.paired), written as
DIR/pair_report.md and pair_report.json (DIR: REAL_RUN by default); no RUN_DIR then.
Besides the 2x2 statistics it gives the prediction-powered estimate of the real success rate
and the real trials a `--target-width` interval needs with and without sim. `--pair` given
once per policy (`--pair S1 R1 --pair S2 R2 ... --out DIR`) adds MMRV and Pearson r across
the policies, with bootstrap intervals (`--bootstrap`, `--seed`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vla_bridge.reporting import (DEFAULT_BOOT, DEFAULT_CONFIDENCE, DEFAULT_PAPER_MODEL,
                                          DEFAULT_SEED, METRICS, VIDEO_CAMERA, VIDEO_VIEWS,
                                          ReportError, ReportOptions, build_report,
                                          format_console, write_report)
from vla_bridge.reporting.html import REPORT_HTML


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", nargs="?", default=None,
                        help="run directory (holds results.jsonl); omit it with --pair")
    parser.add_argument("--pair", nargs=2, action="append", default=None,
                        metavar=("SIM_RUN", "REAL_RUN"),
                        help="instead of a run's report: paired sim-vs-real statistics of two runs "
                             "of the same tasks (trials paired by scene, task and round); writes "
                             "pair_report.md / pair_report.json into --out. Give it once per "
                             "policy to compare policies (MMRV, Pearson r; needs --out)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="with --pair: where to write pair_report.md/json (default REAL_RUN)")
    parser.add_argument("--target-width", type=float, default=None, metavar="W",
                        help="with --pair: full width (fraction) of the 95%% interval to plan the "
                             "number of real trials for (default 0.20)")
    parser.add_argument("--paper", nargs="?", const=DEFAULT_PAPER_MODEL, default=None, metavar="MODEL",
                        help=f"show the paper's Table 1 numbers of MODEL beside ours (default "
                             f"{DEFAULT_PAPER_MODEL}; ASCII spellings like pi05 work)")
    parser.add_argument("--plots", action="store_true", help="write plots/<scene>.png (IS/ES/CR over L0..L3)")
    parser.add_argument("--videos", type=int, default=0, metavar="N",
                        help="replay the first N saved episodes and write videos/<scene>/<task>_r<round>.mp4")
    parser.add_argument("--compare", default=None, metavar="OTHER_RUN",
                        help="the empty-language run (--empty_language) of the same tasks: table of the drop")
    parser.add_argument("--video-stride", type=int, default=2,
                        help="render every Nth frame (default 2; a CPU renderer takes ~10-75 ms a frame)")
    parser.add_argument("--video-fps", type=float, default=None,
                        help="playback frame rate (default: real time, 1 / (0.06 s x stride))")
    parser.add_argument("--video-format", choices=("mp4", "gif"), default="mp4",
                        help="mp4 (H.264 via PyAV; else OpenCV mp4v, else GIF) or gif")
    parser.add_argument("--keep-idle", action="store_true",
                        help="keep the idle tail of the videos (default: cut a second after "
                             "the last motion of an arm or object)")
    parser.add_argument("--reset", action="store_true",
                        help="forget the sections of the run's earlier report (paper, plots, "
                             "compare, videos): only this call's flags; no file is deleted")
    parser.add_argument("--camera", default=VIDEO_CAMERA, help=f"camera to render (default {VIDEO_CAMERA})")
    parser.add_argument("--video-view", choices=VIDEO_VIEWS, default=None,
                        help="what the videos show: cued (the images the policy saw under a "
                             "visual-cue protocol), raw (the sim's images) or both (side by side, "
                             "twice as wide); default: cued for episodes that showed a cue, else raw")
    parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOT, help="bootstrap replicates")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE)


# flags of the run report that mean nothing to --pair: (attribute, flag, its default)
_RUN_REPORT_FLAGS = (("paper", "--paper", None), ("plots", "--plots", False),
                     ("videos", "--videos", 0), ("compare", "--compare", None),
                     ("reset", "--reset", False), ("keep_idle", "--keep-idle", False),
                     ("video_view", "--video-view", None))


def _mode_error(args: argparse.Namespace) -> str | None:
    """Why RUN_DIR, --pair and the other flags do not go together (None: they do)."""
    if args.pair is None:
        if args.run_dir is None:
            return "give RUN_DIR, or --pair SIM_RUN REAL_RUN"
        if args.target_width is not None:
            return "--target-width goes with --pair only"
        return "--out goes with --pair only" if args.out is not None else None
    if args.run_dir is not None:
        return "give either RUN_DIR or --pair SIM_RUN REAL_RUN, not both"
    extra = [flag for attr, flag, default in _RUN_REPORT_FLAGS if getattr(args, attr) != default]
    if extra:
        return f"--pair runs only the paired analysis; drop {', '.join(extra)}"
    if len(args.pair) > 1 and args.out is None:
        return "several --pair (one per policy) write one report: give --out DIR"
    return None


def _run_pair(args: argparse.Namespace) -> int:
    """The paired sim-vs-real report. Exit 0: written; 2: bad input or unwritable --out."""
    from vla_bridge.reporting.paired import (DEFAULT_TARGET_WIDTH, build_multi_paired_report,
                                             build_paired_report)
    from vla_bridge.reporting.paired_text import (format_multi_console, format_paired_console,
                                                  write_paired_report)
    width = DEFAULT_TARGET_WIDTH if args.target_width is None else args.target_width
    if not 0 < args.confidence < 1 or not 0 < width < 1 or args.bootstrap < 1:
        print("error: 0 < --confidence < 1, 0 < --target-width < 1 and --bootstrap >= 1",
              file=sys.stderr)
        return 2
    out_dir = args.out or args.pair[0][1]
    try:
        if len(args.pair) == 1:
            report = build_paired_report(*args.pair[0], args.confidence, width)
            text = format_paired_console(report)
        else:
            report = build_multi_paired_report([tuple(p) for p in args.pair], args.confidence,
                                               width, args.bootstrap, args.seed)
            text = format_multi_console(report)
        md, js = write_paired_report(report, out_dir)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write the pair report: {exc.strerror or exc} "
              f"({exc.filename or out_dir})", file=sys.stderr)
        return 2
    print(text)
    print(f"wrote {md} and {js}")  # the paired report has no HTML page
    return 0


def run(args: argparse.Namespace) -> int:
    """Exit 0: report written; 1: written, but a requested plot/video failed; 2: bad input."""
    problem = _mode_error(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.pair is not None:
        return _run_pair(args)
    if args.videos < 0 or args.video_stride < 1 or args.bootstrap < 1 or not 0 < args.confidence < 1:
        print("error: --videos >= 0, --video-stride >= 1, --bootstrap >= 1 and 0 < --confidence < 1",
              file=sys.stderr)
        return 2
    options = ReportOptions(paper_model=args.paper, plots=args.plots, videos=args.videos,
                            compare=args.compare, n_boot=args.bootstrap, seed=args.seed,
                            confidence=args.confidence, video_stride=args.video_stride,
                            video_fps=args.video_fps, video_format=args.video_format,
                            camera=args.camera, video_view=args.video_view,
                            video_trim_idle=not args.keep_idle, reset=args.reset)
    try:
        report = build_report(args.run_dir, options)
    except (ReportError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        md, js = write_report(report)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_console(report))
    if report["intact"]:
        g = report["intact"]["groups"]["all"]
        print(f"INT-ACT ({report['intact']['n_episodes_scored']} episodes): intention "
              f"{g['intention_correct_rate']:.1f}%, grasp {g['grasp_success_rate']:.1f}%, "
              f"task success {g['task_success_rate']:.1f}%, "
              f"wrong object {g['wrong_object_attempt_rate']:.1f}%")
    if report["compare"] and "all" in report["compare"]["groups"]:
        a = report["compare"]["groups"]["all"]
        print("empty-language drop (all): " + ", ".join(f"{m} {_number(a[m]['drop'])}" for m in METRICS))
    for p in report["plots"]:
        print(f"plot: {Path(args.run_dir) / p}")
    for v in report["videos"]:
        view = f", {v['view']} view" if v.get("cue") or v.get("view", "raw") != "raw" else ""
        cut = f", idle tail of {v['idle_cut_s']:.1f} s cut" if v.get("idle_cut_frames") else ""
        length = v["frames"] / v["fps"] if v.get("fps") else 0.0  # the video's own length
        print(f"video: {Path(args.run_dir) / v['path']} ({v['frames']} frames, {length:.1f} s "
              f"at {v['fps']:g} fps{view}{cut}; rendered in {v['render_s']:.1f} s)")
    for e in report["errors"]:
        print(f"problem: {e}", file=sys.stderr)
    print(f"wrote {md}, {js} and {md.with_name(REPORT_HTML)} (one page, media inlined)")
    return 1 if report["errors"] else 0
