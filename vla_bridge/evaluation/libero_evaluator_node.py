"""LIBERO evaluator node: runs LIBERO trials over the graph and reports success per task and
per suite (95 % Wilson intervals) into a run directory. The end node of `libero_sim`.

It plans the trials from the catalog (`benchmarks.libero.protocol.plan_trials`: suites x tasks x initial
states), and for each one publishes the instruction and `begin` (task {"scene": suite,
"layout": "TASK:INIT", "goal": BDDL goal}, seed, `max_steps`, `max_actions_per_call`), waits
for the sim's and the policy's `ready`, sends `start` and waits for the sim's `done`, whose
`success` is LIBERO's own predicates. The first episode's `ready` statuses name each side's
embodiment: if they differ (`contract.agree_embodiment`) the run is refused before any
episode runs (exit 3, the message names both sides).

Run directory: `run.json` (arguments, status), `results.jsonl` (one row per episode, appended
as it finishes; a rerun skips the episodes already there), `summary.json` and `report.md`.
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import rclpy
from rclpy.node import Node
from std_msgs.msg import String

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.benchmarks.libero.protocol import format_summary, plan_trials, summarize

PARAMS = {"suites": "libero_spatial", "tasks": "", "inits": "0", "seed": 7,
          "output": "runs/libero", "policy": "libero_oracle", "max_steps": 0,
          "actions_per_call": 5, "episode_timeout": 300.0, "resume": True}
EXIT_REFUSED = 3


class RunRefused(RuntimeError):
    """The graph cannot run (its nodes disagree on the embodiment, or a node failed at start)."""


class LiberoEvaluatorNode(Node):
    def __init__(self):
        super().__init__("evaluator_node")
        self.p = {k: self.declare_parameter(k, v).value for k, v in PARAMS.items()}
        q = messages.qos_profile
        self.pub_control = self.create_publisher(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
        self.pub_instruction = self.create_publisher(String, C.TOPIC_INSTRUCTION, q(C.QOS_LATCHED))
        self.create_subscription(String, C.TOPIC_EPISODE_STATUS,
                                 lambda m: self.on_status(m, "sim"), q(C.QOS_EVENTS))
        self.create_subscription(String, C.TOPIC_POLICY_STATUS,
                                 lambda m: self.on_status(m, "policy"), q(C.QOS_EVENTS))
        self.inbox: list[tuple[str, dict]] = []
        self.embodiment: C.Embodiment | None = None

    def on_status(self, msg: String, source: str) -> None:
        payload = messages.parse_status(msg, source, self.get_logger())
        if payload is not None:
            self.inbox.append((source, payload))

    def send(self, payload: dict) -> None:
        self.pub_control.publish(messages.json_msg(payload))

    def wait_for(self, want, timeout: float, episode: str) -> dict[str, dict]:
        """Spin until `want` ({source: kind}) all arrived for `episode`; an `error` status
        of either side raises RuntimeError with its message, a timeout TimeoutError."""
        got: dict[str, dict] = {}
        deadline = time.monotonic() + timeout
        while set(got) != set(want):
            if time.monotonic() > deadline:
                missing = sorted(set(want) - set(got))
                raise TimeoutError(f"no {', '.join(f'{s} {want[s]}' for s in missing)} within "
                                   f"{timeout:.0f} s")
            rclpy.spin_once(self, timeout_sec=0.05)
            while self.inbox:
                source, status = self.inbox.pop(0)
                if status.get("episode") != episode:
                    continue
                if status["kind"] == C.STATUS_ERROR:
                    raise RuntimeError(f"{source}: {status.get('message', 'error')}")
                if want.get(source) == status["kind"]:
                    got[source] = status
        return got

    def wait_for_graph(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.pub_control.get_subscription_count() < 2:
            if time.monotonic() > deadline:
                raise RunRefused("the sim and policy nodes did not join the graph within "
                                 f"{timeout:.0f} s")
            rclpy.spin_once(self, timeout_sec=0.1)
        rclpy.spin_once(self, timeout_sec=0.5)  # let discovery settle both ways

    def check_embodiment(self, ready: dict[str, dict]) -> None:
        """The graph agrees on one embodiment, else RunRefused naming both sides."""
        declared = {f"{src}_node": status.get("embodiment", C.DEFAULT_EMBODIMENT)
                    for src, status in sorted(ready.items(), key=lambda kv: kv[0] != "sim")}
        try:
            self.embodiment = C.agree_embodiment(declared)
        except C.EmbodimentMismatch as exc:
            raise RunRefused(f"refusing to run: {exc}") from None

    def run_trial(self, trial) -> dict:
        p = self.p
        timeout = float(p["episode_timeout"])
        apc = int(p["actions_per_call"])
        max_steps = int(p["max_steps"]) or None
        calls = math.ceil((max_steps or 600) / apc) + 1
        self.pub_instruction.publish(String(data=trial.instruction))
        begin = {"kind": C.CONTROL_BEGIN, "episode": trial.episode, "task": trial.task(),
                 "seed": trial.seed, "instruction": trial.instruction,
                 "max_policy_calls": calls, "max_actions_per_call": apc}
        if max_steps:
            begin["max_steps"] = max_steps
        t0 = time.perf_counter()
        self.send(begin)
        row = {"episode": trial.episode, "suite": trial.suite, "task_index": trial.task_index,
               "init": trial.init, "name": trial.name, "instruction": trial.instruction,
               "seed": trial.seed, "policy": p["policy"]}
        try:
            ready = self.wait_for({"sim": C.STATUS_READY, "policy": C.STATUS_READY}, timeout,
                                  trial.episode)
            if self.embodiment is None:
                self.check_embodiment(ready)
            t1 = time.perf_counter()
            self.send({"kind": C.CONTROL_START, "episode": trial.episode})
            done = self.wait_for({"sim": C.STATUS_DONE}, timeout, trial.episode)["sim"]
            row.update(success=bool(done.get("success")), steps=done.get("steps"),
                       calls=done.get("calls"), reason=done.get("reason", ""),
                       wall_s=round(time.perf_counter() - t1, 3),
                       reset_s=round(t1 - t0, 3), status="ok")
        except (TimeoutError, RuntimeError) as exc:
            if isinstance(exc, RunRefused):
                raise
            row.update(success=False, reason=f"episode failed: {exc}", status="error",
                       wall_s=round(time.perf_counter() - t0, 3))
        self.send({"kind": C.CONTROL_END, "episode": trial.episode})
        return row

    def run(self) -> int:
        p = self.p
        out = Path(p["output"])
        out.mkdir(parents=True, exist_ok=True)
        trials = plan_trials(p["suites"], p["tasks"], p["inits"], int(p["seed"]))
        results = out / "results.jsonl"
        rows = ([json.loads(line) for line in results.read_text().splitlines() if line.strip()]
                if p["resume"] and results.exists() else [])
        if not p["resume"]:
            results.write_text("")
        done = {r["episode"] for r in rows}
        todo = [t for t in trials if t.episode not in done]
        info = {"graph": "libero_sim", "arguments": dict(p), "trials": len(trials),
                "status": "running"}
        (out / "run.json").write_text(json.dumps(info, indent=1))
        log = self.get_logger()
        log.info(f"{len(trials)} LIBERO trials ({len(todo)} to run) -> {out}")
        status = "finished"
        try:
            self.wait_for_graph()
            for k, trial in enumerate(todo, 1):
                row = self.run_trial(trial)
                rows.append(row)
                with results.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                log.info(f"[{k}/{len(todo)}] {trial.episode} {trial.instruction!r}: "
                         f"{'success' if row['success'] else 'failure'} after "
                         f"{row.get('steps')} steps ({row['wall_s']:.1f} s; {row['reason']})")
        except RunRefused as exc:
            status = "refused"
            info.update(status=status, error=str(exc))
            (out / "run.json").write_text(json.dumps(info, indent=1))
            print(f"evaluator_node: {exc}", file=sys.stderr)
            return EXIT_REFUSED
        summary = summarize([r for r in rows if r["episode"] in {t.episode for t in trials}])
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        (out / "report.md").write_text(report_markdown(summary, p))
        info.update(status=status, embodiment=self.embodiment.name if self.embodiment else None)
        (out / "run.json").write_text(json.dumps(info, indent=1))
        for line in format_summary(summary).splitlines():
            log.info(line)
        return 0


def report_markdown(summary: dict, params: dict) -> str:
    lines = [f"# LIBERO run: policy `{params['policy']}`", "",
             "| suite | episodes | success % | 95 % CI | s / episode |", "|---|---|---|---|---|"]
    for suite, s in [*summary["suites"].items(), ("all", summary["overall"])]:
        lo, hi = s["ci95"]
        wall = f"{s['mean_wall_s']:.1f}" if s["mean_wall_s"] is not None else "-"
        lines.append(f"| {suite} | {s['episodes']} | {100 * s['success_rate']:.1f} | "
                     f"{100 * lo:.1f}-{100 * hi:.1f} | {wall} |")
    lines += ["", "| task | name | episodes | success % | 95 % CI |", "|---|---|---|---|---|"]
    for task, s in summary["tasks"].items():
        lo, hi = s["ci95"]
        lines.append(f"| {task} | {s['name']} | {s['episodes']} | {100 * s['success_rate']:.1f}"
                     f" | {100 * lo:.1f}-{100 * hi:.1f} |")
    if summary["failures"]:
        lines += ["", "## Failures", ""]
        lines += [f"- `{ep}`: {why}" for ep, why in summary["failures"].items()]
    return "\n".join(lines) + "\n"


def main(args=None) -> int:
    messages.enable_stack_dumps()
    rclpy.init(args=args)
    node = None
    try:
        node = LiberoEvaluatorNode()
        return node.run()
    except KeyboardInterrupt:
        return 130
    except (ValueError, FileNotFoundError) as exc:
        print(f"evaluator_node: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    sys.exit(main())
