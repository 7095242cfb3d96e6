"""openpi protocol servers in a thread of the test's own process (test_policy_backends.py,
test_libero.py): `serve_in_thread` serves any server object (a `FakeServer` answering every
request with one reply, or a real `PolicyServer`) on a free port of 127.0.0.1."""
from __future__ import annotations

import asyncio
import threading


class FakeServer:
    """In-thread protocol server answering every request with ``reply``."""

    def __init__(self, reply: dict):
        self.reply = reply

    def metadata(self):
        return {"policy": "fake"}

    def connection_opened(self):
        pass

    def infer(self, obs):
        self.last_obs = obs
        return dict(self.reply)


def serve_in_thread(fake) -> tuple[int, callable]:
    """Serve ``fake`` in a thread: (its port, a function that stops it)."""
    from vla_bridge.policy_nodes.openpi.serve import serve_async
    ready, ports, loop = threading.Event(), [], asyncio.new_event_loop()
    stop = asyncio.Event()

    def run():
        asyncio.set_event_loop(loop)
        loop.run_until_complete(serve_async(fake, "127.0.0.1", 0,
                                            lambda p: (ports.append(p), ready.set()), stop))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    return ports[0], lambda: (loop.call_soon_threadsafe(stop.set), thread.join(5))
