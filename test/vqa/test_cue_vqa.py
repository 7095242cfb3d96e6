"""LIBERO-VIFO Part I-A runner (vla_bridge.vqa) on real MuJoCo renders of Scene 1.

Two Scene 1 tasks (a pick and a place) x F1 / F2 / F3 (each family's default variant) x one
seed: the oracle reaches 100 % and the files are right; the random baseline's metrics agree
with its rows; an http backend talks to a tiny server started here; bad answers and
exceptions are recorded as wrong; an interrupted run resumes without duplicates; the saved
example is the cued render; bad specs are refused with the valid names.
"""
import base64
import io
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
cv2 = pytest.importorskip("cv2")
pytest.importorskip("mujoco")
mujoco_backend = pytest.importorskip("vla_bridge.sim_nodes.mujoco.backend")

from vla_bridge.cli import main as cli_main  # noqa: E402
from vla_bridge.benchmarks.vifo import (VQA_STAGES, project_anchors, project_point,  # noqa: E402
                                         region_to_pixels)
from vla_bridge.benchmarks.vifo.families import FAMILIES  # noqa: E402
from vla_bridge.benchmarks.vifo.protocols import UNSUPPORTED_IN_GRAPH  # noqa: E402
from vla_bridge.vqa import (EXAMPLES_DIR, METRICS_FILE, RESULTS_FILE, TABLE_FILE,  # noqa: E402
                                 RandomVqa, VqaBackend, VqaBackendUnavailable, VqaInstance,
                                 make_vqa_backend, parse_cues, read_rows, run_vqa)
from vla_bridge.vqa.instances import VqaScene, cued_image, plan_instances  # noqa: E402,E501
from vla_bridge.benchmarks.robofollow.tasks import load_suite  # noqa: E402

TASK_IDS = ["L0_pickup_yellow_block_1_left", "L0_place_yellow_block_1_behind_red_cylinder"]
CUES = parse_cues("F1,F2,F3")
N_INSTANCES = len(TASK_IDS) * len(CUES)


@pytest.fixture(scope="module")
def tasks():
    suite = load_suite()
    return [suite.get(t) for t in TASK_IDS]


@pytest.fixture(scope="module")
def sim():
    b = mujoco_backend.MujocoBackend()
    yield b
    b.close()


def run(backend, tasks, out, sim, cues=CUES, **kw):
    return run_vqa(backend, tasks, cues, output=out, sim=sim, stream=io.StringIO(), **kw)


def segment_distance(pts, p0, p1):
    d = p1 - p0
    t = np.clip(((pts - p0) @ d) / (d @ d), 0.0, 1.0)
    return np.linalg.norm(pts - (p0 + t[:, None] * d), axis=1)


def by_instance(rows):
    out = {}
    for r in rows:
        out.setdefault(r["instance"], []).append(r)
    return out


def check_consistent(metrics, rows):
    """Every stage accuracy and FCA recomputed from the rows."""
    for stage in VQA_STAGES:
        rs = [r for r in rows if r["stage"] == stage]
        assert metrics["overall"][stage] == pytest.approx(100 * sum(r["correct"] for r in rs) / len(rs), abs=0.01)
    chains = by_instance(rows)
    full = sum(all(r["correct"] for r in rs) for rs in chains.values())
    assert metrics["overall"]["fca"] == pytest.approx(100 * full / len(chains), abs=0.01)
    assert metrics["overall"]["instances"] == len(chains)
    for r in rows:
        assert r["correct"] == (r["answer"] == r["correct_index"])


@pytest.fixture(scope="module")
def oracle_run(tasks, sim, tmp_path_factory):
    out = tmp_path_factory.mktemp("oracle")
    return out, run("oracle", tasks, out, sim)


# --------------------------------------------------------------------------- oracle + files

