"""The campaign driver: plan, start Ray (locally on demand, or join ``--ray-address``), keep
every worker busy with units, retry what a dead worker or graph left unfinished, merge rows,
show one progress bar, and close the run directory as a single graph would.

Failure rules:
* a unit whose worker died (actor or node killed) or whose graph exited before producing
  all its trials is queued again, preferably for another worker, at most ``max_retries``
  more times; its finished trials are kept (merged, and seeded into its directory so the
  retry's graph skips them) and every attempt's outcome is in campaign.json;
* a dead worker is replaced (same index and ROS domain: its graph died with it), at most
  ``max_retries`` times per worker index;
* Ctrl-C stops the workers (their graphs get SIGTERM); results.jsonl keeps every finished
  trial and a rerun of the same command resumes.
"""
from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Callable

from vla_bridge.campaign import plan as P
from vla_bridge.campaign.ledger import UNITS_DIR, Ledger
from vla_bridge.evaluation.progress import Progress
from vla_bridge.evaluation.run_dir import (RunDirectory, completion_status, format_latency,
                                           format_table, latency_summary, trial_key)

POLL_S = 1.0  # how often running units' rows are merged (progress bar)
START_TIMEOUT_S = 180.0  # no worker could start (e.g. the cluster lacks the resources)


class CampaignError(RuntimeError):
    """Bad arguments or a campaign that cannot start: one line for the user."""


@dataclass
class CampaignOptions:
    workers: int = 2
    ray_address: str | None = None
    unit_trials: int | None = None  # None: unit_size()
    max_retries: int = 2
    unit_timeout_s: float | None = None
    domain_base: int = 100  # worker i's graphs use ROS domain domain_base + i
    worker_cpus: float = 1.0
    policy_servers: int = 0  # >0: run the policy as `vla-bridge serve` actors, shared
    server_gpus: float = 0.0
    server_host: str = "127.0.0.1"
    extra_resources: dict = field(default_factory=dict)  # per graph worker, e.g. {"node_a": 1}

    def check(self) -> None:
        if self.workers < 1:
            raise CampaignError(f"--workers must be >= 1, got {self.workers}")
        if self.max_retries < 0:
            raise CampaignError(f"--max-retries must be >= 0, got {self.max_retries}")
        if self.unit_trials is not None and self.unit_trials < 1:
            raise CampaignError(f"--unit-trials must be >= 1, got {self.unit_trials}")
        if not 0 <= self.domain_base or self.domain_base + self.workers > 232:
            raise CampaignError(f"ROS domains {self.domain_base}..{self.domain_base + self.workers - 1}"
                                " are outside 0..232 (Fast DDS); lower --domain-base")
        if self.policy_servers < 0 or self.server_gpus < 0:
            raise CampaignError("--policy-servers and --server-gpus must be >= 0")


# ============================================================================ arguments
def graph_plan(graph: str) -> P.GraphPlan:
    """The plan of a graph in P.GRAPHS (LIBERO's loads only when asked for)."""
    if graph == "libero_sim":
        from vla_bridge.campaign.libero_plan import LIBERO
        return LIBERO
    return P.ROBOFOLLOW


