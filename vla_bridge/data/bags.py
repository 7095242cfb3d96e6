"""One rosbag2 bag per episode, in MCAP storage, written through `rosbags` (no rclpy here).

The recorder node hands this module serialized (CDR) messages exactly as DDS delivered them;
`EpisodeBags` opens a bag when an episode begins and closes it when the episode ends. A bag
is written under ``<run>/bags/.partial/<name>`` and moved to ``<run>/bags/<name>`` only once
it is closed complete (its episode ended normally), so a directory under ``bags/`` is always a
complete bag (``metadata.yaml`` and ``<name>.mcap`` with zstd-compressed chunks, as ``ros2 bag
record -s mcap`` writes them). The bag of an episode that did not end normally (it failed, or
another begin came first) is closed where it is, readable but not filed; a crash leaves at most
one partial bag; the episode's rerun replaces either. ``.partial`` is removed once empty.

A bag that cannot be written (a full disk) is removed, partial files and all, and the OSError
is raised to the caller: no broken bag is ever left (the space it took is free again).

Each topic's connection carries the QoS profiles its publishers offered (``offered_qos_profiles``
in ``metadata.yaml``, as ``ros2 bag record`` writes them), so ``ros2 bag play`` replays the
transient-local instruction as transient-local and a late policy still gets it. The caller
says what was offered (`EndpointQos`, read from the ROS graph by the recorder node); a topic
with no publisher known is written with none, as rosbag2 does.

Bag names come from the evaluator's episode id (``<scene>/<task>/r<round>@<ns>``): the trial
key with ``/`` turned into ``__``, so a resumed run rewrites the bag of a trial it reruns and
never touches a finished one (``EpisodeBags.finished``: a trial with its results row, or one
this recorder filed itself).
"""
from __future__ import annotations

import contextlib
import errno
import functools
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BAGS_DIR = "bags"
PARTIAL_DIR = ".partial"
STORAGE = "mcap"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class FinishedTrial(ValueError):
    """A begin of a trial whose bag is complete and whose results row is written."""


def bag_name(episode_id: str) -> str:
    """A directory name for an episode id: its trial key, filesystem-safe."""
    key = episode_id.split("@", 1)[0].strip("/")
    name = _UNSAFE.sub("_", key.replace("/", "__")).strip("._")
    if not name:
        raise ValueError(f"episode id {episode_id!r} gives no usable bag name")
    return name


def os_error_text(exc: OSError) -> str:
    """An OSError in one line with its errno: 'No space left on device (errno 28 ENOSPC):
    /path'."""
    if exc.errno is None:
        return str(exc) or type(exc).__name__
    name = errno.errorcode.get(exc.errno, "?")
    where = f": {exc.filename}" if exc.filename else ""
    return f"{exc.strerror or str(exc)} (errno {exc.errno} {name}){where}"


@functools.lru_cache(maxsize=1)
def typestore():
    """ROS 2 kilted's message definitions (built once: it takes about 0.2 s)."""
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.ROS2_KILTED)


#: numpy dtypes of the ROS primitive types a rebuilt message's arrays hold (cdr_bytes)
_ARRAY_DTYPES = {"double": "float64", "float": "float32", "int32": "int32", "uint32": "uint32",
                 "int64": "int64", "uint8": "uint8", "int8": "int8", "int16": "int16",
                 "uint16": "uint16", "uint64": "uint64"}


def cdr_bytes(msg) -> bytes:
    """An rclpy message's CDR bytes as DDS sends them, from rosbags' serializer (the recorder's
    rebuilt tick messages). rclpy's ``serialize_message`` appends 8 bytes of padding to a
    variable-size message (a joint state), which rosbags' reader refuses ("CDR message size
    mismatch"). Flat messages and nested ones of strings, numbers and numeric or string
    sequences; TypeError for another field type."""
    package = type(msg).__module__.split(".")[0]
    name = f"{package}/msg/{type(msg).__name__}"
    return bytes(typestore().serialize_cdr(_as_rosbags(msg, name), name))


def _as_rosbags(msg, name: str):
    store = typestore()
    fields = {}
    for field_name, kind in msg.get_fields_and_field_types().items():
        value = getattr(msg, field_name)
        if hasattr(value, "get_fields_and_field_types"):  # a nested message: pkg/Type
            package, _, nested = kind.partition("/")
            fields[field_name] = _as_rosbags(value, f"{package}/msg/{nested}")
        elif kind.startswith("sequence<") and kind[9:-1] in _ARRAY_DTYPES:
            fields[field_name] = np.asarray(value, dtype=_ARRAY_DTYPES[kind[9:-1]])
        elif kind == "sequence<string>":
            fields[field_name] = [str(v) for v in value]
        elif kind in _ARRAY_DTYPES or kind in ("string", "boolean"):
            fields[field_name] = value
        else:
            raise TypeError(f"{name}.{field_name}: field type {kind!r} is not rebuilt")
    return store.types[name](**fields)


