"""`vla-bridge campaign [GRAPH] --workers N [--ray-address ADDR] [graph arguments]`: one run's
trials sharded over Ray workers, each running its own node graph (vla_bridge.campaign)."""
from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vla_bridge.campaign.plan import GRAPHS
    parser.add_argument("graph", choices=GRAPHS, help="graph whose trials are sharded")
    add_options(parser)
    parser.add_argument("graph_args", nargs=argparse.REMAINDER,
                        help="the graph's launch arguments (--name value or name:=value), as "
                             "for `vla-bridge launch`; output and resume work as there. The "
                             "campaign options above may come before or after GRAPH")


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=2,
                        help="graph workers (Ray actors), each running one unit at a time")
    parser.add_argument("--ray-address", default=None,
                        help="join this Ray cluster (e.g. 10.0.0.5:6379 or auto); default: "
                             "start a local Ray instance for this campaign")
    parser.add_argument("--unit-trials", type=int, default=None,
                        help="trials per unit (whole tasks; LIBERO: whole (suite, task) pairs, "
                             "a bigger task split into initial-state ranges; default: about 4 "
                             "units per worker, at most 50 trials)")
    parser.add_argument("--max-retries", type=int, default=2,
                        help="times a unit whose worker or graph died is run again (and a dead "
                             "worker replaced)")
    parser.add_argument("--unit-timeout", type=float, default=None,
                        help="seconds before a unit's graph is stopped and the unit retried")
    parser.add_argument("--domain-base", type=int, default=100,
                        help="worker i's graphs use ROS domain DOMAIN_BASE + i (default 100)")
    parser.add_argument("--worker-cpus", type=float, default=1.0,
                        help="Ray CPUs each graph worker reserves (default 1)")
    parser.add_argument("--worker-resources", type=json.loads, default=None,
                        help='extra Ray resources per graph worker, as JSON, e.g. \'{"sim": 1}\'')
    parser.add_argument("--policy-servers", type=int, default=0,
                        help="serve --policy from N `vla-bridge serve` actors that the workers "
                             "share over the openpi protocol (for GPU policies); 0: each graph "
                             "runs its own policy node backend")
    parser.add_argument("--server-gpus", type=float, default=0.0,
                        help="GPUs each policy server actor reserves (Ray num_gpus)")
    parser.add_argument("--server-host", default="127.0.0.1",
                        help="address the policy servers listen on (127.0.0.1: one machine; on a "
                             "cluster, an address the workers reach, with $VLA_BRIDGE_API_KEY)")


def split_options(args: argparse.Namespace) -> tuple[argparse.Namespace, list[str]]:
    """Campaign options given after GRAPH (argparse hands them over with the graph's own
    arguments) parsed out of the graph arguments; those override the ones before GRAPH."""
    parser = argparse.ArgumentParser(prog="vla-bridge campaign", allow_abbrev=False,
                                     add_help=False)
    add_options(parser)
    parser.set_defaults(**{k: v for k, v in vars(args).items()
                           if k not in ("command", "graph", "graph_args")})
    return parser.parse_known_args(args.graph_args)


def run(args: argparse.Namespace) -> int:
    from vla_bridge.campaign.driver import CampaignError, CampaignOptions, run_campaign
    from vla_bridge.evaluation.run_dir import RunDirError
    graph = args.graph
    try:
        args, graph_args = split_options(args)
    except SystemExit:  # argparse printed the bad option already
        return 2
    options = CampaignOptions(
        workers=args.workers, ray_address=args.ray_address, unit_trials=args.unit_trials,
        max_retries=args.max_retries, unit_timeout_s=args.unit_timeout,
        domain_base=args.domain_base, worker_cpus=args.worker_cpus,
        policy_servers=args.policy_servers, server_gpus=args.server_gpus,
        server_host=args.server_host, extra_resources=args.worker_resources or {})
    try:
        return run_campaign(graph, graph_args, options,
                            echo=lambda line: print(line, flush=True))
    except (CampaignError, RunDirError) as exc:
        print(f"vla-bridge campaign: error: {exc}", file=sys.stderr)
        return 2