def parse_graph(graph: str, tokens: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """(given, resolved) launch values of the graph a campaign shards."""
    from vla_bridge.ros.launch_args import get_graph
    from vla_bridge.ros.launcher import parse_command_line, resolved_values
    if graph not in P.GRAPHS:
        raise CampaignError(f"a campaign shards {', '.join(P.GRAPHS)}, not {graph!r}")
    spec = get_graph(graph)
    try:
        given, flags = parse_command_line(spec, tokens)
    except ValueError as exc:
        raise CampaignError(str(exc)) from None
    if flags["dry_run"] or flags["params_file"] or flags["timeout"]:
        raise CampaignError("--dry-run, --params-file and --timeout are launch options, not "
                            "campaign ones (see --unit-timeout)")
    return given, resolved_values(spec, given)


def resume_differences(old: dict, new: dict, selection=P.SELECTION_ARGS) -> list[str]:
    """Launch arguments (other than which trials run) that differ from the run directory's."""
    skip = set(selection) | {"output", "resume"}
    names = sorted((set(old) | set(new)) - skip)
    return [f"{n}: {old.get(n)!r} -> {new.get(n)!r}" for n in names if old.get(n) != new.get(n)]


def evaluator_arguments(values: dict[str, str], graph: str = P.GRAPHS[0]) -> dict:
    """The evaluator's parameters as one graph's run.json records them (the report reads
    them: policy, levels, empty_language...), from the campaign's launch values."""
    from vla_bridge.ros.launch_args import get_graph
    from vla_bridge.ros.launcher import parse_value
    out = {}
    for arg in get_graph(graph).args:
        for target in arg.sets:
            node, _, param = target.partition(".")
            if node == "evaluator_node":
                out[param] = parse_value(arg, values[arg.name])
    return out


def open_run_dir(values: dict[str, str], given: dict[str, str], trials, options,
                 echo, graph: str = P.GRAPHS[0]) -> RunDirectory:
    run_dir = RunDirectory(values["output"])
    resume = values["resume"].lower() in ("1", "true", "yes", "on")
    old = run_dir.info().get("arguments", {}).get("launch")
    if resume and run_dir.results() and old is not None:
        differences = resume_differences(old, given, graph_plan(graph).selection_args)
        if differences:
            raise CampaignError(f"{run_dir.path}: cannot resume, the campaign's launch arguments "
                                f"differ: {'; '.join(differences)}; use the same arguments or "
                                "another output directory")
    arguments = {**evaluator_arguments(values, graph), "launch": given, "graph": graph,
                 "campaign": {k: v for k, v in asdict(options).items()}}
    try:
        run_dir.start(arguments, trials, resume=resume)
    except FileExistsError as exc:
        raise CampaignError(str(exc)) from None
    return run_dir


# ============================================================================ Ray
def start_ray(options: CampaignOptions, echo) -> None:
    import ray
    if ray.is_initialized():
        return
    quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR",
             "configure_logging": True}
    if options.ray_address:
        echo(f"campaign: joining the Ray cluster at {options.ray_address}")
        try:
            ray.init(address=options.ray_address, **quiet)
        except (ConnectionError, RuntimeError) as exc:
            raise CampaignError(
                f"cannot join the Ray cluster at {options.ray_address}: {_first_line(exc)} "
                "(a cluster started with `ray start` uses token authentication: export "
                "RAY_AUTH_MODE=token here so ~/.ray/auth_token is sent)") from None
    else:
        cpus = options.workers * options.worker_cpus + options.policy_servers
        echo(f"campaign: starting a local Ray instance ({cpus:g} CPUs for {options.workers} "
             f"workers)")
        ray.init(num_cpus=cpus, num_gpus=options.policy_servers * options.server_gpus or None,
                 **quiet)


class Workers:
    """The graph worker actors by index: creation, readiness, replacement."""

    def __init__(self, options: CampaignOptions, ledger: Ledger, echo):
        import ray

        from vla_bridge.campaign.workers import GraphWorker
        self.ray, self.options, self.ledger, self.echo = ray, options, ledger, echo
        self.remote = ray.remote(num_cpus=options.worker_cpus, max_restarts=0,
                                 resources=options.extra_resources or None)(GraphWorker)
        self.actors: dict[int, object] = {}
        self.starting: dict[object, int] = {}  # describe() ref -> index
        self.info: dict[int, dict] = {}
        self.replaced: dict[int, int] = {}
        for index in range(options.workers):
            self.start(index)

    def start(self, index: int) -> None:
        actor = self.remote.remote(index, self.options.domain_base + index,
                                   str(self.ledger.log_path(index)))
        self.actors[index] = actor
        self.starting[actor.describe.remote()] = index

    def replace(self, index: int, reason: str) -> bool:
        """A new actor for a dead one; False when this index has used its replacements."""
        self.ray.kill(self.actors.pop(index), no_restart=True)
        count = self.replaced.get(index, 0)
        if count >= self.options.max_retries:
            self.echo(f"campaign: worker {index} died ({reason}); not replaced again "
                      f"(--max-retries {self.options.max_retries})")
            return False
        self.replaced[index] = count + 1
        self.echo(f"campaign: worker {index} died ({reason}); starting a replacement")
        self.start(index)
        return True

    def ready(self, ref) -> int | None:
        """The index of a worker whose describe() finished (None if it failed to start)."""
        index = self.starting.pop(ref)
        try:
            self.info[index] = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            self.echo(f"campaign: worker {index} failed to start: {_first_line(exc)}")
            self.actors.pop(index, None)
            return None
        self.ledger.note_worker(index, self.info[index])
        return index

    def stop(self) -> None:
        for actor in self.actors.values():
            self.ray.kill(actor, no_restart=True)
        self.actors.clear()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:160] if text else type(exc).__name__


