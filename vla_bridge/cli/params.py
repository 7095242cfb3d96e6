"""`vla-bridge params [NODE ...] [--graph GRAPH]`: a node's parameters, from its config dataclass.

Each node declares its parameters from one frozen dataclass (``vla_bridge.ros.node_config``):
name, type, default and one line of help. Without NODE this lists every graph's nodes and their
config classes; with NODE, one line per parameter (``name (type, default X): help``), and with
``--graph`` also the value the graph's params file gives it when that is not the default (the
file's value is what runs; a launch argument overrides it in turn, see `vla-bridge launch GRAPH
--help`).
"""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vla_bridge.ros.launch_args import GRAPHS

    parser.add_argument("nodes", nargs="*", metavar="NODE",
                        help="node names, e.g. policy_node evaluator_node (none: list the nodes)")
    parser.add_argument("--graph", choices=sorted(GRAPHS), default=None,
                        help="only this graph's nodes, with its params file's values "
                             "(default: every graph)")


def _config(node, share_dir):
    """(config class, params-file values) of a graph node; (None, why) when it has none yet."""
    from vla_bridge.ros import node_config as NC

    values = NC.file_params(share_dir / node.params_file, node.spec.name)
    try:
        return NC.config_of(node.spec.module, values), values
    except (ImportError, AttributeError, KeyError) as exc:
        return None, f"no config dataclass yet ({type(exc).__name__}: {exc})"


def _sections(graph_names, share_dir) -> dict:
    """(node name, module, config class or reason) -> {"graphs": [...], "values": {...}}."""
    from vla_bridge.ros import node_config as NC
    from vla_bridge.ros.launch_args import GRAPHS

    sections: dict = {}
    for name in graph_names:
        for node in NC.graph_nodes(GRAPHS[name]):
            config, values = _config(node, share_dir)
            key = (node.spec.name, node.spec.module, config if config else values)
            entry = sections.setdefault(key, {"graphs": [], "values": {}, "files": []})
            label = node.graph + (f" (hardware {node.role})" if node.role else "")
            if label not in entry["graphs"]:
                entry["graphs"].append(label)
            if config and node.params_file not in entry["files"]:
                entry["files"].append(node.params_file)
                entry["values"][node.params_file] = {**values, **node.fixed}
    order = list(dict.fromkeys(name for name, _, _ in sections))  # a node's sections together
    return dict(sorted(sections.items(), key=lambda item: order.index(item[0][0])))


def _describe(key, entry, with_values: bool) -> list[str]:
    from vla_bridge.ros import node_config as NC

    name, module, config = key
    graphs = ", ".join(entry["graphs"])
    if not isinstance(config, type):
        return [f"{name} ({module}; {graphs}): {config}; its parameters are in its code"]
    title = " + ".join(c.__name__ for c in NC.parts(config))
    lines = [f"{name} ({title}; {graphs}):"]
    for info in NC.describe(config):
        line = f"  {info.line()}"
        if with_values:
            for params_file, values in entry["values"].items():
                if info.name in values and values[info.name] != info.default:
                    line += f" [{params_file}: {values[info.name]!r}]"
        lines.append(line)
    return lines


def run(args: argparse.Namespace) -> int:
    from vla_bridge.ros import node_config as NC
    from vla_bridge.ros.launch_args import GRAPHS
    from vla_bridge.ros.launcher import find_share_dir

    sections = _sections([args.graph] if args.graph else list(GRAPHS), find_share_dir())
    known = sorted({name for name, _, _ in sections})
    unknown = [n for n in args.nodes if n not in known]
    if unknown:
        where = f"graph {args.graph!r}" if args.graph else "any graph"
        sys.stderr.write(f"vla-bridge params: no node {', '.join(map(repr, unknown))} in "
                         f"{where}; nodes: {', '.join(known)}\n")
        return 2
    if not args.nodes:
        for (name, _, config), entry in sections.items():
            what = (" + ".join(c.__name__ for c in NC.parts(config)) if isinstance(config, type)
                    else "no config dataclass yet")
            print(f"{name}: {what} ({', '.join(entry['graphs'])})")
        print("`vla-bridge params NODE [--graph GRAPH]`: its parameters")
        return 0
    for node in args.nodes:
        for key, entry in sections.items():
            if key[0] == node:
                print("\n".join(_describe(key, entry, with_values=args.graph is not None)))
    return 0
