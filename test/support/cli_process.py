"""`python -m vla_bridge.cli ARGS` as a process of its own, without paying the interpreter's
and the command line's start-up (about 0.5 s: every sub-command's argument module) each time.

``run_cli(*args)`` answers like ``subprocess.run([sys.executable, "-m", "vla_bridge.cli",
*args], capture_output=True, text=True)``; ``spawn_cli(*args)`` starts one like
``subprocess.Popen(..., stdout=PIPE, stderr=STDOUT, text=True)`` and gives a handle with the
Popen calls the tests use (``stdout``, ``pid``, ``poll``, ``wait``, ``terminate``, ``kill``,
``returncode``).

One warm process (this file run as a script, started on first use) imports ``vla_bridge.cli``
and builds its parser once, then forks a child per command. The child is a fresh process from
there on: the caller's environment (PYTHONPATH too: its folders come first on sys.path, as at
a start), its working directory, a fresh interpreter's signal handlers, stdin on /dev/null, and
it runs the package's ``__main__`` the way ``python -m`` does (a SystemExit's code is the exit
status, an uncaught exception prints its traceback and exits 1; threads are joined and atexit
handlers run before it exits). What the warm process printed while importing is put in front
of every command's output, so a command's output holds all a cold start would have printed.
The warm process imports nothing heavy (no torch, mujoco, rclpy: test_cli_commands checks
the command line's help imports none) and starts no thread, so forking it is safe.

Not for a test of the process itself as the system sees it (its /proc/PID/cmdline or environ
are the warm process's), nor of what a cold start imports: those run a real interpreter.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MODULE = "vla_bridge.cli"

_lock = threading.Lock()
_server: subprocess.Popen | None = None
_startup = {"stdout": "", "stderr": ""}


def run_cli(*args: str, timeout: float | None = 120, env: dict | None = None,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """What ``python -m vla_bridge.cli *args`` exits with and prints (text)."""
    argv = [sys.executable, "-m", MODULE, *args]
    with tempfile.TemporaryDirectory(prefix="cli_process_") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        with _lock:
            server = _request("run", args, env, cwd, stdout=str(out), stderr=str(err))
            pid = _reply(server, None)["pid"]
            try:
                code = _reply(server, timeout)["returncode"]
            except subprocess.TimeoutExpired:
                os.kill(pid, signal.SIGKILL)
                _reply(server, None)
                raise subprocess.TimeoutExpired(argv, timeout, _read(out, "stdout"),
                                                _read(err, "stderr")) from None
        return subprocess.CompletedProcess(argv, code, _read(out, "stdout"), _read(err, "stderr"))


class CliProcess:
    """A running ``python -m vla_bridge.cli ARGS`` (see ``spawn_cli``): a child of the warm
    process, whose exit status that process writes to a file when it reaps it."""

    def __init__(self, args: list[str], pid: int, stdout, status: Path, tmp):
        self.args, self.pid, self.stdout, self.returncode = args, pid, stdout, None
        self._status, self._tmp = status, tmp

    def poll(self) -> int | None:
        if self.returncode is None and self._status.exists():
            text = self._status.read_text()
            if text.endswith("\n"):  # written whole
                self.returncode = int(text)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:  # exited; its status is on its way
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def spawn_cli(*args: str, env: dict | None = None,
              cwd: str | Path | None = None) -> CliProcess:
    """``python -m vla_bridge.cli *args`` started, its stdout and stderr on one text pipe."""
    tmp = tempfile.TemporaryDirectory(prefix="cli_process_")
    fifo, status = Path(tmp.name) / "output", Path(tmp.name) / "status"
    os.mkfifo(fifo)
    with _lock:
        server = _request("spawn", args, env, cwd, stdout=str(fifo), stderr=str(fifo),
                          status=str(status))
        pid = _reply(server, None)["pid"]
    stdout = _open_reader(fifo)
    argv = [sys.executable, "-m", MODULE, *args]
    if _startup["stdout"] or _startup["stderr"]:  # what a cold start would print first
        stdout = _Prefixed(_startup["stdout"] + _startup["stderr"], stdout)
    return CliProcess(argv, pid, stdout, status, tmp)


def _open_reader(fifo: Path):
    """The read end of the child's output FIFO (opening it waits for the child to open the
    write end, its first step; should it never, a stand-in writer ends the wait: EOF)."""
    opened = threading.Event()

    def unblock() -> None:
        if not opened.wait(60):
            with open(fifo, "w"):
                pass

    threading.Thread(target=unblock, daemon=True).start()
    stream = open(fifo, errors="replace")
    opened.set()
    return stream


class _Prefixed:
    """A text stream that first gives `text`, then reads on from `stream`."""

    def __init__(self, text: str, stream):
        self._lines, self._stream = text.splitlines(keepends=True), stream

    def readline(self) -> str:
        return self._lines.pop(0) if self._lines else self._stream.readline()

    def __iter__(self):
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def close(self) -> None:
        self._stream.close()


def _request(mode: str, args, env, cwd, **paths) -> subprocess.Popen:
    server = _started()
    request = {"mode": mode, "args": list(args), "env": dict(os.environ if env is None else env),
               "cwd": str(cwd or os.getcwd()), **paths}
    server.stdin.write(json.dumps(request) + "\n")
    server.stdin.flush()
    return server


def _read(path: Path, stream: str) -> str:
    return _startup[stream] + (path.read_text(errors="replace") if path.exists() else "")


def _started() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        _startup.update(_reply(_server, 120)["startup"])
        atexit.register(_stop, _server)
    return _server


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.stdin.close()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def _reply(server: subprocess.Popen, timeout: float | None) -> dict:
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    if not ready:
        raise subprocess.TimeoutExpired([MODULE], timeout)
    line = server.stdout.readline()
    if not line:
        raise RuntimeError(f"the warm {MODULE} process died (exit {server.wait()})")
    return json.loads(line)


# ------------------------------------------------------------------- the warm process

_spawned: dict[int, str] = {}  # pid -> its status file (the warm process reaps them)


def _serve() -> None:
    import runpy  # noqa: F401  (imported before forking: each child only runs)
    import traceback  # noqa: F401

    replies = os.fdopen(os.dup(1), "w")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            from vla_bridge.cli import build_parser
            build_parser()  # imports every sub-command's argument module
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
        out.seek(0)
        err.seek(0)
        startup = {"stdout": out.read(), "stderr": err.read()}
    base_path = [p for p in sys.path[1:] if p not in _pythonpath(os.environ)]
    signal.signal(signal.SIGCHLD, _reap_spawned)
    _send(replies, {"startup": startup})
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            replies.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _child(request, base_path)  # never returns
        if request["mode"] == "spawn":
            _spawned[pid] = request["status"]
            _send(replies, {"pid": pid})
            _reap_spawned()  # one that is gone already
            continue
        _send(replies, {"pid": pid})
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        _send(replies, {"returncode": os.waitstatus_to_exitcode(status)})


def _reap_spawned(*_) -> None:
    for pid, path in list(_spawned.items()):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if done:
            del _spawned[pid]
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(f"{os.waitstatus_to_exitcode(status)}\n")
            os.replace(tmp, path)


def _pythonpath(env) -> list[str]:
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]


def _send(replies, message: dict) -> None:
    replies.write(json.dumps(message) + "\n")
    replies.flush()


def _child(request: dict, base_path: list[str]) -> None:
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = out if request["stderr"] == request["stdout"] else \
            os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        # as a start puts them: -m's working directory, PYTHONPATH, the rest
        sys.path[:] = [request["cwd"], *_pythonpath(os.environ), *base_path]
        code = _run_module(request["args"])
    finally:
        os._exit(code)


def _run_module(args: list[str]) -> int:
    """``python -m vla_bridge.cli *args`` from here on: its exit status."""
    import runpy
    import traceback

    sys.argv = [MODULE, *args]  # runpy puts the module's file first
    try:
        runpy.run_module(MODULE, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except BaseException:  # as the interpreter reports an uncaught exception
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()  # as the interpreter ends: non-daemon threads first, then atexit
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    _serve()