def start_policy_servers(given: dict[str, str], options: CampaignOptions, ledger: Ledger,
                         echo) -> tuple[list, list[str]]:
    """`vla-bridge serve` actors for the graph's policy; (actors, the openpi policy spec each
    worker uses, round robin)."""
    import ray

    from vla_bridge.campaign.workers import PolicyServerActor
    policy = given.get("policy", "oracle")
    remote = ray.remote(num_cpus=1, num_gpus=options.server_gpus, max_restarts=0)(PolicyServerActor)
    actors = [remote.remote(policy, options.server_host,
                            str(ledger.log_path(f"policy-server-{i}")))
              for i in range(options.policy_servers)]
    specs = []
    for i, actor in enumerate(actors):
        try:
            host, port = ray.get(actor.address.remote())
        except ray.exceptions.RayError as exc:
            raise CampaignError(f"policy server {i} did not start: {_first_line(exc)}") from None
        specs.append(f"openpi?host={host}&port={port}")
        echo(f"campaign: policy server {i} ({policy}, {options.server_gpus:g} GPU) on {host}:{port}")
    return actors, specs


# ============================================================================ the loop
@dataclass
class _Running:
    unit: P.Unit
    worker: int
    started: float


class Scheduler:
    def __init__(self, graph: str, given: dict, units: list[P.Unit], ledger: Ledger,
                 workers: Workers, options: CampaignOptions, bar: Progress, echo,
                 server_specs: list[str]):
        self.graph, self.given, self.ledger, self.workers = graph, given, ledger, workers
        self.options, self.bar, self.echo = options, bar, echo
        self.queue: deque[P.Unit] = deque(units)
        self.attempts: dict[str, int] = {}
        self.last_worker: dict[str, int] = {}
        self.running: dict[object, _Running] = {}
        self.idle: list[int] = []
        self.failed: dict[str, str] = {}
        self.server_specs = server_specs
        self.unit_wall_s = 0.0

    def tokens(self, unit: P.Unit, worker: int) -> list[str]:
        given = dict(self.given)
        if self.server_specs:
            given["policy"] = self.server_specs[worker % len(self.server_specs)]
        return graph_plan(self.graph).unit_tokens(given, unit, str(self.ledger.unit_dir(unit)))

    def dispatch(self) -> None:
        while self.queue and self.idle:
            unit = self.queue.popleft()
            # a retried unit goes to another worker when one is free
            others = [w for w in self.idle if w != self.last_worker.get(unit.name)]
            worker = (others or self.idle)[0]
            self.idle.remove(worker)
            self.ledger.seed_unit(unit)
            ref = self.workers.actors[worker].run_unit.remote(
                unit.name, self.graph, self.tokens(unit, worker), self.options.unit_timeout_s)
            self.running[ref] = _Running(unit, worker, time.monotonic())

    def merge_running(self) -> None:
        added = sum(self.ledger.merge_dir(self.ledger.unit_dir(r.unit))
                    for r in self.running.values())
        if added:
            self.bar.update(added)

    def finished(self, ref) -> None:
        run = self.running.pop(ref)
        unit, worker = run.unit, run.worker
        wall = time.monotonic() - run.started
        self.unit_wall_s += wall
        ray = self.workers.ray
        node = self.workers.info.get(worker, {}).get("node")
        try:
            result = ray.get(ref)
        except ray.exceptions.RayError as exc:
            outcome = f"worker died: {_first_line(exc)}"
            self.workers.replace(worker, _first_line(exc))  # idle once it has started
        else:
            node = result.get("node") or node
            code = result["returncode"]
            outcome = "ok" if code == 0 else f"graph exited with {code}"
            self.idle.append(worker)
        added = self.ledger.merge_dir(self.ledger.unit_dir(unit))
        if added:
            self.bar.update(added)
        missing = self.ledger.missing(unit)
        if outcome == "ok" and missing:
            outcome = f"graph ended with {len(missing)} trials missing"
        self.ledger.record_attempt(unit, worker, outcome, wall, node)
        if not missing:
            return
        tries = self.attempts[unit.name] = self.attempts.get(unit.name, 0) + 1
        self.last_worker[unit.name] = worker
        if tries > self.options.max_retries:
            self.failed[unit.name] = outcome
            self.echo(f"campaign: unit {unit.name} gave up after {tries} attempts: {outcome}; "
                      f"{len(missing)} trials not run")
            return
        self.echo(f"campaign: unit {unit.name} ({', '.join(unit.task_ids[:3])}"
                  f"{', ...' if len(unit.task_ids) > 3 else ''}): {outcome}; "
                  f"{len(missing)} trials queued again (retry {tries}/{self.options.max_retries})")
        self.queue.appendleft(unit)

    def run(self) -> None:
        ray = self.workers.ray
        stalled_since = None
        while self.queue or self.running:
            self.dispatch()
            waiting = list(self.running) + list(self.workers.starting)
            if not waiting:
                raise CampaignError("no graph worker is left to run the remaining units "
                                    f"({len(self.queue)}); see campaign.json and the worker logs")
            ready, _ = ray.wait(waiting, num_returns=1, timeout=POLL_S)
            for ref in ready:
                if ref in self.workers.starting:
                    index = self.workers.ready(ref)
                    if index is not None:
                        self.idle.append(index)
                else:
                    self.finished(ref)
            self.merge_running()
            if self.running or self.idle:
                stalled_since = None
            elif stalled_since is None:
                stalled_since = time.monotonic()
            elif time.monotonic() - stalled_since > START_TIMEOUT_S:
                raise CampaignError(f"no graph worker started within {START_TIMEOUT_S:.0f} s "
                                    "(does the cluster have the CPUs/resources asked for?)")