@pytest.mark.graph
def test_oracle_gets_full_chain_accuracy_and_the_files_are_right(oracle_run):
    out, metrics = oracle_run
    assert metrics["new"] == N_INSTANCES and metrics["resumed"] == 0 and not metrics["skipped"]
    assert sorted(metrics["by_family"]) == ["F1", "F2", "F3"]
    for m in [metrics["overall"], metrics["average"], *metrics["by_family"].values()]:
        assert all(m[s] == 100.0 for s in (*VQA_STAGES, "fca")), m
    assert metrics["overall"]["instances"] == N_INSTANCES
    assert all(m["instances"] == len(TASK_IDS) for m in metrics["by_family"].values())
    rows = read_rows(out)
    assert len(rows) == 4 * N_INSTANCES
    for inst, rs in by_instance(rows).items():
        assert [r["stage"] for r in rs] == list(VQA_STAGES)
        task, fam, variant, seed, cam = inst.split("|")
        assert (task, fam, variant, int(seed), cam) == (rs[0]["task"], rs[0]["family"],
                                                        rs[0]["variant"], rs[0]["seed"], "cam_high")
        for r in rs:
            assert len(r["options"]) == 4 and 0 <= r["correct_index"] < 4
            assert r["answer"] == r["correct_index"] and r["correct"] and r["error"] is None
            assert r["backend"] == "oracle" and r["seconds"] >= 0
    assert {(r["family"], r["variant"]) for r in rows} == set(CUES)
    on_disk = json.loads((out / METRICS_FILE).read_text())
    assert on_disk["overall"] == metrics["overall"] and on_disk["by_family"] == metrics["by_family"]
    table = (out / TABLE_FILE).read_text()
    assert "F3 Ghost" in table and "FCA" in table
    assert table.splitlines()[6].split()[1:] == ["100.0"] * 5  # FCA: F1 F2 F3 Avg. All


@pytest.mark.graph
def test_example_png_is_the_cued_render(oracle_run, tasks, sim):
    out, _ = oracle_run
    files = sorted((out / EXAMPLES_DIR).glob("*.png"))
    assert [f.name.split("_")[0] for f in files] == ["F1", "F2", "F3"]  # one per family
    scene = VqaScene(sim, "cam_high")
    for f in files:
        fam, variant = f.name.split("_")[:2]
        seed = int(f.stem.rsplit("_s", 1)[1])
        assert TASK_IDS[0] in f.name  # the first instance of the family
        saved = cv2.cvtColor(cv2.imread(str(f)), cv2.COLOR_BGR2RGB)
        raw, cued, world, cue = cued_image(scene, VqaInstance(tasks[0], fam, variant, seed))
        assert np.array_equal(saved, cued)  # PNG is lossless: exactly what the backend saw
        sim.reset(tasks[0].scene, tasks[0].layout, seed)
        assert np.array_equal(raw, sim.render("cam_high"))
        changed = np.any(saved != raw, axis=2)
        assert changed.sum() > 200, f.name
        ys, xs = np.nonzero(changed)
        if fam == "F1":  # fixed region: the banner box, nothing outside it
            x0, y0, x1, y1 = region_to_pixels(cue.box, raw.shape[1], raw.shape[0])
            assert x0 <= xs.min() and y0 <= ys.min() and xs.max() < x1 and ys.max() < y1
        elif fam == "F2":  # the arrow: along the projected source -> target path
            a = project_anchors(cue, world, sim.camera_model("cam_high"))
            dist = segment_distance(np.stack([xs, ys], 1), a["source"].uv, a["target"].uv)
            assert dist.max() < 40 and changed.mean() < 0.05, (f.name, dist.max())
        else:  # ghosts: along the planned path, from where the source stands to its end
            cam = sim.camera_model("cam_high")
            path = [world.objects[tasks[0].source].pos] + [p for p, _q in cue.params["plan_path"]]
            uv = [project_point(cam, p) for p in path]
            dist = np.min([segment_distance(np.stack([xs, ys], 1), a, b)
                           for a, b in zip(uv, uv[1:])], axis=0)
            assert dist.max() < 40 and changed.mean() < 0.05, (f.name, dist.max())


# --------------------------------------------------------------------------- random

@pytest.mark.graph
def test_random_metrics_agree_with_its_answers(tasks, sim, tmp_path):
    metrics = run("random?seed=3", tasks, tmp_path, sim)
    rows = read_rows(tmp_path)
    assert len(rows) == 4 * N_INSTANCES
    assert all(r["error"] is None and 0 <= r["answer"] < len(r["options"]) for r in rows)
    check_consistent(metrics, rows)
    assert 0 < sum(r["correct"] for r in rows) < len(rows)  # chance, not the oracle
    answers = [r["answer"] for r in rows]
    again = run("random?seed=3", tasks, tmp_path / "again", sim)
    assert [r["answer"] for r in read_rows(tmp_path / "again")] == answers  # reproducible
    assert again["overall"] == metrics["overall"]


