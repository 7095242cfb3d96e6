"""VQA backends: what answers the Part I-A questions, and how a spec string names one.

``random`` (chance baseline), ``http`` (a user's VLM server), ``oracle`` (privileged pipeline
check) or any ``package.module:Class`` with ``answer(image, question, options) -> int``;
``make_vqa_backend`` builds one from a spec such as ``random?seed=3``. Pure logic, no rclpy.
"""
from __future__ import annotations

import base64
import hashlib
import inspect
import json
import urllib.error
import urllib.request
from importlib import import_module

import cv2
import numpy as np

__all__ = ["VqaBackend", "RandomVqa", "OracleVqa", "HttpVqa", "VqaBackendUnavailable",
           "VQA_BACKENDS", "make_vqa_backend", "encode_png"]


class VqaBackend:
    """Answers one multiple-choice question about one image.

    ``answer(image, question, options)`` gets an (H, W, 3) uint8 RGB image and returns the
    index of the chosen option. Anything else (an index out of range, a non-integer, an
    exception) is recorded as a wrong answer with the reason. ``privileged`` backends also
    get ``correct=`` (the known answer index): only the oracle, which validates the pipeline.
    """

    privileged: bool = False

    def answer(self, image: np.ndarray, question: str, options: list[str]) -> int:
        raise NotImplementedError

    def close(self) -> None:
        """Release resources (connections, models)."""


class RandomVqa(VqaBackend):
    """Chance baseline: a uniformly random option, reproducible from (seed, image, question,
    options), so a resumed run answers exactly like an uninterrupted one."""

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def answer(self, image, question, options):
        h = hashlib.sha256(json.dumps([self.seed, question, list(options)]).encode())
        h.update(np.ascontiguousarray(image).tobytes())
        return int.from_bytes(h.digest()[:8], "little") % len(options)


class OracleVqa(VqaBackend):
    """Privileged: returns the known correct index without looking at the image. Its 100 %
    only shows that questions, answers and metrics are wired right; it measures nothing."""

    privileged = True

    def answer(self, image, question, options, correct: int | None = None):
        if correct is None:
            raise ValueError("the oracle VQA backend needs the correct index (privileged)")
        return correct


class VqaBackendUnavailable(ConnectionError):
    """The backend cannot be reached at all: the run stops (rows so far are kept)."""


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an RGB uint8 image."""
    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError("could not encode the image as PNG")
    return buf.tobytes()


class HttpVqa(VqaBackend):
    """A user's VLM server. POSTs ``{"image_png_base64", "question", "options"}`` as JSON to
    ``url`` and expects ``{"answer": <int index>}``. Connection refused / unknown host stops
    the run with ``VqaBackendUnavailable``; a timeout, an HTTP error or a bad reply counts
    as a wrong answer with the reason recorded."""

    def __init__(self, url: str, timeout: float = 60.0):
        if not str(url).startswith(("http://", "https://")):
            raise ValueError("http VQA backend: url must start with http:// or https://, "
                             f"got {url!r}")
        self.url, self.timeout = str(url), float(timeout)

    def answer(self, image, question, options):
        body = json.dumps({"image_png_base64": base64.b64encode(encode_png(image)).decode("ascii"),
                           "question": question, "options": list(options)}).encode()
        req = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                reply = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace")
            raise RuntimeError(f"VQA server replied HTTP {exc.code}: {detail}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise TimeoutError(f"no answer from {self.url} within {self.timeout:g} s") from None
            raise VqaBackendUnavailable(f"VQA server {self.url} is unreachable ({exc.reason}); "
                                        "start it or fix http?url=...") from None
        except TimeoutError:
            raise TimeoutError(f"no answer from {self.url} within {self.timeout:g} s") from None
        if not isinstance(reply, dict) or "answer" not in reply:
            raise ValueError(f'VQA server reply has no "answer": {str(reply)[:200]}')
        return reply["answer"]


VQA_BACKENDS = {
    "random": "vla_bridge.vqa.backends:RandomVqa",
    "http": "vla_bridge.vqa.backends:HttpVqa",
    "oracle": "vla_bridge.vqa.backends:OracleVqa",
}


def _backend_class(base: str):
    spec = VQA_BACKENDS.get(base, base)
    if ":" not in spec:
        raise ValueError(f"unknown VQA backend {base!r}; available: {sorted(VQA_BACKENDS)} "
                         "or 'package.module:Class' for your own")
    module, name = spec.split(":", 1)
    try:
        cls = getattr(import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"VQA backend {base!r} cannot be loaded: {exc}") from None
    if not callable(getattr(cls, "answer", None)):
        raise ValueError(f"VQA backend {base!r} has no answer(image, question, options) method")
    return cls


def make_vqa_backend(spec: str) -> VqaBackend:
    """A backend from "NAME", "NAME?k=v&k=v" or "package.module:Class?k=v" (values JSON-parsed
    when they can be, as for policies)."""
    from vla_bridge.policy_nodes.registry import parse_spec

    base, kwargs = parse_spec(spec)
    cls = _backend_class(base)
    params = inspect.signature(cls).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise ValueError(f"VQA backend {base!r} takes no argument(s) {unknown}; "
                             f"it accepts {list(params)}")
    missing = [k for k, p in params.items() if p.default is p.empty and k not in kwargs
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if missing:
        example = ("http?url=http://localhost:8000/vqa" if base == "http"
                   else f"{base}?{missing[0]}=...")
        raise ValueError(f"VQA backend {base!r} needs {missing} (e.g. {example})")
    return cls(**kwargs)