# ============================================================================ entry
def run_campaign(graph: str, tokens: list[str], options: CampaignOptions,
                 echo: Callable[[str], None] = print) -> int:
    """Exit code: 0 every planned trial has its row; 3 some are missing (see campaign.json)."""
    options.check()
    given, values = parse_graph(graph, tokens)
    if graph == "libero_sim" and options.policy_servers:
        raise CampaignError("--policy-servers serves RoboFollow's keys; for libero_sim run the "
                            "server yourself (`vla-bridge serve --key-map libero`) and pass "
                            "--policy 'openpi?host=...&port=...&key_map=libero'")
    plan = graph_plan(graph)
    try:
        trials = plan.planned_trials(values)
    except ValueError as exc:
        raise CampaignError(str(exc)) from None
    run_dir = open_run_dir(values, given, trials, options, echo, graph)
    ledger = Ledger(run_dir, [trial_key(t) for t in trials], policy=values["policy"])
    recovered = ledger.merge_all()
    todo = [t for t in trials if trial_key(t) not in ledger.done]
    session = len(ledger.state["sessions"]) + 1
    size, units = plan.cut(todo, values, options.workers, options.unit_trials, f"s{session}u")
    ledger.begin_session({"workers": options.workers, "ray_address": options.ray_address,
                          "unit_trials": size})
    echo(f"campaign: {len(trials)} trials, {len(trials) - len(todo)} already done"
         f"{f' ({recovered} recovered from unit directories)' if recovered else ''}; "
         f"{len(units)} units of <= {size} trials over {options.workers} workers -> {run_dir.path}")
    t0 = time.monotonic()
    status, scheduler, servers = "finished", None, []
    if units:
        start_ray(options, echo)
        workers = Workers(options, ledger, echo)
        try:
            specs = []
            if options.policy_servers:
                servers, specs = start_policy_servers(given, options, ledger, echo)
            with Progress(len(todo), "campaign trials") as bar:
                scheduler = Scheduler(graph, given, units, ledger, workers, options, bar, echo, specs)
                scheduler.run()
        except KeyboardInterrupt:
            status = "stopped: interrupted (rerun the same command to resume)"
            echo(f"campaign: {status}")
        except CampaignError as exc:
            status = f"stopped: {exc}"
            echo(f"campaign: {status}")
        finally:
            workers.stop()
            for server in servers:
                workers.ray.kill(server, no_restart=True)
            ledger.merge_all()
    return finish(run_dir, ledger, trials, status, scheduler, time.monotonic() - t0, len(todo),
                  options, echo, graph, values)


