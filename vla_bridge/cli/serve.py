"""`vla-bridge serve --policy NAME`: any policy backend over openpi's websocket protocol."""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from vla_bridge.policy_nodes.openpi_backend import GRIPPERS, KEY_MAPS
from vla_bridge.policy_nodes.serve import PolicyServer, serve_async


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", required=True,
                        help="backend: oracle, hold, torch, lerobot, replay, openpi, or "
                             "package.module:Class; arguments as NAME?key=value&key=value "
                             "(e.g. 'torch?checkpoint=ckpt/tiny')")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000, 0 = any free)")
    parser.add_argument("--chunk-size", type=int, default=50, help="actions per reply (default 50)")
    parser.add_argument("--control-period", type=float, default=0.06,
                        help="seconds per action (default 0.06)")
    parser.add_argument("--key-map", default="aloha",
                        help=f"observation keys: {', '.join(sorted(KEY_MAPS))} or a JSON object")
    parser.add_argument("--gripper", default=None, choices=GRIPPERS,
                        help="gripper convention on the wire (default: aloha for the aloha key map)")
    parser.add_argument("--follow", default="language", help="oracle only: language or cue")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="[serve] %(message)s")
    try:
        server = PolicyServer(args.policy, args.chunk_size, args.control_period, args.key_map,
                              args.gripper, args.follow)
    except Exception as exc:  # noqa: BLE001 - a bad spec is a usage error
        print(f"vla-bridge serve: cannot create policy {args.policy!r}: {exc}", file=sys.stderr)
        return 2

    def ready(port: int) -> None:
        print(f"vla-bridge serve: policy {args.policy!r} on ws://{args.host}:{port} "
              f"(health: http://{args.host}:{port}/healthz)", flush=True)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve_async(server, args.host, args.port, ready, stop)

    try:
        asyncio.run(main())
    except OSError as exc:
        print(f"vla-bridge serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    finally:
        getattr(server.policy, "close", lambda: None)()
    return 0