@dataclass(frozen=True)
class EndpointQos:
    """One publisher's offered QoS, in rmw's integer codes (what rclpy's endpoint info gives:
    history 1 keep-last, 2 keep-all; reliability 1 reliable, 2 best effort; durability 1
    transient local, 2 volatile; liveliness 1 automatic) and nanoseconds (deadline, lifespan,
    lease; rmw's "infinite" is 9223372036854775807 ns)."""
    history: int
    depth: int
    reliability: int
    durability: int
    deadline_ns: int
    lifespan_ns: int
    liveliness: int
    liveliness_lease_ns: int
    avoid_ros_namespace_conventions: bool = False

    def to_rosbags(self):
        from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness,
                                        QosReliability, QosTime)

        def span(ns: int) -> QosTime:
            return QosTime(*divmod(int(ns), 1_000_000_000))

        return Qos(QosHistory(self.history), int(self.depth), QosReliability(self.reliability),
                   QosDurability(self.durability), span(self.deadline_ns),
                   span(self.lifespan_ns), QosLiveliness(self.liveliness),
                   span(self.liveliness_lease_ns), bool(self.avoid_ros_namespace_conventions))


#: topic -> the QoS its publishers offer now (an empty sequence: none known)
OfferedQos = Callable[[str], Sequence[EndpointQos]]


def _no_publishers(_topic: str) -> Sequence[EndpointQos]:
    return ()


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not empty, or already gone
        directory.rmdir()


@dataclass
class EpisodeBag:
    """One open bag: connections are added the first time a topic delivers a message."""
    name: str
    partial: Path
    final: Path
    topics: dict  # topic -> message type
    offered_qos: OfferedQos = _no_publishers
    counts: dict = field(default_factory=dict)

    def __post_init__(self):
        from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer

        self._writer = None
        try:
            if self.partial.exists():  # left by a crash or a failed episode: this one is rerun
                shutil.rmtree(self.partial)
            self.partial.parent.mkdir(parents=True, exist_ok=True)
            self._writer = Writer(self.partial, version=9, storage_plugin=StoragePlugin.MCAP)
            # MCAP's own zstd chunk compression: every MCAP reader opens it; rendered frames
            # shrink about 20x (a 10 fps oracle episode: 207 MB -> 11 MB)
            self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
            self._writer.open()
        except OSError:
            self.discard()
            raise
        self._connections: dict = {}
        self._types = typestore()

    def write(self, topic: str, stamp_ns: int, raw: bytes) -> None:
        conn = self._connections.get(topic)
        if conn is None:
            offered = [q.to_rosbags() for q in self.offered_qos(topic)]
            conn = self._connections[topic] = self._writer.add_connection(
                topic, self.topics[topic], typestore=self._types, offered_qos_profiles=offered)
        self._writer.write(conn, stamp_ns, raw)
        self.counts[topic] = self.counts.get(topic, 0) + 1

    def close(self, complete: bool = True) -> Path:
        """Finish the bag (metadata.yaml); a complete one moves to its final place, another
        stays under .partial. Its path."""
        self._writer.close()
        if not complete:
            return self.partial
        if self.final.exists():  # an older recording of the same trial (a rerun)
            shutil.rmtree(self.final)
        self.partial.rename(self.final)
        _remove_if_empty(self.partial.parent)
        return self.final

    def discard(self) -> None:
        """Drop the bag, written or not (a write failed): nothing of it stays on disk."""
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):  # a full disk fails the last flush again
                writer.abort()
        shutil.rmtree(self.partial, ignore_errors=True)
        _remove_if_empty(self.partial.parent)

    @property
    def messages(self) -> int:
        return sum(self.counts.values())


