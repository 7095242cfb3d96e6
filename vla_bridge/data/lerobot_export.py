"""Recorded episodes (``record:=true`` bags) -> a LeRobotDataset (v3), through LeRobot's own
dataset API, with the key names openpi's ALOHA data configs and LeRobot's training read:

================================== ==========================================================
LeRobot key                        from the episode's bag
================================== ==========================================================
``observation.state`` (14)         measured joints, contract order (rad; gripper 1 = open)
``action`` (14)                    the executed target at the same instant (after the limits)
``observation.images.cam_high``    camera images, 240 x 320 RGB (video, or PNG frames)
``observation.images.cam_left_wrist``, ``observation.images.cam_right_wrist``
``task``                           the instruction the policy was given
================================== ==========================================================

The table is ``contract.ALOHA_PIPER``'s: what a dataset holds comes from the ``contract.Embodiment``
its episodes ran (``run_embodiment``: the run's ``run.json`` names it; a run that names none ran
ALOHA_PIPER): the state and action names (``state_names``, ``action_names``), the cameras
(``camera_names``) and the robot type. One dataset holds one embodiment.

Frames: LeRobot needs an integer fps with timestamp = frame_index / fps. The sim's control
tick is 0.06 s (16.7 Hz), so sim runs record dense frames on the physics clock instead
(``record_fps``, e.g. 10: every 25th 4 ms physics step, see ``sim_nodes.session.FrameSampler``);
those frames carry one stamp for every camera, the joints and the target, and the export
takes them as they are. A bag without them (real or fake hardware: cameras and joints stream
at their own rates) is resampled at ``fps``: each frame takes the newest message of each
stream at or before its time.

Per-episode facts LeRobot's episode table has no column for (task id, level, seed, scores,
success, source bag) go to ``meta/vla_bridge_episodes.jsonl`` beside LeRobot's own ``meta/``,
one line per ``episode_index``. No network: LeRobot is told the hub is offline.

Damaged inputs are skipped, one line each: a torn ``results.jsonl`` line (a cut write), a bag
that cannot be read (a cut ``.mcap``, a missing bag). The dataset is written atomically: into
a temporary folder beside ``--out``, renamed to it only when complete (``--overwrite``
replaces the old one only then); a write error (a full disk) removes the temporary folder and
raises ``DatasetWriteError``, one line with the real errno, so no half dataset is left.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from vla_bridge import contract as C

STATE, ACTION, TASK = "observation.state", "action", "task"
IMAGE_KEY = "observation.images.{}"
SIDECAR = "meta/vla_bridge_episodes.jsonl"
#: LeRobot's robot_type per embodiment (another embodiment: its name)
ROBOT_TYPES = {C.ALOHA_PIPER.name: "piper_aloha"}  # two PiPER arms in ALOHA joint order
STAMP_TOLERANCE_S = 1e-6


class ExportError(ValueError):
    """An export that cannot be done as asked (the message says why and what to do)."""


class DatasetWriteError(ExportError):
    """The dataset could not be written (a full disk, no permission): nothing is left of it;
    ``errno`` is the OSError's."""

    def __init__(self, message: str, errno: int | None = None):
        super().__init__(message)
        self.errno = errno


def robot_type(embodiment: C.Embodiment) -> str:
    return ROBOT_TYPES.get(embodiment.name, embodiment.name)


def embodiment_of(robot: str | None) -> C.Embodiment:
    """The embodiment a dataset's ``robot_type`` names (`robot_type`'s inverse), else
    ExportError naming the known ones."""
    names = {v: k for k, v in ROBOT_TYPES.items()}
    try:
        return C.get_embodiment(names.get(robot, robot))
    except ValueError:
        raise ExportError(f"robot_type {robot!r} is no embodiment of vla_bridge; known: "
                          f"{sorted(robot_type(e) for e in C.EMBODIMENTS.values())}") from None


