#!/usr/bin/env python3
"""Do two runs give the same episodes? Compare the results.jsonl of run directories row by row.

    python tools/compare_results.py BEFORE AFTER             # two run directories
    python tools/compare_results.py BEFORE_ROOT AFTER_ROOT   # or two folders of run directories

Rows are matched by their ``key``; every field is compared except the wall-clock ones (wall
and reset times, policy latencies, the sim's timing split, the overlay's insertion time),
which differ from run to run on any machine. Prints one line per run directory and up to three
differing rows each; exit 0 when every row is identical, 1 otherwise. Used to show that a
refactoring changed no result (issue #23: docs/results.md).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

WALL_CLOCK = ("wall_s", "reset_s", "policy_latency_ms", "sim_timing_s", "insert_ms")


def comparable(value):
    """``value`` without its wall-clock fields (at any depth)."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()
                if not any(k.startswith(prefix) for prefix in WALL_CLOCK)}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def rows(run_dir: Path) -> dict[str, dict]:
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn line, as the run directory itself skips it
        out[row["key"]] = comparable(row)
    return out


def compare(before: Path, after: Path) -> tuple[int, list[str]]:
    """(rows that differ, report lines) for two run directories."""
    a, b = rows(before), rows(after)
    differ = [k for k in a if a[k] != b.get(k)] + [k for k in b if k not in a]
    lines = [f"{before.name}: {len(a)} rows before, {len(b)} after, {len(differ)} differ"]
    for key in differ[:3]:
        if key not in a or key not in b:
            lines.append(f"    {key}: missing {'after' if key in a else 'before'}")
            continue
        x, y = a[key], b[key]
        fields = sorted(f for f in set(x) | set(y) if x.get(f) != y.get(f))
        lines.append(f"    {key}: {', '.join(fields)}")
    return len(differ), lines


def pairs(before: Path, after: Path) -> list[tuple[Path, Path]]:
    if (before / "results.jsonl").exists():
        return [(before, after)]
    return [(d, after / d.name) for d in sorted(before.iterdir())
            if (d / "results.jsonl").exists()]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], "\nusage: compare_results.py BEFORE AFTER",
              file=sys.stderr)
        return 2
    before, after = Path(argv[0]), Path(argv[1])
    total = 0
    for a, b in pairs(before, after):
        if not (b / "results.jsonl").exists():
            print(f"{a.name}: no results.jsonl in {b}")
            total += 1
            continue
        n, lines = compare(a, b)
        total += n
        print("\n".join(lines))
    print("identical" if total == 0 else f"{total} rows differ")
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
