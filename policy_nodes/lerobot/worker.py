"""A policy backend run in another interpreter: the current LeRobot's virtualenv.

LeRobot >= 0.5 needs Python >= 3.12 and torch < 2.12, so it cannot live in ``.venv`` (Python
3.11, torch 2.13, LeRobot 0.4.4); ``bash scripts/setup.sh lerobot`` builds ``.venv-lerobot``
(LeRobot 0.6.1, this package, the ROS wheels). Two ways to use it:

* the whole policy node there: ``--policy_python .venv-lerobot/bin/python``;
* automatically, from any interpreter: a backend that cannot run here (``lerobot`` with a
  checkpoint this interpreter's LeRobot cannot read; ``lerobot_async``, whose gRPC client and
  LeRobot's stubs live there) builds a :class:`WorkerPolicy`, which starts
  ``python -m vla_bridge.policy_nodes.lerobot.worker`` in ``.venv-lerobot``, builds the backend
  there and forwards ``reset`` / ``set_instruction`` / ``predict`` over a socket pair (pickled
  frames: the observation in, the ``[H, D]`` chunk or the error out). The worker's output goes
  to the node's stderr; it exits when the node closes its end (or dies).

An error raised in the worker is raised here with its type (ValueError, FileNotFoundError,
ImportError, RuntimeError; others as RuntimeError) and message; a worker that died is one
RuntimeError with its exit status.
"""
from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import weakref
from multiprocessing.connection import Connection
from pathlib import Path

from vla_bridge.policy_nodes.backend import PolicyBackend

REPO = Path(__file__).resolve().parents[2]
#: set in the worker's environment: a backend there never starts another worker
IN_WORKER = "VLA_BRIDGE_LEROBOT_WORKER"
ERRORS = {e.__name__: e for e in (ValueError, FileNotFoundError, ImportError, RuntimeError,
                                  TypeError, KeyError)}
SETUP_HINT = "`bash scripts/setup.sh lerobot` builds it (LeRobot 0.6.1 on Python 3.12)"


def venv_python() -> Path:
    """The interpreter of ``.venv-lerobot`` (``VLA_BRIDGE_LEROBOT_VENV`` names another venv)."""
    root = Path(os.environ.get("VLA_BRIDGE_LEROBOT_VENV") or REPO / ".venv-lerobot")
    return root / "bin" / "python"


def in_worker() -> bool:
    return os.environ.get(IN_WORKER) == "1"


def is_this_interpreter(python: Path) -> bool:
    return Path(sys.prefix).resolve() == python.parent.parent.resolve()


class WorkerPolicy(PolicyBackend):
    """``target`` ("module:Class") built with ``kwargs`` in the interpreter ``python``
    (default: .venv-lerobot's); ``why`` says, in errors, why it runs there."""

    def __init__(self, target: str, kwargs: dict, why: str, python: str | Path | None = None):
        python = Path(python or venv_python())
        if not python.exists():
            raise RuntimeError(f"{why}, which needs the LeRobot virtualenv {python.parent.parent} "
                               f"(not built: {SETUP_HINT})")
        self.python, self.why, self.target = python, why, target
        ours, theirs = socket.socketpair()
        env = dict(os.environ, **{IN_WORKER: "1"})
        env.pop("PYTHONHOME", None)
        self.proc = subprocess.Popen(
            [str(python), "-m", "vla_bridge.policy_nodes.lerobot.worker", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=_stderr_fd(),
            env=env)
        theirs.close()
        self.conn = Connection(ours.detach())
        self._finalizer = weakref.finalize(self, _stop, self.proc, self.conn)
        self.info = self._call("init", target, kwargs)
        self.needs_world_state = bool(self.info.get("needs_world_state", False))

    def _call(self, op: str, *args):
        try:
            self.conn.send_bytes(pickle.dumps((op, args), protocol=4))
            kind, value = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError) as exc:
            code = self.proc.wait(timeout=10) if self.proc.poll() is None else self.proc.returncode
            raise RuntimeError(f"the LeRobot worker ({self.python}, for {self.target}) exited "
                               f"(status {code}) during {op}; its output is above") from exc
        if kind == "error":
            name, message = value
            raise ERRORS.get(name, RuntimeError)(message)
        return value

    def reset(self) -> None:
        self._call("reset")

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        self._call("set_instruction", instruction, task)

    def predict(self, observation):
        return self._call("predict", observation)

    def close(self) -> None:
        self._finalizer()


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stderr: inherit ours
        return None


def _stop(proc: subprocess.Popen, conn: Connection) -> None:
    try:
        conn.close()  # the worker's recv ends: it exits
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def serve(fd: int) -> None:
    """The worker's loop: build the backend, answer calls until the other end closes."""
    from importlib import import_module
    conn = Connection(fd)
    backend = None
    while True:
        try:
            op, args = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            if op == "init":
                target, kwargs = args
                module, cls = target.split(":", 1)
                backend = getattr(import_module(module), cls)(**kwargs)
                result = {"needs_world_state": getattr(backend, "needs_world_state", False)}
            elif op == "close":
                getattr(backend, "close", lambda: None)()
                result = None
            else:
                result = getattr(backend, op)(*args)
            reply = ("ok", result)
        except Exception as exc:  # noqa: BLE001 - every error goes back to the caller
            reply = ("error", (type(exc).__name__, str(exc)))
        conn.send_bytes(pickle.dumps(reply, protocol=4))


if __name__ == "__main__":
    os.environ[IN_WORKER] = "1"
    sys.stdout = sys.stderr  # prints reach the node's log, never the socket
    serve(int(sys.argv[1]))