def run_embodiment(run_dir: str | Path) -> C.Embodiment:
    """The embodiment a run directory's episodes ran: the one its run.json names (the graph
    agreed on it), else ``contract.ALOHA_PIPER`` (runs from before it was written)."""
    from vla_bridge.evaluation.run_dir import RunDirectory
    name = RunDirectory(run_dir).info().get("embodiment") or C.DEFAULT_EMBODIMENT
    try:
        return C.get_embodiment(name)
    except ValueError as exc:
        raise ExportError(f"{run_dir}: {exc}") from None


@dataclass
class EpisodeFrames:
    """One episode as equally spaced frames of `embodiment`."""
    fps: int
    states: np.ndarray  # [N, state_dim]
    actions: np.ndarray  # [N, action_dim]
    images: dict[str, np.ndarray] = field(default_factory=dict)  # camera -> [N, H, W, 3]
    embodiment: C.Embodiment = C.ALOHA_PIPER

    @property
    def n(self) -> int:
        return len(self.states)


# ============================================================================ reading bags
def _bag_messages(bag_dir: Path, topics: Iterable[str]) -> dict[str, list]:
    """topic -> [(header stamp s, decoded message)] in bag order, for the given topics."""
    from rosbags.rosbag2 import Reader

    from vla_bridge.data.bags import typestore
    store, wanted = typestore(), set(topics)
    out: dict[str, list] = {t: [] for t in wanted}
    with Reader(bag_dir) as reader:
        connections = [c for c in reader.connections if c.topic in wanted]
        if not connections:  # (an empty list would read every message)
            return out
        for conn, _, raw in reader.messages(connections=connections):
            msg = store.deserialize_cdr(raw, conn.msgtype)
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            out[conn.topic].append((stamp, msg))
    return out


def _image(msg) -> np.ndarray:
    if msg.encoding != C.IMAGE_ENCODING:
        raise ExportError(f"camera images must be {C.IMAGE_ENCODING}, got {msg.encoding!r}")
    return np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)


def _joints(msg, names: tuple[str, ...]) -> np.ndarray:
    """The message's positions of `names`, in that order."""
    index = {name: i for i, name in enumerate(msg.name)}
    missing = [n for n in names if n not in index]
    if missing:
        raise ExportError(f"joint state lacks {missing}")
    return np.array([msg.position[index[n]] for n in names], dtype=np.float32)


def _converters(embodiment: C.Embodiment) -> dict[str, Callable]:
    """feature -> what turns one of its messages into that frame's value."""
    return {STATE: lambda msg: _joints(msg, embodiment.state_names),
            ACTION: lambda msg: _joints(msg, embodiment.action_names),
            **{IMAGE_KEY.format(c): _image for c in embodiment.camera_names}}


def dense_topics(embodiment: C.Embodiment = C.ALOHA_PIPER) -> dict[str, str]:
    """What a sim bag with record_fps holds per frame: feature -> topic."""
    topics = {STATE: C.TOPIC_RECORD_JOINT_STATES, ACTION: C.TOPIC_RECORD_JOINT_COMMANDS}
    topics.update({IMAGE_KEY.format(c): C.record_image_topic(c) for c in embodiment.camera_names})
    return topics


def stream_topics(embodiment: C.Embodiment = C.ALOHA_PIPER) -> dict[str, str]:
    """The streams a hardware bag is resampled from: feature -> topic."""
    topics = {STATE: C.TOPIC_JOINT_STATES, ACTION: C.TOPIC_JOINT_COMMANDS}
    topics.update({IMAGE_KEY.format(c): C.image_topic(c) for c in embodiment.camera_names})
    return topics


def read_episode(bag_dir: str | Path, fps: int | None = None,
                 embodiment: C.Embodiment = C.ALOHA_PIPER) -> EpisodeFrames:
    """The bag's frames of `embodiment` (its state, action and cameras): its dense record
    frames when it has them, else its streams resampled at `fps`."""
    bag_dir = Path(bag_dir)
    dense = _bag_messages(bag_dir, dense_topics(embodiment).values())
    if dense[C.TOPIC_RECORD_JOINT_STATES]:
        return _dense_frames(dense, bag_dir, embodiment)
    if not fps:
        raise ExportError(f"{bag_dir.name}: no dense frames (/vla_bridge/record/*): record sim "
                          "runs with --record_fps 10, or give --fps to resample the camera and "
                          "joint streams (hardware runs)")
    return _resampled_frames(_bag_messages(bag_dir, stream_topics(embodiment).values()), fps,
                             bag_dir, embodiment)


