"""One rosbag2 bag per episode, in MCAP storage, written through `rosbags` (no rclpy here).

The recorder node hands this module serialized (CDR) messages exactly as DDS delivered them;
`EpisodeBags` opens a bag when an episode begins and closes it when the episode ends. A bag
is written under ``<run>/bags/.partial/<name>`` and moved to ``<run>/bags/<name>`` only once
it is closed, so a directory under ``bags/`` is always a complete bag (``metadata.yaml`` and
``<name>.mcap`` with zstd-compressed chunks, as ``ros2 bag record -s mcap`` writes them) and a crash leaves at most one
partial bag, which the episode's rerun replaces.

Bag names come from the evaluator's episode id (``<scene>/<task>/r<round>@<ns>``): the trial
key with ``/`` turned into ``__``, so a resumed run rewrites the bag of a trial it reruns and
never touches a finished one.
"""
from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

BAGS_DIR = "bags"
PARTIAL_DIR = ".partial"
STORAGE = "mcap"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def bag_name(episode_id: str) -> str:
    """A directory name for an episode id: its trial key, filesystem-safe."""
    key = episode_id.split("@", 1)[0].strip("/")
    name = _UNSAFE.sub("_", key.replace("/", "__")).strip("._")
    if not name:
        raise ValueError(f"episode id {episode_id!r} gives no usable bag name")
    return name


@functools.lru_cache(maxsize=1)
def typestore():
    """ROS 2 kilted's message definitions (built once: it takes about 0.2 s)."""
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.ROS2_KILTED)


@dataclass
class EpisodeBag:
    """One open bag: connections are added the first time a topic delivers a message."""
    name: str
    partial: Path
    final: Path
    topics: dict  # topic -> message type
    counts: dict = field(default_factory=dict)

    def __post_init__(self):
        from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer

        if self.partial.exists():  # left by a crash: this episode is being rerun
            shutil.rmtree(self.partial)
        self.partial.parent.mkdir(parents=True, exist_ok=True)
        self._writer = Writer(self.partial, version=9, storage_plugin=StoragePlugin.MCAP)
        # MCAP's own zstd chunk compression: every MCAP reader opens it; rendered frames
        # shrink about 20x (a 10 fps oracle episode: 207 MB -> 11 MB)
        self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        self._writer.open()
        self._connections: dict = {}
        self._types = typestore()

    def write(self, topic: str, stamp_ns: int, raw: bytes) -> None:
        conn = self._connections.get(topic)
        if conn is None:
            conn = self._connections[topic] = self._writer.add_connection(
                topic, self.topics[topic], typestore=self._types)
        self._writer.write(conn, stamp_ns, raw)
        self.counts[topic] = self.counts.get(topic, 0) + 1

    def close(self) -> Path:
        """Finish the bag (metadata.yaml) and move it to its final place; its path."""
        self._writer.close()
        if self.final.exists():  # an older recording of the same trial (a rerun)
            shutil.rmtree(self.final)
        self.partial.rename(self.final)
        return self.final

    @property
    def messages(self) -> int:
        return sum(self.counts.values())


class EpisodeBags:
    """The bags of a run directory: `begin(episode)` opens one, messages go into it, `end`
    closes it. Messages that arrive between episodes are dropped, except the latest message
    of a latched topic, which the next bag starts with (the instruction is sent just before
    its episode begins)."""

    def __init__(self, run_dir: str | Path, topics: dict[str, str], latched=frozenset()):
        self.root = Path(run_dir) / BAGS_DIR
        self.topics = dict(topics)
        self.latched = frozenset(latched)
        self.bag: EpisodeBag | None = None
        self.episode: str | None = None
        self._held: dict[str, tuple[int, bytes]] = {}  # latched topic -> newest, between episodes

    def begin(self, episode_id: str) -> EpisodeBag:
        if self.bag is not None:
            self.end(self.episode)
        name = bag_name(episode_id)
        self.bag = EpisodeBag(name, self.root / PARTIAL_DIR / name, self.root / name, self.topics)
        self.episode = episode_id
        for topic, (stamp_ns, raw) in sorted(self._held.items(), key=lambda kv: kv[1][0]):
            self.bag.write(topic, stamp_ns, raw)
        self._held = {}
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
        self.bag.write(topic, stamp_ns, raw)
        return True

    def end(self, episode_id: str | None) -> tuple[Path, int] | None:
        """Close the bag of `episode_id` (None or another id: nothing happens); its final
        path and message count."""
        if self.bag is None or episode_id != self.episode:
            return None
        bag, self.bag, self.episode = self.bag, None, None
        return bag.close(), bag.messages

    def close(self) -> None:
        """Shut down mid-episode: the open bag stays partial (the episode did not finish)."""
        if self.bag is not None:
            self.bag._writer.close()
            self.bag, self.episode = None, None


def read_counts(bag_dir: str | Path) -> dict[str, int]:
    """Messages per topic of a bag, read back through rosbags' reader."""
    from rosbags.rosbag2 import Reader

    with Reader(Path(bag_dir)) as reader:
        return {conn.topic: conn.msgcount for conn in reader.connections}