def summaries(graph: str, values: dict, run_dir: RunDirectory,
              rows: list[dict]) -> tuple[dict, dict | None, list[str]]:
    """(summary.json, latency.json, the printed tables) as the graph's own evaluator writes
    them (LIBERO's: report.md too, no latency.json)."""
    if graph == "libero_sim":
        from vla_bridge.campaign.libero_plan import benchmark
        bench = benchmark(evaluator_arguments(values, graph))
        bench.plan()
        summary = bench.summarize(rows)
        return summary, None, bench.report(run_dir, rows, summary, {})
    from vla_bridge.benchmarks.robofollow.scoring import summarize
    summary, latency = summarize(rows), latency_summary(rows)
    return summary, latency, [format_table(summary)] + ([format_latency(latency)] if latency
                                                        else [])


def finish(run_dir: RunDirectory, ledger: Ledger, trials, status: str, scheduler, wall_s: float,
           todo: int, options: CampaignOptions, echo, graph: str = P.GRAPHS[0],
           values: dict | None = None) -> int:
    from vla_bridge.benchmarks.result_rows import counted
    rows = run_dir.results()
    status = completion_status(status, trials, rows)
    rows = counted(rows)  # an infrastructure failure not counted is no result
    copy_provenance(run_dir, ledger)
    summary, latency, tables = summaries(graph, values or {}, run_dir, rows)
    run_dir.finish(status, summary, latency)
    ran = sum(1 for r in rows if r.get("key") in ledger.planned) - (len(trials) - todo)
    figures = campaign_figures(rows, ledger, scheduler, wall_s, ran, options)
    ledger.end_session(status=status, **figures)
    for table in tables:
        echo(table)
    if figures.get("trials_per_min"):
        echo(f"campaign: {ran} trials in {wall_s:.0f} s ({figures['trials_per_min']:.1f} trials/min "
             f"with {options.workers} workers; {figures['overhead_s_per_trial']:.2f} s per trial "
             f"outside episodes: graph start-up, scheduling, merging)")
    if scheduler is not None and scheduler.failed:
        echo(f"campaign: {len(scheduler.failed)} units gave up: "
             + "; ".join(f"{u}: {why}" for u, why in list(scheduler.failed.items())[:3]))
    echo(f"results: {run_dir.path} ({status})")
    return 0 if status == "finished" else 3


def campaign_figures(rows, ledger: Ledger, scheduler, wall_s: float, ran: int,
                     options: CampaignOptions) -> dict:
    """Trials per minute of this session and the time per trial spent outside episodes
    (worker-seconds of units minus the episodes' own wall time, per trial)."""
    if scheduler is None or ran <= 0 or wall_s <= 0:
        return {"wall_s": round(wall_s, 1), "trials_run": max(ran, 0)}
    episode_s = sum(r.get("wall_s", 0.0) for r in rows[-ran:])
    return {"wall_s": round(wall_s, 1), "trials_run": ran,
            "trials_per_min": round(60.0 * ran / wall_s, 2),
            "overhead_s_per_trial": round(max(0.0, scheduler.unit_wall_s - episode_s) / ran, 3)}


def copy_provenance(run_dir: RunDirectory, ledger: Ledger) -> None:
    """The policy/settings provenance the units' evaluators recorded, into the main run.json
    (the same for every unit: they ran one set of launch arguments)."""
    if run_dir.info().get("provenance"):
        return
    for unit_run in sorted((ledger.root / UNITS_DIR).glob("*/run.json")):
        try:
            provenance = json.loads(unit_run.read_text()).get("provenance")
        except (OSError, json.JSONDecodeError):
            continue
        if provenance:
            if ledger.policy and provenance.get("policy") != ledger.policy:  # served units
                provenance["policy_server"], provenance["policy"] = (provenance.get("policy"),
                                                                     ledger.policy)
            run_dir.update_info(provenance=provenance)
            return