def _frames(fps: int, values: dict[str, np.ndarray], embodiment: C.Embodiment) -> EpisodeFrames:
    """EpisodeFrames from feature -> [N, ...] values."""
    return EpisodeFrames(fps=fps, states=values[STATE], actions=values[ACTION],
                         images={c: values[IMAGE_KEY.format(c)] for c in embodiment.camera_names},
                         embodiment=embodiment)


def _dense_frames(messages: dict[str, list], bag_dir: Path,
                  embodiment: C.Embodiment) -> EpisodeFrames:
    by_feature = {key: {round(s, 6): m for s, m in messages[topic]}
                  for key, topic in dense_topics(embodiment).items()}
    stamps = sorted(set.intersection(*(set(v) for v in by_feature.values())))
    if len(stamps) < 2:
        raise ExportError(f"{bag_dir.name}: fewer than 2 complete dense frames")
    steps = np.diff(stamps)
    fps = int(round(1.0 / float(np.median(steps))))
    if np.any(np.abs(steps - 1.0 / fps) > STAMP_TOLERANCE_S):
        raise ExportError(f"{bag_dir.name}: dense frames are not evenly spaced at {fps} fps "
                          "(a frame is missing from the bag)")
    return _frames(fps, {key: np.stack([convert(by_feature[key][s]) for s in stamps])
                         for key, convert in _converters(embodiment).items()}, embodiment)


def _resampled_frames(messages: dict[str, list], fps: int, bag_dir: Path,
                      embodiment: C.Embodiment) -> EpisodeFrames:
    streams = {key: sorted(messages[topic], key=lambda sm: sm[0])
               for key, topic in stream_topics(embodiment).items()}
    empty = [key for key, stream in streams.items() if not stream]
    if empty:
        raise ExportError(f"{bag_dir.name}: nothing recorded for {empty}")
    start = max(stream[0][0] for stream in streams.values())  # every stream has begun
    end = min(stream[-1][0] for stream in streams.values())
    times = start + np.arange(int(np.floor((end - start) * fps + 1e-9)) + 1) / fps

    def held(key: str, convert) -> np.ndarray:
        stamps = np.array([s for s, _ in streams[key]])
        idx = np.searchsorted(stamps, times + STAMP_TOLERANCE_S, side="right") - 1
        return np.stack([convert(streams[key][i][1]) for i in idx])

    return _frames(fps, {key: held(key, convert)
                         for key, convert in _converters(embodiment).items()}, embodiment)


# ============================================================================ choosing rows
@dataclass(frozen=True)
class Selection:
    """Which recorded episodes to export."""
    successful_only: bool = False
    levels: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()

    def keeps(self, row: dict) -> str | None:
        """None when the row is exported, else why not."""
        if not row.get("bag"):
            return row.get("bag_error") or "not recorded (run with --record true)"
        if row.get("status") != "ok":
            return f"episode failed: {row.get('error')}"
        if self.successful_only and not row.get("complete"):
            return "not successful"
        if self.levels and row.get("level") not in self.levels:
            return f"level {row.get('level')} not selected"
        if self.tasks and row.get("task_id") not in self.tasks:
            return "task not selected"
        if not row.get("instruction"):
            return "no instruction (an empty-language episode has no task text)"
        return None


TORN_ROW = "torn results.jsonl line"  # the reason a skipped line is counted under
UNREADABLE_BAG = "unreadable bag"


