"""`vla-bridge console (--plan FILE | --tasks IDS) --sheet FILE [...]`: the operator console of
real pilot trials (vla_bridge/reporting/operator_console.py), one trial at a time, resumable."""
from __future__ import annotations

import argparse
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--plan", help="pilot plan (YAML/JSON: instructions, trials, stages)")
    what.add_argument("--tasks", help="comma-separated suite task ids instead of a plan")
    parser.add_argument("--trials", type=int, default=5, help="trials per task with --tasks")
    parser.add_argument("--sheet", required=True, help="trial sheet (JSON lines; resumes)")
    parser.add_argument("--answers", help="scripted answers, one per line ('-' = empty)")
    parser.add_argument("--operator", default=os.environ.get("USER", ""),
                        help="recorded per trial")
    parser.add_argument("--success", choices=("all", "last"), default="all",
                        help="a trial succeeds when all stages / the last stage are yes")
    parser.add_argument("--run", default="", metavar="TEMPLATE",
                        help="command run per trial after the reset ({task}, {trial}, {round}, "
                             "{instruction}, {group} are filled in)")
    parser.add_argument("--results", help="the graph's results.jsonl: show its automatic scores")
    parser.add_argument("--report", help="write the pilot report (markdown, + .json) here; a "
                        "run directory or a report.md path becomes pilot_report.md")
    parser.add_argument("--report-only", action="store_true", help="just report the sheet")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vla_bridge.reporting.operator_console import (Answers, Console, ScriptError, TrialSheet,
                                                       load_plan, plan_from_tasks, report,
                                                       write_report)

    if not (args.plan or args.tasks or args.report_only):
        print("vla-bridge console: one of --plan or --tasks is required (or --report-only)",
              file=sys.stderr)
        return 2
    out = sys.stdout
    sheet = TrialSheet(args.sheet)
    code = 0
    if not args.report_only:
        try:
            plan = load_plan(args.plan) if args.plan else \
                plan_from_tasks(args.tasks.split(","), args.trials)
        except (ValueError, KeyError, FileNotFoundError) as exc:
            print(f"[console] {exc}", file=sys.stderr)
            return 2
        answers = Answers.from_file(args.answers, out) if args.answers else Answers(out=out)
        console = Console(plan, sheet, answers, out, operator=args.operator,
                          success_rule=args.success, run_command=args.run,
                          results_path=Path(args.results) if args.results else None)
        try:
            code = console.run()
        except ScriptError as exc:
            print(f"[console] {exc}", file=sys.stderr)
            return 2
    text = write_report(sheet.rows, args.report) if args.report else report(sheet.rows)[0]
    out.write("\n" + text)
    return code
