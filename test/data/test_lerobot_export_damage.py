"""`vla-bridge export lerobot` on damaged inputs and a full disk (issue #29 point 7): a torn
results.jsonl line and a cut .mcap are skipped with one line each; the dataset is written
into a temporary folder beside --out and renamed only when complete, so a write error leaves
no half dataset (and an --overwrite keeps the old one) and is reported in one line with its
real errno.

The run directories are built here without a graph: bags written by `bags.EpisodeBags` with
the dense record topics a sim run with --record_fps writes (3 cameras, joints, targets)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support import full_disk as F
from vla_bridge import contract as C
from vla_bridge.data import bags as B
from vla_bridge.data import lerobot_export as X

pytest.importorskip("lerobot")
pytestmark = pytest.mark.graph  # see setup.cfg's markers: importing LeRobot alone takes ~15 s
FRAMES = 4  # per episode, at 10 fps


def _serializers():
    """CDR bytes of the dense frames' messages, as DDS delivers them to the recorder."""
    store = B.typestore()
    T, H = store.types["builtin_interfaces/msg/Time"], store.types["std_msgs/msg/Header"]
    JS, IM = store.types["sensor_msgs/msg/JointState"], store.types["sensor_msgs/msg/Image"]

    def header(t, frame=""):
        return H(stamp=T(sec=int(t), nanosec=int(round((t % 1) * 1e9))), frame_id=frame)

    def joints(q, t):
        return bytes(store.serialize_cdr(JS(header=header(t), name=list(C.ALOHA_PIPER.action_names),
                                            position=np.asarray(q, float), velocity=np.zeros(0),
                                            effort=np.zeros(0)), JS.__msgtype__))

    def image(pixels, t, cam):
        h, w, _ = pixels.shape
        return bytes(store.serialize_cdr(IM(header=header(t, cam), height=h, width=w,
                                            encoding=C.IMAGE_ENCODING, is_bigendian=0,
                                            step=3 * w, data=pixels.reshape(-1)),
                                         IM.__msgtype__))
    return joints, image


def make_run(run: Path, episodes: int = 3) -> list[dict]:
    """A run directory of `episodes` recorded episodes (random images: ~230 kB PNGs)."""
    joints, image = _serializers()
    rng = np.random.default_rng(0)
    rows = []
    for e in range(episodes):
        key = f"scene1/L0_task/r{e + 1}"
        bags = B.EpisodeBags(run, C.recorded_topics())
        bags.begin(f"{key}@{e}")
        for k in range(FRAMES):
            t, q = k / 10, np.full(14, 0.01 * k + e)
            bags.write(C.TOPIC_RECORD_JOINT_STATES, k, joints(q, t))
            bags.write(C.TOPIC_RECORD_JOINT_COMMANDS, k, joints(q + 0.1, t))
            for cam in C.ALOHA_PIPER.camera_names:
                pixels = rng.integers(0, 256, (C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3), dtype=np.uint8)
                bags.write(C.record_image_topic(cam), k, image(pixels, t, cam))
        path, _ = bags.end(f"{key}@{e}")
        rows.append({"key": key, "task_id": "L0_task", "scene": "scene1", "level": "L0",
                     "round": e + 1, "seed": e, "status": "ok", "complete": True,
                     "instruction": f"task {e}", "bag": path.relative_to(run).as_posix()})
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "run"
    make_run(run)
    return run


def _beside(out: Path) -> list[str]:
    """What is in --out's folder (a temporary folder left behind would show here)."""
    return sorted(p.name for p in out.parent.iterdir())


def _load(root):
    os.environ["HF_HUB_OFFLINE"] = "1"
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    return LeRobotDataset("local/vla_bridge", root=root)