@pytest.mark.graph
def test_rerun_resumes_without_duplicates(tasks, sim, tmp_path):
    first = run("random", tasks[:1], tmp_path, sim)
    assert first["new"] == len(CUES)
    lines = (tmp_path / RESULTS_FILE).read_text().splitlines(keepends=True)
    # interrupted: the last instance lost two rows and a third was torn mid-write
    (tmp_path / RESULTS_FILE).write_text("".join(lines[:-3]) + lines[-3][:40])
    second = run("random", tasks, tmp_path, sim)
    assert second["resumed"] == len(CUES) - 1 and second["new"] == N_INSTANCES - len(CUES) + 1
    rows = read_rows(tmp_path)
    latest = {(r["instance"], r["stage"]): r for r in rows}
    assert len(latest) == 4 * N_INSTANCES and second["overall"]["instances"] == N_INSTANCES
    assert len(rows) == 4 * N_INSTANCES + 1  # + the 1 whole row of the redone instance
    third = run("random", tasks, tmp_path, sim)
    assert third["new"] == 0 and third["resumed"] == N_INSTANCES
    assert read_rows(tmp_path) == rows
    check_consistent(third, list(latest.values()))
    fresh = run("random", tasks, tmp_path / "fresh", sim)
    assert fresh["overall"] == third["overall"]  # resuming loses and changes nothing
    with pytest.raises(ValueError, match="holds answers of backend"):
        run("oracle", tasks, tmp_path, sim)
    with pytest.raises(ValueError, match="holds answers for camera"):
        run("random", tasks, tmp_path, sim, camera="cam_left_wrist")
    assert read_rows(tmp_path) == rows


# --------------------------------------------------------------------------- http

class VqaServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests, self.problems, self.slow = [], [], None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        buf = np.frombuffer(base64.b64decode(req["image_png_base64"]), np.uint8)
        img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
        problem = None
        if img is None or img.shape != (240, 320, 3):
            problem = f"bad image {None if img is None else img.shape}"
        elif not (isinstance(req["question"], str) and len(req["options"]) == 4
                  and all(isinstance(o, str) for o in req["options"])):
            problem = "bad question/options"
        self.server.requests.append((req["question"], req["options"], img))
        if self.server.slow and self.server.slow in req["question"]:
            time.sleep(1.0)
        if problem:
            self.server.problems.append(problem)
            body, code = problem.encode(), 400
        else:
            body, code = json.dumps({"answer": 0}).encode(), 200
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and went away


@pytest.fixture
def server():
    srv = VqaServer()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.mark.graph
def test_http_backend_against_a_local_server(tasks, sim, tmp_path, server):
    url = f"http://127.0.0.1:{server.server_address[1]}/vqa"
    metrics = run(f"http?url={url}&timeout=10", tasks, tmp_path, sim)
    assert not server.problems and len(server.requests) == 4 * N_INSTANCES
    rows = read_rows(tmp_path)
    assert all(r["answer"] == 0 and r["error"] is None for r in rows)
    check_consistent(metrics, rows)
    assert [q for q, _, _ in server.requests] == [r["question"] for r in rows]
    assert [o for _, o, _ in server.requests] == [r["options"] for r in rows]
    example = sorted((tmp_path / EXAMPLES_DIR).glob("F1_*.png"))[0]
    assert np.array_equal(server.requests[0][2], cv2.imread(str(example)))  # the cued image


@pytest.mark.graph
def test_http_timeout_is_a_wrong_answer_and_a_dead_server_stops_the_run(tasks, sim, tmp_path, server):
    server.slow = "What should the robot do with"  # the decision question
    url = f"http://127.0.0.1:{server.server_address[1]}/vqa"
    m = run(f"http?url={url}&timeout=0.3", tasks[:1], tmp_path, sim, cues=CUES[:1])
    rows = read_rows(tmp_path)
    assert [r["error"] is not None for r in rows] == [False, False, False, True]
    assert "no answer" in rows[3]["error"] and m["overall"]["decision"] == 0.0
    port = server.server_address[1]
    server.shutdown()
    server.server_close()
    with pytest.raises(VqaBackendUnavailable, match="unreachable"):
        run(f"http?url=http://127.0.0.1:{port}/vqa", tasks, tmp_path / "dead", sim)
    assert read_rows(tmp_path / "dead") == []


# --------------------------------------------------------------------------- bad backends

class Misbehaving(VqaBackend):
    """Out of range, raises, a string, a bool: all wrong, each with its reason."""

    def answer(self, image, question, options):
        if "Does the image" in question:
            return 7
        if "What task" in question:
            raise RuntimeError("model crashed")
        if "Which object" in question:
            return "2"
        return True