def recorded_rows(run_dirs: Iterable[str | Path],
                  skip: Callable[[str, str], None] | None = None) -> list[tuple[Path, dict]]:
    """(run dir, row) of every results row of the run directories, in order. A line that is
    no JSON object (torn by a cut write) is skipped: ``skip(TORN_ROW, what)`` hears of it."""
    out = []
    for run in map(Path, run_dirs):
        results = run / "results.jsonl"
        if not results.is_file():
            raise ExportError(f"{run}: not a run directory (no results.jsonl)")
        for number, line in enumerate(results.read_text(errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                row = exc
            if isinstance(row, dict):
                out.append((run, row))
            elif skip is not None:
                skip(TORN_ROW, f"{results}:{number}: not a JSON object (a torn line?): "
                               f"{line[:60]!r}")
    return out


def _bag_damage() -> tuple[type[BaseException], ...]:
    """What reading a damaged bag raises (rosbags' ReaderError, a cut chunk, bad CDR)."""
    from rosbags.rosbag2 import ReaderError
    from rosbags.rosbag2.storage_mcap import zstd
    kinds = [ReaderError, OSError, EOFError, KeyError, IndexError, struct.error]
    kinds += [k for k in (getattr(zstd, "ZstdError", None),) if isinstance(k, type)]
    return tuple(kinds)


def read_bag_or_skip(bag_dir: Path, fps: int | None,
                     embodiment: C.Embodiment = C.ALOHA_PIPER) -> EpisodeFrames | str:
    """The bag's frames, or why it cannot be read (a damaged bag: one line)."""
    try:
        return read_episode(bag_dir, fps, embodiment)
    except ExportError:
        raise
    except (ValueError, *_bag_damage()) as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"


# ============================================================================ writing
def features(image_shape: tuple[int, int, int], video: bool,
             embodiment: C.Embodiment = C.ALOHA_PIPER) -> dict:
    """LeRobot's features of a dataset of `embodiment` with images of `image_shape`."""
    states, actions = list(embodiment.state_names), list(embodiment.action_names)
    out = {STATE: {"dtype": "float32", "shape": (len(states),), "names": states},
           ACTION: {"dtype": "float32", "shape": (len(actions),), "names": actions}}
    for cam in embodiment.camera_names:
        out[IMAGE_KEY.format(cam)] = {"dtype": "video" if video else "image",
                                      "shape": image_shape,
                                      "names": ["height", "width", "channels"]}
    return out


def episode_facts(run: Path, row: dict, frames: EpisodeFrames) -> dict:
    keys = ("task_id", "scene", "level", "round", "seed", "policy", "intent_score",
            "exec_score", "complete", "instruction")
    return {**{k: row.get(k) for k in keys}, "success": bool(row.get("complete")),
            "frames": frames.n, "run": str(run), "bag": row["bag"]}


def export_lerobot(run_dirs: Iterable[str | Path], out: str | Path, *,
                   repo_id: str = "local/vla_bridge", selection: Selection = Selection(),
                   fps: int | None = None, video: bool = True, overwrite: bool = False,
                   echo: Callable[[str], None] = print) -> dict:
    """Write the selected recorded episodes as one LeRobotDataset at `out`, atomically (see
    the module docstring); a summary. Damaged rows and bags are skipped, one line each."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local dataset: never the hub
    out = Path(out)
    if out.exists() and not overwrite:
        raise ExportError(f"{out} exists; choose a new --out or pass --overwrite")
    skipped: dict[str, int] = {}

    def skip(reason: str, line: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1
        echo(f"skipped {line}")

    rows = recorded_rows(run_dirs, skip)
    chosen = []
    for run, row in rows:
        why = selection.keeps(row)
        if why is None:
            chosen.append((run, row))
        else:
            skipped[why] = skipped.get(why, 0) + 1
    if not chosen:
        raise ExportError(f"no episode to export ({len(rows)} rows; skipped: {skipped})")
    with _atomic_dataset(out) as partial:
        dataset, facts, embodiment = None, [], None
        embodiment_of = functools.cache(run_embodiment)  # run.json once per run
        try:
            for i, (run, row) in enumerate(chosen, 1):
                name = row.get("key", row["bag"])
                frames = read_bag_or_skip(run / row["bag"], fps, embodiment_of(run))
                if isinstance(frames, str):
                    skip(UNREADABLE_BAG, f"[{i}/{len(chosen)}] {name}: its bag {run / row['bag']} "
                                         f"cannot be read ({frames})")
                    continue
                if dataset is None:
                    dataset = create_dataset(partial, repo_id, frames, video)
                elif frames.fps != dataset.fps:
                    raise ExportError(f"{row['bag']}: {frames.fps} fps, the dataset is "
                                      f"{dataset.fps} fps")
                elif frames.embodiment != embodiment:
                    raise ExportError(f"{run}: its episodes ran {frames.embodiment.name}, the "
                                      f"dataset's ran {embodiment.name} (one dataset holds one "
                                      "embodiment: export them apart)")
                embodiment = frames.embodiment
                add_episode(dataset, frames, row["instruction"])
                facts.append({"episode_index": len(facts), **episode_facts(run, row, frames)})
                echo(f"[{i}/{len(chosen)}] {name}: {frames.n} frames")
        except BaseException:
            if dataset is not None:  # close LeRobot's parquet writers; the first error counts
                with contextlib.suppress(Exception):
                    dataset.finalize()
            raise
        if dataset is None:
            raise ExportError(f"no episode to export: no bag could be read "
                              f"({len(rows)} rows; skipped: {skipped})")
        dataset.finalize()
        (partial / SIDECAR).write_text("".join(json.dumps(f) + "\n" for f in facts))
    return {"episodes": len(facts), "frames": sum(f["frames"] for f in facts),
            "fps": dataset.fps, "skipped": skipped, "root": str(out)}


@contextlib.contextmanager
def _atomic_dataset(out: Path):
    """A temporary folder beside `out` to write the dataset into; renamed to `out` (an old
    `out` replaced) when the block ends, removed when it raises. An OSError becomes one
    DatasetWriteError line with the errno."""
    from vla_bridge.data.bags import os_error_text

    partial = out.with_name(f".{out.name}.partial-{os.getpid()}")
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(partial, ignore_errors=True)  # a crashed export's
        yield partial
        if out.exists():  # --overwrite: the old dataset goes only now
            out.rename(old)
        partial.rename(out)
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if old.exists() and not out.exists():
            old.rename(out)  # the old dataset stays as it was
        if isinstance(exc, OSError):
            raise DatasetWriteError(f"cannot write the dataset {out}: {os_error_text(exc)}; "
                                    "nothing was written", exc.errno) from None
        raise
    shutil.rmtree(old, ignore_errors=True)


class _StrictImageWriter:
    """LeRobot's image-writer interface (``save_image``, ``wait_until_done``, ``stop``),
    writing each frame at once and raising when the write fails. LeRobot's own synchronous
    ``write_image`` prints a failed write and goes on, so a full disk showed up later as a
    missing file (ENOENT) instead of ENOSPC, and the export went on with a broken episode."""

    def save_image(self, image, fpath, compress_level: int = 1) -> None:
        from lerobot.datasets.image_writer import image_array_to_pil_image
        if hasattr(image, "cpu"):  # a torch tensor
            image = image.cpu().numpy()
        picture = image_array_to_pil_image(image) if isinstance(image, np.ndarray) else image
        picture.save(fpath, compress_level=compress_level)

    def wait_until_done(self) -> None:
        pass

    def stop(self) -> None:
        pass


def create_dataset(out: Path, repo_id: str, frames: EpisodeFrames, video: bool):
    """An empty LeRobotDataset at `out` shaped for `frames` (their embodiment, fps and image
    size)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    embodiment = frames.embodiment
    shape = frames.images[embodiment.camera_names[0]].shape[1:]
    dataset = LeRobotDataset.create(repo_id, fps=frames.fps, root=out,
                                    robot_type=robot_type(embodiment),
                                    features=features(shape, video, embodiment), use_videos=video)
    dataset.image_writer = _StrictImageWriter()  # a failed image write raises (see there)
    return dataset


def add_episode(dataset, frames: EpisodeFrames, instruction: str,
                parallel_encoding: bool = True) -> None:
    """One episode's frames, with `instruction` as its task, saved as an episode
    (`parallel_encoding`: LeRobot encodes the cameras' videos in worker processes)."""
    for k in range(frames.n):
        frame = {STATE: frames.states[k], ACTION: frames.actions[k], TASK: instruction}
        for cam in frames.embodiment.camera_names:
            frame[IMAGE_KEY.format(cam)] = frames.images[cam][k]
        dataset.add_frame(frame)
    dataset.save_episode(parallel_encoding=parallel_encoding)
