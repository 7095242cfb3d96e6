"""LIBERO evaluator node: runs LIBERO trials over the graph and reports success per task and
per suite (95 % Wilson intervals) into a run directory. The end node of `libero_sim`.

It plans the trials from the catalog (`benchmarks.libero.protocol.plan_trials`: suites x tasks x
initial states) and, under a LIBERO-VIFO protocol (`cue_protocol`: original, authorized,
conflict, no_language; `benchmarks.libero.vifo`), which task the language names and which the
cue shows. For each trial it sets the cue overlay's cue (`evaluation.cue_overlay`: the policy
reads the cued images with `image_source:=cued`), publishes the instruction and `begin` (task
{"scene": suite, "layout": "TASK:INIT", "goal", "goals", "end_on"}, `cue_task`, seed,
`max_steps`, `max_actions_per_call`), waits for the sim's and the policy's `ready`, sends
`start` and waits for the sim's `done`, whose `success` and `goals` are LIBERO's own
predicates. The first episode's `ready` statuses name each side's embodiment: if they differ
(`contract.agree_embodiment`) the run is refused before any episode runs (exit 3, the message
names both sides).

The run directory is `evaluation.run_dir.RunDirectory`'s: `run.json` (arguments, provenance,
the planned trials, `skipped_tasks`, status), `results.jsonl` (one fsync'ed row per episode; a
torn last line is set aside; a rerun skips what is there, and refuses to mix another policy,
protocol or seed into it), `summary.json`, `report.md` and, under a cue protocol,
`cue_metrics.json` / `cue_table.txt` (Table 2's metrics of the run) and `cue_frames/` (each
task's first cued observation beside the raw one; each row's `overlay` says how many
observations were cued and how much of each image changed). A node that dies (the
package's launcher reports it, or it leaves the graph) stops the run with its reason; what
finished stays, and a resume runs the rest.
"""
from __future__ import annotations

import math
import sys
import time

import cv2
import numpy as np
import rclpy
from rclpy.node import Node
from std_msgs.msg import String

from vla_bridge import contract as C
from vla_bridge.benchmarks.libero import vifo
from vla_bridge.benchmarks.libero.protocol import (format_summary, load_catalog, plan_trials,
                                                   report_markdown, summarize)
from vla_bridge.benchmarks.vifo.protocols import resolve_family_variant
from vla_bridge.evaluation.cue_metrics import format_cue_tables, write_cue_metrics
from vla_bridge.evaluation.cue_overlay import CueOverlay
from vla_bridge.evaluation.episodes import BEGIN_RESEND_S
from vla_bridge.evaluation.provenance import checkpoint_of, git_commit, resume_differences
from vla_bridge.evaluation.run_dir import RunDirError, RunDirectory, completion_status
from vla_bridge.ros import messages
from vla_bridge.ros.node_events import DIED, RESTARTED, NodeEvents

PARAMS = {"suites": "libero_spatial", "tasks": "", "inits": "0", "seed": 7,
          "output": "runs/libero", "policy": "libero_oracle", "max_steps": 0,
          "actions_per_call": 5, "episode_timeout": 300.0, "resume": True,
          "cue_protocol": "", "cue_family": "", "cue_variant": ""}
EXIT_REFUSED = 3
EMBODIMENT = C.LIBERO_PANDA
#: seconds the sim or the policy may be missing from the graph before the run stops (a DDS
#: lease, config/fastdds_profile.xml, is 10 s)
GONE_AFTER_S = 12.0


class RunRefused(RuntimeError):
    """The graph cannot run (its nodes disagree on the embodiment, or a node failed at start)."""