def test_a_torn_results_line_and_a_cut_bag_are_skipped_one_line_each(run_dir, tmp_path):
    run = tmp_path / "run"
    import shutil
    shutil.copytree(run_dir, run)
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    with open(run / "results.jsonl", "a") as f:  # a fourth row, cut mid-write
        f.write(json.dumps({**rows[0], "key": "scene1/L0_task/r4"})[:57])
    mcap = run / rows[1]["bag"] / f"{Path(rows[1]['bag']).name}.mcap"
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 2])  # a cut bag

    lines = []
    out = tmp_path / "ds" / "export"
    summary = X.export_lerobot([run], out, video=False, echo=lines.append)
    skipped = [line for line in lines if line.startswith("skipped ")]
    assert len(skipped) == 2
    assert "results.jsonl:4: not a JSON object (a torn line?)" in skipped[0]
    assert "scene1/L0_task/r2: its bag" in skipped[1] and "ReaderError" in skipped[1]
    assert summary["episodes"] == 2 and summary["frames"] == 2 * FRAMES
    assert summary["skipped"] == {X.TORN_ROW: 1, X.UNREADABLE_BAG: 1}
    dataset = _load(out)
    assert dataset.num_episodes == 2 and len(dataset) == 2 * FRAMES
    assert [dataset[i]["task"] for i in (0, FRAMES)] == ["task 0", "task 2"]
    facts = [json.loads(line) for line in (out / X.SIDECAR).read_text().splitlines()]
    assert [(f["episode_index"], f["bag"]) for f in facts] == [(0, rows[0]["bag"]),
                                                               (1, rows[2]["bag"])]
    assert _beside(out) == ["export"]  # nothing else beside it


def test_only_damaged_bags_is_no_episode_to_export_and_no_dataset(tmp_path):
    run = tmp_path / "run"
    rows = make_run(run, episodes=1)
    (run / rows[0]["bag"] / "metadata.yaml").unlink()
    lines = []
    with pytest.raises(X.ExportError, match="no bag could be read"):
        X.export_lerobot([run], tmp_path / "out", video=False, echo=lines.append)
    assert len(lines) == 1 and "cannot be read" in lines[0]
    assert _beside(tmp_path / "out") == ["run"]


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_full_disk_leaves_no_half_dataset_and_says_enospc(run_dir, tmp_path, monkeypatch,
                                                            overwrite):
    """The disk fills with the second episode's images. Before: LeRobot's write_image printed
    the error and went on, the export then failed on the missing file (ENOENT) and left a half
    dataset, and --overwrite had already deleted the old one."""
    out = tmp_path / "ds"
    if overwrite:
        (out / "meta").mkdir(parents=True)
        (out / "meta" / "info.json").write_text("{}")  # the old dataset
    disk = F.full_disk(monkeypatch)(tmp_path, free=FRAMES * 3 * 240_000)  # ~ one episode
    with pytest.raises(X.DatasetWriteError) as caught:
        X.export_lerobot([run_dir], out, video=False, overwrite=overwrite,
                         echo=lambda _: None)
    assert disk.refused >= 1
    message = str(caught.value)
    assert caught.value.errno == 28 and "No space left on device (errno 28 ENOSPC)" in message
    assert message.startswith(f"cannot write the dataset {out}: ") and "\n" not in message
    if overwrite:  # the old dataset is untouched
        assert _beside(out) == ["ds"] and (out / "meta" / "info.json").read_text() == "{}"
    else:
        assert _beside(out) == []


def test_overwrite_replaces_the_old_dataset_only_when_the_new_one_is_complete(run_dir, tmp_path):
    out = tmp_path / "ds"
    (out / "old").mkdir(parents=True)
    summary = X.export_lerobot([run_dir], out, video=False, overwrite=True, echo=lambda _: None)
    assert summary["episodes"] == 3 and not (out / "old").exists()
    assert _beside(out) == ["ds"] and _load(out).num_episodes == 3


def test_the_cli_reports_a_file_size_limit_in_one_line_with_its_errno(run_dir, tmp_path):
    """A real write error from the kernel: the export runs under RLIMIT_FSIZE (no file may
    outgrow 100 kB, so the first PNG fails with EFBIG), as a command."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.RLIM_INFINITY))

    out = tmp_path / "ds"
    proc = subprocess.run([sys.executable, "-m", "vla_bridge.cli", "export", "lerobot",
                           str(run_dir), "--out", str(out), "--images", "png"],
                          capture_output=True, text=True, timeout=300, preexec_fn=limit,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("vla-bridge")]
    assert len(errors) == 1 and errors[0].startswith("vla-bridge export: error: cannot write "
                                                     f"the dataset {out}: File too large "
                                                     "(errno 27 EFBIG)")
    assert _beside(out) == []
