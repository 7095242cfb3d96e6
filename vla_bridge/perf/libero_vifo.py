"""`vla-bridge bench libero-vifo`: LIBERO-VIFO's closed-loop protocols on LIBERO's 40 tasks
through the graph, and the Table-2-like table of the runs.

    vla-bridge bench libero-vifo [--output runs/libero_vifo] [--suite ...] [--tasks ...]
                                 [--inits 0] [--families F1,...,F8] [--policy libero_oracle]
                                 [--protocols original,authorized,conflict,no_language]

One `vla-bridge launch libero_sim` per protocol and family (`original` once, without a cue),
each into OUTPUT/<protocol>[_<family>] with the policy reading the cued images; a rerun resumes
each. With the LIBERO oracle the protocol decides what it plans (`oracle_follow`): the cue
under `authorized` and `no_language` (visual cue following's upper bound: AVF and UVI are
the oracle's own success on the cue tasks), the language under `original` and `conflict`
(unauthorized following's lower bound: UVF 0). Then the rows of every run are merged
(`evaluation.cue_metrics`) into OUTPUT/cue_table.txt and cue_metrics.json and printed, with
the instances per family and variant and the trials each run skipped. With `--vqa SPEC` a VQA
backend also answers Part I-A on the same tasks and families (`vla-bridge vqa --benchmark
libero`, into OUTPUT/vqa, frames in OUTPUT/frames), and OUTPUT/table2.txt gives all four
parts in one table: the VQA rows above the closed-loop ones, as the paper's Table 2.

It prints figures and asserts nothing. A learned policy (`--policy openpi?...`) gets no
`oracle_follow`; it sees what the protocol shows it.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from vla_bridge.benchmarks.vifo.protocols import DEFAULT_VARIANTS
from vla_bridge.evaluation.cues.metrics import format_cue_tables, format_table2, write_cue_metrics
from vla_bridge.evaluation.run_dir import read_jsonl

REPO = Path(__file__).resolve().parents[2]
PROTOCOLS = ("original", "authorized", "conflict", "no_language")
ORACLE_FOLLOWS = {"original": "language", "authorized": "cue", "conflict": "language",
                  "no_language": "cue"}


def runs(protocols, families) -> list[tuple[str, str | None]]:
    """(protocol, family) of every launch: `original` once, each cue protocol per family."""
    out = []
    for protocol in protocols:
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
        out += [(protocol, None)] if protocol == "original" else [(protocol, f) for f in families]
    return out


def launch(out: Path, protocol: str, family: str | None, policy: str, suites: str, tasks: str,
           inits: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "libero_sim", "--suite", suites,
           "--tasks", tasks, "--inits", inits, "--output", str(out), "--policy", policy,
           "--cue_protocol", protocol, "--image_source", "cued", "--timeout", "36000"]
    if family:
        cmd += ["--cue_family", family]
    if policy == "libero_oracle":
        cmd += ["--oracle_follow", ORACLE_FOLLOWS[protocol]]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)


def part_i_a(root: Path, vqa: str, suites: str, tasks: str, inits: str, fams) -> dict:
    """Part I-A on the same tasks, each family at its default variant (OUTPUT/vqa)."""
    from vla_bridge.vqa.libero import run_libero_vqa
    cues = [(f, DEFAULT_VARIANTS[f]) for f in fams]
    return run_libero_vqa(vqa, root / "frames", suites, tasks, cues, inits,
                          output=root / "vqa", name=vqa)


def protocol_table(output: str, suites: str, tasks: str, inits: str, families: str,
                   protocols: str, policy: str, vqa: str = "") -> int:
    root = Path(output)
    fams = [f.strip() for f in families.split(",") if f.strip()]
    unknown = [f for f in fams if f not in DEFAULT_VARIANTS]
    if unknown:
        print(f"unknown families {unknown}; valid: {', '.join(DEFAULT_VARIANTS)}", file=sys.stderr)
        return 2
    plan = runs([p.strip() for p in protocols.split(",") if p.strip()], fams)
    t_all = time.perf_counter()
    for k, (protocol, family) in enumerate(plan, 1):
        out = root / (protocol + (f"_{family}" if family else ""))
        t0 = time.perf_counter()
        proc = launch(out, protocol, family, policy, suites, tasks, inits)
        rows = read_jsonl(out / "results.jsonl")
        skipped = json.loads((out / "run.json").read_text()).get("skipped_tasks", {}) \
            if (out / "run.json").exists() else {}
        print(f"[{k}/{len(plan)}] {protocol} {family or '(no cue)'}: {len(rows)} episodes, "
              f"{len(skipped)} skipped, {time.perf_counter() - t0:.0f} s"
              + ("" if proc.returncode == 0 else f" -- exited {proc.returncode}"), flush=True)
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-2000:], file=sys.stderr)
    rows = [r for d in sorted(root.iterdir()) if d.is_dir()
            for r in read_jsonl(d / "results.jsonl")]
    if not rows:
        print("no episodes ran", file=sys.stderr)
        return 1
    metrics = write_cue_metrics(root, rows)
    print(f"\nLIBERO-VIFO on LIBERO ({len(rows)} episodes, policy {policy}, "
          f"{time.perf_counter() - t_all:.0f} s):")
    print(format_cue_tables(metrics))
    walls = [r["wall_s"] for r in rows if r.get("status") == "ok"]
    inserts = [r["overlay"]["insert_ms_mean"] for r in rows
               if (r.get("overlay") or {}).get("insert_ms_mean") is not None]
    if walls:
        print(f"mean episode wall time {sum(walls) / len(walls):.1f} s"
              + (f"; cue insertion {sum(inserts) / len(inserts):.2f} ms per observation "
                 "(both cameras)" if inserts else ""))
    if vqa:
        t0 = time.perf_counter()
        vqa_metrics = part_i_a(root, vqa, suites, tasks, inits, fams)
        table = format_table2(metrics, vqa_metrics)
        (root / "table2.txt").write_text(table + "\n")
        print(f"\nTable 2: Part I-A ({vqa}, {vqa_metrics['overall']['instances']} instances, "
              f"{time.perf_counter() - t0:.0f} s) above Parts I-B, II-A, II-B:\n{table}")
    print(f"tables: {root / 'cue_table.txt'}" + (f", {root / 'table2.txt'}" if vqa else ""))
    return 0