@pytest.mark.graph
def test_invalid_answers_and_exceptions_are_recorded_as_wrong(tasks, sim, tmp_path):
    metrics = run(Misbehaving(), tasks, tmp_path, sim, name="misbehaving")
    rows = read_rows(tmp_path)
    assert len(rows) == 4 * N_INSTANCES
    assert all(not r["correct"] and r["answer"] is None for r in rows)
    errors = {r["stage"]: r["error"] for r in rows}
    assert errors["detection"] == "answer 7 out of range 0..3"
    assert errors["semantics"] == "RuntimeError: model crashed"
    assert "not an option index" in errors["grounding"] and "not an option index" in errors["decision"]
    assert metrics["overall"]["errors"] == len(rows) and metrics["overall"]["fca"] == 0.0
    assert all(r["backend"] == "misbehaving" for r in rows)


# --------------------------------------------------------------------------- specs, CLI

def test_specs_and_cue_choices():
    with pytest.raises(ValueError, match=r"unknown VQA backend 'gpt'.*http.*oracle.*random"):
        make_vqa_backend("gpt")
    with pytest.raises(ValueError, match=r"needs \['url'\]"):
        make_vqa_backend("http")
    with pytest.raises(ValueError, match="takes no argument"):
        make_vqa_backend("random?temperature=1")
    with pytest.raises(ValueError, match="cannot be loaded"):
        make_vqa_backend("no_such_pkg.mod:Model")
    b = make_vqa_backend("vla_bridge.vqa.backends:RandomVqa?seed=5")
    assert isinstance(b, RandomVqa) and b.seed == 5
    assert make_vqa_backend("http?url=http://h:1/v&timeout=2").timeout == 2.0
    with pytest.raises(ValueError, match="unknown cue family 'F9'"):
        parse_cues("F1,F9")
    with pytest.raises(ValueError, match="unknown variant 'zigzag' for F2"):
        parse_cues("F2", "zigzag")
    assert parse_cues("F2,F6", "F2=curved_path") == [("F2", "curved_path"), ("F6", "target_zone")]
    assert len(parse_cues()) == 8
    n_all = sum(len(f.variants) for f in FAMILIES.values()) - len(UNSUPPORTED_IN_GRAPH)
    assert len(parse_cues("", "all")) == n_all


def test_cli(tmp_path, capsys):
    assert cli_main(["vqa", "--backend", "gpt", "--output", str(tmp_path)]) == 2
    assert "unknown VQA backend 'gpt'" in capsys.readouterr().err
    assert cli_main(["vqa", "--backend", "random", "--families", "F9"]) == 2
    assert "unknown cue family" in capsys.readouterr().err
    rc = cli_main(["vqa", "--backend", "oracle", "--tasks", TASK_IDS[0], "--families", "F8",
                   "--seeds", "5", "--output", str(tmp_path)])
    cap = capsys.readouterr()
    assert rc == 0 and "F8 Code" in cap.out and "1/1 (100%)" in cap.err
    rows = read_rows(tmp_path)
    assert len(rows) == 4 and rows[0]["seed"] == 5 and rows[0]["variant"] == "qr"


@pytest.mark.graph
def test_scene_placement_asks_about_the_card_standing_in_the_scene(tasks, sim, tmp_path):
    """--placement scene: the cue is the sim node's card (F8 QR, F1 text card), rendered by
    MuJoCo; the image is the render with the card, rows say "scene", and an overlay run
    cannot resume into the same directory. (An F8 ArUco card shows no task: the filter
    leaves it out.)"""
    out = tmp_path / "scene"
    cues = parse_cues("F8,F1", "F8=qr")
    assert plan_instances(tasks[:1], parse_cues("F8", "F8=aruco")) == []
    metrics = run("oracle", tasks[:1], out, sim, cues=cues, placement="scene")
    rows = read_rows(out)
    assert len(rows) == 4 * len(cues) and {r["placement"] for r in rows} == {"scene"}
    assert metrics["overall"]["fca"] == 100.0 and metrics["placement"] == "scene"
    (png,) = (out / EXAMPLES_DIR).glob("F8_*.png")
    image = cv2.cvtColor(cv2.imread(str(png)), cv2.COLOR_BGR2RGB)
    seed = rows[0]["seed"]
    sim.reset(tasks[0].scene, tasks[0].layout, seed)
    assert np.any(image != sim.render("cam_high"), axis=2).sum() > 200  # the card
    with pytest.raises(ValueError, match="placement"):
        run("oracle", tasks[:1], out, sim, cues=cues)
    with pytest.raises(ValueError, match="F1, F6, F8"):
        run("oracle", tasks[:1], tmp_path / "bad", sim, cues=parse_cues("F2"), placement="scene")