class EpisodeBags:
    """The bags of a run directory: `begin(episode)` opens one, messages go into it, `end`
    closes it. Messages that arrive between episodes are dropped, except the latest message
    of a latched topic, which the next bag starts with (the instruction is sent just before
    its episode begins). An OSError of a write, an open or a close drops the bag
    (``EpisodeBag.discard``) and is raised. `offered_qos` gives each topic's publishers' QoS
    when a bag first writes the topic."""

    def __init__(self, run_dir: str | Path, topics: dict[str, str], latched=frozenset(),
                 offered_qos: OfferedQos = _no_publishers):
        self.root = Path(run_dir) / BAGS_DIR
        self.topics = dict(topics)
        self.latched = frozenset(latched)
        self.offered_qos = offered_qos
        self.bag: EpisodeBag | None = None
        self.episode: str | None = None
        self.filed: set[str] = set()  # names of the complete bags this recorder filed
        self._held: dict[str, tuple[int, bytes]] = {}  # latched topic -> newest, between episodes

    def finished(self, episode_id: str) -> bool:
        """Whether the episode's trial is finished, so its complete bag must stay as it is:
        this recorder filed it, or it is under bags/ and the run directory holds the trial's
        results row (a trial a resume runs again has none)."""
        from vla_bridge.evaluation.run_dir import RunDirectory

        name = bag_name(episode_id)
        if name in self.filed:
            return True
        if not (self.root / name).is_dir():
            return False
        keys = RunDirectory(self.root.parent).finished_keys()
        return any(_key_name(key) == name for key in keys)

    def check_begin(self, episode_id: str) -> None:
        """ValueError when the episode may not open a bag: its id gives no bag name, or its
        trial is finished (FinishedTrial, see ``finished``)."""
        if self.finished(episode_id):
            raise FinishedTrial(f"trial {bag_name(episode_id)} is finished and its bag "
                                "complete; a finished trial's bag is never replaced")

    def begin(self, episode_id: str) -> EpisodeBag:
        """Open the episode's bag (a bag still open is closed incomplete first); ValueError
        as ``check_begin`` says."""
        self.check_begin(episode_id)
        if self.bag is not None:
            self.end(self.episode, complete=False)
        name = bag_name(episode_id)
        self.bag = EpisodeBag(name, self.root / PARTIAL_DIR / name, self.root / name, self.topics,
                              self.offered_qos)
        self.episode = episode_id
        held, self._held = self._held, {}
        for topic, (stamp_ns, raw) in sorted(held.items(), key=lambda kv: kv[1][0]):
            self.write(topic, stamp_ns, raw)
        return self.bag

    def write(self, topic: str, stamp_ns: int, raw: bytes) -> bool:
        """Write one message into the open bag; False when it was not written (no episode,
        or a topic this recorder does not record)."""
        if topic not in self.topics:
            return False
        if self.bag is None:
            if topic in self.latched:
                self._held[topic] = (stamp_ns, raw)
            return False
        with self._dropped_on_error():
            self.bag.write(topic, stamp_ns, raw)
        return True

    def end(self, episode_id: str | None, complete: bool = True) -> tuple[Path, int] | None:
        """Close the bag of `episode_id` (None or another id: nothing happens): filed under
        bags/ when ``complete``, else left under .partial; its path and message count."""
        if self.bag is None or episode_id != self.episode:
            return None
        with self._dropped_on_error():
            path = self.bag.close(complete)
        bag, self.bag, self.episode = self.bag, None, None
        if complete:
            self.filed.add(bag.name)
        return path, bag.messages

    def abandon(self) -> None:
        """Drop the open bag (nothing of it stays on disk)."""
        bag, self.bag, self.episode = self.bag, None, None
        if bag is not None:
            bag.discard()

    @contextlib.contextmanager
    def _dropped_on_error(self):
        try:
            yield
        except OSError:
            self.abandon()
            raise

    def close(self) -> None:
        """Shut down mid-episode: the open bag stays partial (the episode did not finish)."""
        if self.bag is not None:
            with contextlib.suppress(Exception):
                self.bag._writer.close()
            self.bag, self.episode = None, None
        _remove_if_empty(self.root / PARTIAL_DIR)


def _key_name(key) -> str | None:
    try:
        return bag_name(str(key))
    except ValueError:
        return None


def read_offered_qos(bag_dir: str | Path) -> dict[str, list]:
    """Topic -> the offered QoS profiles (rosbags `Qos`) that a bag's metadata.yaml gives."""
    from rosbags.rosbag2 import Reader

    with Reader(Path(bag_dir)) as reader:
        return {conn.topic: list(conn.ext.offered_qos_profiles) for conn in reader.connections}


def read_counts(bag_dir: str | Path) -> dict[str, int]:
    """Messages per topic of a bag, read back through rosbags' reader."""
    from rosbags.rosbag2 import Reader

    with Reader(Path(bag_dir)) as reader:
        return {conn.topic: conn.msgcount for conn in reader.connections}