class GraphBroken(RuntimeError):
    """A node of the graph died or left it: the run stops (finished episodes stay)."""


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
        # the cued image topics always exist (pass-through without a cue)
        self.overlay = CueOverlay(self, EMBODIMENT.camera_names, EMBODIMENT.state_names,
                                  mirrored=EMBODIMENT.mirrored_images)
        self.events = NodeEvents.from_env()
        self.inbox: list[tuple[str, dict]] = []
        self.embodiment: C.Embodiment | None = None
        self.missing_since: float | None = None

    def on_status(self, msg: String, source: str) -> None:
        payload = messages.parse_status(msg, source, self.get_logger())
        if payload is not None:
            self.inbox.append((source, payload))

    def send(self, payload: dict) -> None:
        self.pub_control.publish(messages.json_msg(payload))

    # ------------------------------------------------------------------ the graph
    def check_graph(self) -> None:
        """GraphBroken when the launcher reports a node dead or the sim or policy node has
        been gone from the graph for GONE_AFTER_S; RuntimeError (the episode fails) when the
        policy node restarted."""
        for event in (self.events.poll() if self.events is not None else []):
            how = event.get("how", "")
            if event.get("event") == DIED:
                raise GraphBroken(f"{event.get('node')} died ({how})")
            if event.get("event") == RESTARTED:
                raise RuntimeError(f"{event.get('node')} restarted ({how}); its episode is lost")
        if self.pub_control.get_subscription_count() >= 2:
            self.missing_since = None
        elif self.missing_since is None:
            self.missing_since = time.monotonic()
        elif time.monotonic() - self.missing_since > GONE_AFTER_S:
            raise GraphBroken(f"the sim or the policy node left the graph (gone for "
                              f"{GONE_AFTER_S:.0f} s)")

    def wait_for(self, want, timeout: float, episode: str,
                 resend: dict | None = None) -> dict[str, dict]:
        """Spin until `want` ({source: kind}) all arrived for `episode`; an `error` status
        of either side raises RuntimeError with its message, a timeout TimeoutError, a broken
        graph GraphBroken. `resend` (a begin) goes out again every BEGIN_RESEND_S meanwhile:
        a node that missed it, or whose answer was lost, answers again (vla_bridge.ros.reach)."""
        got: dict[str, dict] = {}
        deadline = time.monotonic() + timeout
        next_check = 0.0
        next_resend = time.monotonic() + BEGIN_RESEND_S
        while set(got) != set(want):
            if resend is not None and time.monotonic() > next_resend:
                self.send(resend)
                next_resend = time.monotonic() + BEGIN_RESEND_S
            if time.monotonic() > deadline:
                missing = sorted(set(want) - set(got))
                raise TimeoutError(f"no {', '.join(f'{s} {want[s]}' for s in missing)} within "
                                   f"{timeout:.0f} s")
            if time.monotonic() > next_check:
                self.check_graph()
                next_check = time.monotonic() + 0.5
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

    def check_embodiment(self, ready: dict[str, dict]) -> None:
        """The graph agrees on one embodiment, else RunRefused naming both sides."""
        declared = {f"{src}_node": status.get("embodiment", C.DEFAULT_EMBODIMENT)
                    for src, status in sorted(ready.items(), key=lambda kv: kv[0] != "sim")}
        try:
            self.embodiment = C.agree_embodiment(declared)
        except C.EmbodimentMismatch as exc:
            raise RunRefused(f"refusing to run: {exc}") from None

    # ------------------------------------------------------------------ trials
    def plan(self, catalog: dict) -> tuple[list, dict]:
        """(trials to run, {episode: why skipped}) under the run's cue protocol."""
        p = self.p
        protocol = str(p["cue_protocol"] or "").strip()
        fam = variant = None
        if protocol not in ("", "original"):
            fam, variant = resolve_family_variant(str(p["cue_family"]), str(p["cue_variant"]))
        trials = plan_trials(p["suites"], p["tasks"], p["inits"], int(p["seed"]), catalog)
        planned = vifo.plan_cue_trials(trials, protocol, fam, variant, catalog)
        skipped = {t.key: t.skip for t in planned if t.skip}
        return [t for t in planned if not t.skip], skipped

    def run_trial(self, ct: vifo.LiberoCueTrial, catalog: dict) -> dict:
        p, trial = self.p, ct.trial
        timeout = float(p["episode_timeout"])
        apc = int(p["actions_per_call"])
        max_steps = int(p["max_steps"]) or None
        calls = math.ceil((max_steps or 600) / apc) + 1
        entry = catalog[trial.suite][trial.task_index]
        self.overlay.set_cue(vifo.build_cue(entry, ct.family, ct.variant) if ct.family else None)
        self.pub_instruction.publish(String(data=ct.language))
        begin = {"kind": C.CONTROL_BEGIN, "episode": ct.key, "task": ct.begin_task(),
                 "seed": trial.seed, "instruction": ct.language,
                 "max_policy_calls": calls, "max_actions_per_call": apc}
        if ct.family:
            begin["cue_task"] = ct.cue_task_spec()
        if max_steps:
            begin["max_steps"] = max_steps
        t0 = time.perf_counter()
        self.send(begin)
        row = {"key": ct.key, "episode": ct.key, "suite": trial.suite,
               "task_index": trial.task_index, "init": trial.init, "name": trial.name,
               "instruction": ct.language, "seed": trial.seed, "policy": p["policy"]}
        try:
            ready = self.wait_for({"sim": C.STATUS_READY, "policy": C.STATUS_READY}, timeout,
                                  ct.key, resend=begin)
            if self.embodiment is None:
                self.check_embodiment(ready)
            held = [r for r, v in (ready["sim"].get("held_at_start") or {}).items() if v]
            if ready["policy"].get("note"):  # what the policy said it cannot do
                row["policy_note"] = ready["policy"]["note"]
            t1 = time.perf_counter()
            self.send({"kind": C.CONTROL_START, "episode": ct.key})
            done = self.wait_for({"sim": C.STATUS_DONE}, timeout, ct.key)["sim"]
            # each role's task done; without a protocol the loaded task is the language's
            goals = done.get("goals") or ({} if ct.protocol else
                                          {"language": bool(done.get("success"))})
            success = goals.get(ct.end_role or "language", False)
            row.update(success=bool(success), steps=done.get("steps"),
                       calls=done.get("calls"), reason=done.get("reason", ""),
                       wall_s=round(time.perf_counter() - t1, 3),
                       reset_s=round(t1 - t0, 3), status="ok")
            row.update(role_fields(ct, goals, ok=True))
            if ct.family:
                row["overlay"] = self.overlay.stats.to_dict()  # what the policy was shown
                self.save_cue_frames(ct)
            if held:
                row["held_at_start"] = held  # such a goal counts as done from the first step
        except (TimeoutError, RuntimeError) as exc:
            if isinstance(exc, (RunRefused, GraphBroken)):
                raise
            row.update(success=False, reason=f"episode failed: {exc}", status="error",
                       wall_s=round(time.perf_counter() - t0, 3))
            row.update(role_fields(ct, {}, ok=False))
        finally:
            self.send({"kind": C.CONTROL_END, "episode": ct.key})
            self.overlay.set_cue(None)
        return row

    def save_cue_frames(self, ct: vifo.LiberoCueTrial) -> None:
        """cue_frames/<suite>_<task>_<camera>.png: the first cued observation of each task
        (the first episode that shows it), raw beside cued, so a reader sees what the
        policy saw."""
        out = self.run_path / "cue_frames"
        for cam, (raw, cued) in self.overlay.snapshot.items():
            path = out / f"{ct.trial.suite}_{ct.trial.task_index}_{cam}.png"
            if path.exists():
                continue
            out.mkdir(parents=True, exist_ok=True)
            side_by_side = np.concatenate([raw, cued], axis=1)
            cv2.imwrite(str(path), cv2.cvtColor(side_by_side, cv2.COLOR_RGB2BGR))

    # ------------------------------------------------------------------ the run
    def provenance(self) -> dict:
        p = self.p
        return {"policy": str(p["policy"]), "checkpoint": checkpoint_of(str(p["policy"])),
                "hardware": "sim:libero",
                "cue": {"protocol": p["cue_protocol"] or None,
                        "family": p["cue_family"] or None, "variant": p["cue_variant"] or None},
                "base_seed": int(p["seed"]),
                "budget": {"max_steps": int(p["max_steps"]),
                           "actions_per_call": int(p["actions_per_call"])},
                "latency": None, "git_commit": git_commit()}

    def start_run(self, run_dir: RunDirectory, trials: list, skipped: dict) -> list:
        provenance = self.provenance()
        rows = run_dir.results() if self.p["resume"] else []
        differences = resume_differences(run_dir.info().get("provenance"), provenance, rows)
        if rows and differences:
            raise ValueError(f"{run_dir.path}: cannot resume, this run's settings differ from "
                             f"the run directory's: {'; '.join(differences)}; use the same "
                             "settings or another output directory")
        return run_dir.start(dict(self.p), trials, resume=bool(self.p["resume"]),
                             provenance=provenance, skipped=skipped)

    def run(self) -> int:
        catalog = load_catalog()
        trials, skipped = self.plan(catalog)
        log = self.get_logger()
        if skipped:
            log.info(f"{len(skipped)} trials skipped ({'; '.join(sorted(set(skipped.values())))})"
                     "; run.json lists them under skipped_tasks")
        if not trials:
            raise ValueError("no trial to run: " + (next(iter(skipped.values())) if skipped
                                                    else "the selection is empty"))
        run_dir = RunDirectory(self.p["output"], log=log)
        self.run_path = run_dir.path
        todo = self.start_run(run_dir, trials, skipped)
        log.info(f"{len(trials)} LIBERO trials ({len(todo)} to run) -> {run_dir.path}")
        status = "finished"
        try:
            self.wait_for_graph()
            for k, ct in enumerate(todo, 1):
                row = self.run_trial(ct, catalog)
                run_dir.append(row)
                log.info(progress_line(row, k, len(todo)))
        except RunRefused as exc:
            run_dir.finish(f"refused: {exc}", {})
            print(f"evaluator_node: {exc}", file=sys.stderr)
            return EXIT_REFUSED
        except GraphBroken as exc:
            log.error(f"run stopped: {exc}")
            status = f"stopped: {exc}"
        except KeyboardInterrupt:
            status = "stopped: interrupted"
        return self.finish(run_dir, status, trials, skipped)

    def finish(self, run_dir: RunDirectory, status: str, trials: list, skipped: dict) -> int:
        keys = {t.key for t in trials}
        rows = [r for r in run_dir.results() if r.get("key") in keys]
        status = completion_status(status, trials, rows)
        summary = summarize(rows)
        run_dir.finish(status, summary)
        cue_table = None
        if any((r.get("cue") or {}).get("protocol") for r in rows):
            cue_table = format_cue_tables(write_cue_metrics(run_dir.path, rows))
        (run_dir.path / "report.md").write_text(report_markdown(summary, self.p, cue_table,
                                                                skipped))
        run_dir.update_info(embodiment=self.embodiment.name if self.embodiment else None)
        log = self.get_logger()
        for line in format_summary(summary).splitlines():
            log.info(line)
        for line in (cue_table or "").splitlines():
            log.info(line)
        return 0 if status == "finished" else EXIT_REFUSED


