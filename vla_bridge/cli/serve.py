"""`vla-bridge serve --policy NAME`: any policy backend over openpi's websocket protocol."""
from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import signal
import sys

from vla_bridge.policy_nodes.openpi.wire import GRIPPERS, KEY_MAPS
from vla_bridge.policy_nodes.openpi.serve import DEFAULT_MAX_FRAME_BYTES, PolicyServer, serve_async

API_KEY_ENV = "VLA_BRIDGE_API_KEY"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", required=True,
                        help="backend: oracle, hold, torch, lerobot, replay, openpi, or "
                             "package.module:Class; arguments as NAME?key=value&key=value "
                             "(e.g. 'torch?checkpoint=ckpt/tiny')")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; "
                             "0.0.0.0 opens it to the network, then set an API key)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000, 0 = any free)")
    parser.add_argument("--chunk-size", type=int, default=50, help="actions per reply (default 50)")
    parser.add_argument("--control-period", type=float, default=0.06,
                        help="seconds per action (default 0.06)")
    parser.add_argument("--key-map", default="aloha",
                        help=f"observation keys: {', '.join(sorted(KEY_MAPS))} or a JSON object")
    parser.add_argument("--gripper", default=None, choices=GRIPPERS,
                        help="gripper convention on the wire "
                             "(default: aloha for the aloha key map)")
    parser.add_argument("--follow", default="language", help="oracle only: language or cue")
    parser.add_argument("--api-key", default=os.environ.get(API_KEY_ENV) or None,
                        help=f"require clients to send 'Authorization: Api-Key KEY' (openpi "
                             f"clients' api_key); default: ${API_KEY_ENV}, which keeps the key "
                             f"out of `ps`")
    parser.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME_BYTES,
                        help=f"largest request frame accepted, bigger ones close the connection "
                             f"(default {DEFAULT_MAX_FRAME_BYTES}, 0 = no limit)")
    parser.add_argument("--debug", action="store_true",
                        help="send error tracebacks to clients (default: only the error message; "
                             "the server always logs the traceback)")


def check_arguments(args: argparse.Namespace) -> str | None:
    """The first usage error of ``args``, or None."""
    if not 0 <= args.port <= 65535:
        return f"--port must be 0..65535, got {args.port}"
    if args.max_frame_bytes < 0:
        return f"--max-frame-bytes must be >= 0, got {args.max_frame_bytes}"
    return None


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="[serve] %(message)s")
    error = check_arguments(args)
    if error:
        print(f"vla-bridge serve: {error}", file=sys.stderr)
        return 2
    if not args.api_key and not _is_loopback(args.host):
        logging.warning("listening on %s without an API key: anyone who reaches the port can "
                        "drive the policy (set $%s)", args.host, API_KEY_ENV)
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
        await serve_async(server, args.host, args.port, ready, stop, api_key=args.api_key,
                          max_frame_bytes=args.max_frame_bytes or None, debug=args.debug)

    try:
        asyncio.run(main())
    except OSError as exc:
        print(f"vla-bridge serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    finally:
        server.close()  # every policy instance the connections used
    return 0
