"""vla-eval model servers for the `vla_eval` backend's tests (test_vla_eval_backend.py).

`ModelServer` subclasses vla-eval's own ``PredictModelServer`` (from its PyPI package,
installed by scripts/setup.sh) and answers with a known function of the observation
(`ramp_chunk` for the 14-D ALOHA state); `serve_in_thread` serves it with vla-eval's own
``serve_async`` in a thread of the test's process, on a free port of 127.0.0.1, so the test
reads what the server received (``calls``, ``episodes``) and checks every chunk exactly.

Junk (``modes``: one per episode, the last repeats): ``shape`` (a [H, 5] chunk), ``nan``
(NaN inside the chunk), ``bytes`` (a frame that is not msgpack), ``drop`` (the first
observation is answered, the second closes the connection), ``ok``.
"""
from __future__ import annotations

import threading

import numpy as np
from vla_eval.model_servers import serve as ve_serve
from vla_eval.model_servers.predict import PredictModelServer
from vla_eval.protocol.messages import MessageType
from vla_eval.specs import DimSpec

RAMP = 0.002  # rad per action step of ramp_chunk
SIGNS = np.array([1, -1, 1, -1, 1, -1, 0, -1, 1, -1, 1, -1, 1, 0], float)  # grippers: held
JUNK_BYTES = "__vla_bridge_test_junk_bytes__"  # a reply marker: sent as non-msgpack bytes


def ramp_chunk(state, horizon: int) -> np.ndarray:
    """The model: [horizon, 14], action k = state + RAMP (k + 1) SIGNS (arm joints ramp
    alternately up and down, grippers hold)."""
    state = np.asarray(state, float)
    return state + RAMP * np.arange(1, horizon + 1)[:, None] * SIGNS


def _specs(spec: dict | None) -> dict:
    return {name: DimSpec(name, dims, fmt) for name, (dims, fmt) in (spec or {}).items()}


class ModelServer(PredictModelServer):
    """Answers each observation with ``fn(observation)`` (default: ramp_chunk of its
    ``state``), declaring the given observation_params / observation_spec / action_spec
    ({component: (dims, format)})."""

    def __init__(self, fn=None, horizon: int = 10, observation_params: dict | None = None,
                 observation_spec: dict | None = None, action_spec: dict | None = None,
                 modes=("ok",)):
        super().__init__()  # chunk_size None: the whole chunk goes back each call
        self.fn = fn or (lambda obs: ramp_chunk(obs["state"], horizon))
        self.params = dict(observation_params or {})
        self.obs_spec, self.action_spec = _specs(observation_spec), _specs(action_spec)
        self.modes = list(modes)
        self.calls: list[dict] = []  # {"obs", "actions", "mode", "episode"} per observation
        self.episodes: list[dict] = []  # episode_start payloads
        self.ended: list[dict] = []  # episode_end payloads

    def get_observation_params(self):
        return dict(self.params)

    def get_observation_spec(self):
        return self.obs_spec

    def get_action_spec(self):
        return self.action_spec

    async def on_episode_start(self, config, ctx):
        self.episodes.append(config)
        await super().on_episode_start(config, ctx)

    async def on_episode_end(self, result, ctx):
        self.ended.append(result)
        await super().on_episode_end(result, ctx)

    def predict(self, obs, ctx):
        episode = len(self.episodes) - 1
        mode = self.modes[min(max(episode, 0), len(self.modes) - 1)]
        actions = np.asarray(self.fn(obs), float)
        reply = {"actions": actions}
        if mode == "shape":
            reply = {"actions": np.zeros((len(actions), 5))}
        elif mode == "nan":
            actions = actions.copy()
            actions[len(actions) // 2, 3] = np.nan
            reply = {"actions": actions}
        elif mode == "bytes":
            reply = {"actions": actions, JUNK_BYTES: True}
        elif mode == "drop" and ctx.step >= 1:
            import websockets
            self.calls.append({"obs": obs, "actions": None, "mode": mode, "episode": episode})
            raise websockets.exceptions.ConnectionClosed(None, None)  # the handler closes
        self.calls.append({"obs": obs, "actions": np.asarray(reply["actions"], np.float32),
                           "mode": mode, "episode": episode})
        return reply


_pack_message = ve_serve.pack_message


def _pack_with_junk(msg):
    """vla-eval's pack_message, but an action marked JUNK_BYTES leaves as non-msgpack bytes
    (0xc1 is the one byte msgpack never uses)."""
    if msg.type is MessageType.ACTION and isinstance(msg.payload, dict) \
            and msg.payload.get(JUNK_BYTES):
        return b"\xc1\xc1 this is not msgpack"
    return _pack_message(msg)


ve_serve.pack_message = _pack_with_junk  # serve.py's send_action looks it up at call time


def serve_in_thread(server) -> tuple[int, callable]:
    """Serve ``server`` with vla-eval's serve_async in a thread: (its port, stop())."""
    import anyio
    import anyio.from_thread
    import anyio.lowlevel

    ready, box = threading.Event(), {}

    async def main():
        async with anyio.create_task_group() as tg:
            box["scope"], box["token"] = tg.cancel_scope, anyio.lowlevel.current_token()
            box["port"] = await tg.start(ve_serve.serve_async, server, "127.0.0.1", 0)
            ready.set()

    def run():
        try:
            anyio.run(main)
        finally:
            ready.set()

    thread = threading.Thread(target=run, name="vla-eval-server", daemon=True)
    thread.start()
    assert ready.wait(10) and "port" in box, "the vla-eval server did not start"

    def stop():
        anyio.from_thread.run_sync(box["scope"].cancel, token=box["token"])
        thread.join(5)
    return box["port"], stop