def role_fields(ct: vifo.LiberoCueTrial, goals: dict, ok: bool) -> dict:
    """The row's tasks (`benchmarks.task_roles`): each role's task and whether LIBERO's
    predicates say it was completed; the cue protocol's fields under `cue`."""
    tasks = {"language": ct.language_task, "cue": ct.cue_task}
    scores = {role: {"task": task, "complete": bool(ok and goals.get(role))}
              for role, task in tasks.items() if task is not None}
    out = {"language_task": ct.language_task, "cue_task": ct.cue_task,
           "scored_task": ct.language_task or ct.cue_task, "scores": scores}
    if ct.protocol:
        out["cue"] = ct.row_fields()
    return out


def progress_line(row: dict, k: int, total: int) -> str:
    roles = ", ".join(f"{role} task {'done' if s['complete'] else 'not done'}"
                      for role, s in (row.get("scores") or {}).items())
    return (f"[{k}/{total}] {row['episode']} {row['instruction']!r}: "
            f"{'success' if row['success'] else 'failure'} after {row.get('steps')} steps "
            f"({row['wall_s']:.1f} s; {row['reason']}{'; ' + roles if roles else ''})")


def main(args=None) -> int:
    messages.enable_stack_dumps()
    rclpy.init(args=args)
    node = None
    try:
        node = LiberoEvaluatorNode()
        return node.run()
    except KeyboardInterrupt:
        return 130
    except (ValueError, FileNotFoundError, FileExistsError, RunDirError) as exc:
        print(f"evaluator_node: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    sys.exit(main())
