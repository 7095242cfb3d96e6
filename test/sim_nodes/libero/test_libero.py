"""LIBERO (#13): the embodiment-aware contract, the LIBERO protocol's arithmetic, the openpi
LIBERO keys, and (with .venv-libero, `bash scripts/setup.sh libero`) LIBERO's own
environments: camera gating, the catalog, and an episode through the graph scored by LIBERO's
goal predicates.

LIBERO lives in its own venv (robosuite 1.4.0 needs mujoco 3.3.7), so the tests that need it
run scripts with that venv's interpreter; they skip, saying how to build it, when it is absent.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from support.libero_venv import launch_libero_graph, needs_libero_venv, run_in_libero_venv
from vla_bridge.benchmarks.libero import protocol as P

REPO = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------ the contract


def test_embodiments_are_declared_once_with_names_units_gripper_and_cameras():
    panda, aloha = C.get_embodiment("libero_panda"), C.get_embodiment("aloha_piper")
    assert (panda.action_kind, panda.action_dim, panda.state_dim) == (C.ACTION_EEF_DELTA, 7, 8)
    assert (aloha.action_kind, aloha.action_dim, aloha.state_dim) == \
        (C.ACTION_JOINT_ABSOLUTE, 14, 14)
    assert aloha.action_names == C.ALOHA_PIPER.action_names == tuple(C.joint_names())
    for e in (panda, aloha):
        assert len(e.action_units) == e.action_dim and len(e.state_units) == e.state_dim
        assert set(e.camera_names) <= set(C.ALOHA_PIPER.camera_names)  # the same topic names for both
        assert "1 = open" in e.gripper
    assert dict(panda.cameras) == {"cam_high": "agentview", "cam_left_wrist": "robot0_eye_in_hand"}
    assert panda.image_size == (256, 256) and panda.control_period == 0.05
    with pytest.raises(ValueError, match="declared: \\['aloha_piper', 'libero_panda'\\]"):
        C.get_embodiment("ur5")


def test_a_graph_agrees_on_one_embodiment_or_names_both_sides():
    assert C.agree_embodiment({"sim_node": "libero_panda", "policy_node": "libero_panda"}) \
        is C.LIBERO_PANDA
    with pytest.raises(C.EmbodimentMismatch) as err:
        C.agree_embodiment({"sim_node": "libero_panda", "policy_node": "aloha_piper"})
    msg = str(err.value)
    assert "sim_node speaks libero_panda: 7-D eef_delta actions, 8-D state" in msg
    assert "policy_node speaks aloha_piper: 14-D joint_absolute actions" in msg


def test_the_engine_refuses_a_sim_and_policy_of_different_embodiments():
    from vla_bridge.evaluation.episodes import RunRefused, SuiteRun
    stub = SimpleNamespace(embodiment=None)
    ready = {"sim": {"kind": "ready", "embodiment": "libero_panda"},
             "policy": {"kind": "ready"}}  # a policy node that names none speaks ALOHA
    with pytest.raises(RunRefused, match="refusing to run: embodiment mismatch: sim_node speaks "
                                         "libero_panda.*policy_node speaks aloha_piper"):
        SuiteRun.check_embodiment(stub, ready)
    ready["policy"]["embodiment"] = "libero_panda"
    SuiteRun.check_embodiment(stub, ready)
    assert stub.embodiment is C.LIBERO_PANDA


@pytest.mark.graph
@pytest.mark.slow
def test_a_policy_of_another_embodiment_is_refused_at_start(tmp_path):
    """The RoboFollow graph (ALOHA pair) with the LIBERO oracle: the policy node refuses to
    start, naming both sides, and the launcher exits non-zero before any episode runs."""
    from support.graph_runs import launch
    out = tmp_path / "run"
    proc = launch("--policy", "libero_oracle", "--output", str(out), timeout=120)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "embodiment mismatch: the graph (policy_node.embodiment) speaks aloha_piper" in text
    assert "policy backend 'libero_oracle' speaks libero_panda" in text
    assert not (out / "results.jsonl").exists() or not (out / "results.jsonl").read_text()


# ------------------------------------------------------------------ the protocol


def test_the_catalog_holds_the_four_suites_with_instructions_and_goals():
    catalog = P.load_catalog()
    assert set(P.STANDARD_SUITES) <= set(catalog)
    for suite in P.STANDARD_SUITES:
        assert [t["index"] for t in catalog[suite]] == list(range(10))
    spatial0 = catalog["libero_spatial"][0]
    assert spatial0["goal"] == [["on", "akita_black_bowl_1", "plate_1"]]
    assert catalog["libero_object"][0]["instruction"] == \
        "pick up the alphabet soup and place it in the basket"


def test_trial_plan_layouts_seeds_and_ranges():
    trials = P.plan_trials("libero_spatial,libero_object", tasks="0-1", inits="0,49", seed=7)
    assert [t.episode for t in trials] == [
        "libero_spatial/0/0", "libero_spatial/0/49", "libero_spatial/1/0", "libero_spatial/1/49",
        "libero_object/0/0", "libero_object/0/49", "libero_object/1/0", "libero_object/1/49"]
    assert trials[1].layout == "0:49" and trials[1].seed == 7  # openpi: one seed per task
    assert trials[0].task()["goal"] == [["on", "akita_black_bowl_1", "plate_1"]]
    assert len(P.plan_trials("", inits="0-49")) == 4 * 10 * 50  # the full protocol: 2,000
    with pytest.raises(ValueError, match="inits '50' out of range 0..49"):
        P.plan_trials("libero_goal", inits="50")
    with pytest.raises(ValueError, match="unknown LIBERO suite"):
        P.plan_trials("libero_kitchen")


def test_success_per_task_and_suite_with_wilson_intervals():
    lo, hi = P.wilson(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)  # the textbook 95 % Wilson interval
    rows = [{"episode": f"libero_object/{t}/{i}", "suite": "libero_object", "task_index": t,
             "success": t == 0 or i == 0, "wall_s": 2.0, "reason": "step budget spent"}
            for t in range(2) for i in range(3)]
    s = P.summarize(rows)
    assert s["suites"]["libero_object"]["successes"] == 4
    assert s["tasks"]["libero_object/0"]["success_rate"] == 1.0
    assert s["tasks"]["libero_object/1"]["episodes"] == 3
    assert set(s["failures"]) == {"libero_object/1/1", "libero_object/1/2"}
    assert "libero_object" in P.format_summary(s)
    rows[-1]["policy_note"] = "no plan for 'open wooden_cabinet_1_top_region'"
    failures = P.summarize(rows)["failures"]
    assert failures["libero_object/1/2"] == ("step budget spent; the policy: no plan for "
                                             "'open wooden_cabinet_1_top_region'")
    report = P.report_markdown(P.summarize(rows), {"policy": "libero_oracle",
                                                   "cue_protocol": "conflict",
                                                   "cue_family": "F1"},
                               cue_table="AVF ...", skipped={"libero_10/4/0": "no partner"})
    assert "cue protocol `conflict` F1" in report and "## LIBERO-VIFO metrics" in report
    assert "- `libero_10/4/0`: no partner" in report and "the policy: no plan for" in report


def test_the_libero_graph_is_in_the_launch_table():
    from vla_bridge.ros.launch_args import get_graph
    graph = get_graph("libero_sim.launch.py")
    assert graph.node("sim_node").module == "vla_bridge.sim_nodes.sim_node"  # the one sim node
    assert graph.arg("sim_python").default.endswith(".venv-libero/bin/python")
    assert graph.arg("suite").sets == ("evaluator_node.suites",)
    assert (REPO / "launch" / "libero_sim.launch.py").is_file()


# ------------------------------------------------------------------ openpi's LIBERO keys


def test_openpi_libero_keys_arrive_at_a_test_server_with_the_documented_shapes():
    """What openpi's LIBERO client sends: observation/image and observation/wrist_image uint8
    HWC [224, 224, 3] (our upright images, resized with padding, not flipped again),
    observation/state float64 [8], prompt; actions [H, 7] back, LIBERO's gripper (-1 open,
    +1 close) converted to ours (1 open, 0 closed)."""
    from support.openpi_servers import FakeServer, serve_in_thread
    from vla_bridge.policy_nodes.openpi.client import OpenPIPolicy
    reply = np.zeros((10, 7), np.float32)
    reply[:, :6] = 0.25
    reply[:5, 6], reply[5:, 6] = -1.0, 1.0
    fake = FakeServer({"actions": reply})
    port, stop = serve_in_thread(fake)
    rng = np.random.default_rng(0)
    images = {c: rng.integers(0, 255, (256, 256, 3), np.uint8) for c in C.LIBERO_PANDA.camera_names}
    state = np.array([0.1, 0.0, 1.2, 3.1, 0.0, -0.1, 0.039, -0.039])
    try:
        policy = OpenPIPolicy("127.0.0.1", port, key_map="libero")
        assert policy.embodiment == C.LIBERO_PANDA.name
        policy.reset()
        policy.set_instruction("put the bowl on the plate")
        actions = policy.predict(Observation(state=state, images=images))
    finally:
        stop()
    sent = fake.last_obs
    assert set(sent) == {"observation/image", "observation/wrist_image", "observation/state",
                         "prompt"}
    for key, cam in (("observation/image", "cam_high"),
                     ("observation/wrist_image", "cam_left_wrist")):
        assert sent[key].shape == (224, 224, 3) and sent[key].dtype == np.uint8
        # 256 -> 224 without padding; orientation unchanged (the sim already sent it upright)
        small = np.asarray(__import__("PIL.Image", fromlist=["Image"]).fromarray(images[cam])
                           .resize((224, 224), resample=2), np.int16)
        assert np.abs(sent[key].astype(np.int16) - small).mean() < 3
    assert sent["observation/state"].shape == (8,) and sent["observation/state"].dtype == np.float64
    assert np.allclose(sent["observation/state"], state, atol=1e-6)
    assert sent["prompt"] == "put the bowl on the plate"
    assert actions.shape == (10, 7)
    assert np.allclose(actions[:, :6], 0.25)
    assert actions[:5, 6].tolist() == [1.0] * 5 and actions[5:, 6].tolist() == [0.0] * 5


# ------------------------------------------------------------------ LIBERO itself (.venv-libero)


@pytest.mark.graph
@needs_libero_venv
def test_catalog_matches_the_installed_libero():
    got = run_in_libero_venv("""
        import json
        from vla_bridge.sim_nodes.libero.catalog import catalog_from_libero, pro_catalog_from_libero
        print(json.dumps({"libero": catalog_from_libero(), "pro": pro_catalog_from_libero()}))
    """, timeout=900)
    # the four suites and libero_90 (conflict partners); LIBERO-PRO's suites in their own file
    assert got["libero"] == json.loads((REPO / "config" / P.CATALOG).read_text())
    assert got["pro"] == P.load_pro_catalog()


@pytest.mark.graph
@needs_libero_venv
def test_cameras_render_only_when_observed_with_pixel_identical_images():
    """Gated cameras (rendered only on the step before an observation) give the same images
    as robosuite rendering every step; states match; images are LIBERO's render turned as
    openpi's client turns it (`[::-1, ::-1]`); reading an unobserved step's images is an
    error."""
    got = run_in_libero_venv("""
        import json, numpy as np
        from vla_bridge.sim_nodes.libero.backend import LiberoBackend
        every, gated = LiberoBackend(render_every_step=True), LiberoBackend()
        for b in (every, gated):
            b.reset("libero_spatial", "3:5", 11)
        cams = ("cam_high", "cam_left_wrist")
        same = [all(np.array_equal(every.render(c), gated.render(c)) for c in cams)]
        upright = np.array_equal(gated.render("cam_high"),
                                 gated._obs["agentview_image"][::-1, ::-1])
        rng = np.random.default_rng(0)
        for k in range(12):
            act = np.concatenate([rng.uniform(-0.6, 0.6, 6), [k % 2]])
            observe = k % 6 == 5
            for b in (every, gated):
                if observe:
                    b.observe_next()
                b.apply(act); b.step()
            if observe:
                same.append(all(np.array_equal(every.render(c), gated.render(c)) for c in cams))
        try:
            every.step(); gated.step(); gated.render("cam_high"); refused = False
        except RuntimeError:
            refused = True
        out = {"same": same, "upright": upright, "refused": refused,
               "state": gated.joint_positions().tolist(),
               "state_diff": float(np.abs(every.joint_positions() - gated.joint_positions()).max()),
               "shape": list(gated._obs["agentview_image"].shape),
               "objects": sorted(gated.world_state().objects)}
        every.close(); gated.close()
        print(json.dumps(out))
    """)
    assert got["same"] == [True, True, True]
    assert got["upright"] and got["refused"]
    assert got["state_diff"] == 0.0 and len(got["state"]) == 8
    assert got["shape"] == [256, 256, 3]
    assert {"akita_black_bowl_1", "plate_1"} <= set(got["objects"])


@pytest.mark.graph
@needs_libero_venv
def test_a_cue_projected_in_libero_cameras_lands_on_a_rendered_marker():
    """A magenta sphere rendered by LIBERO in front of each camera (agentview and the wrist
    camera) is where the cue overlay projects its centre: camera poses from the world state
    after its round trip through the world-state message, intrinsics from the focal length
    the camera_info carries, the published image mirrored as openpi's client turns it. Within
    1.5 px; without the mirror it would land far off."""
    got = run_in_libero_venv("""
        import json, numpy as np
        from vla_bridge.ros import messages
        from vla_bridge.sim_nodes.libero.backend import LiberoBackend
        from vla_bridge.benchmarks.vifo.families import AnchorRef
        from vla_bridge.benchmarks.vifo.insertion import project_anchor
        from vla_bridge.benchmarks.vifo.replay import CueConditioner
        b = LiberoBackend()
        b.reset("libero_goal", "8:0", 7)
        m, d = b.env.sim.model, b.env.sim.data
        site = m.site_name2id("main_table_plate_region")  # a table site, made a visible marker
        body = int(m.site_bodyid[site])
        R, t = np.asarray(d.xmat[body]).reshape(3, 3), np.asarray(d.xpos[body])
        out = {}
        for cam, ahead, radius in (("cam_high", (0.05, 0.04, -0.40), 0.008),
                                   ("cam_left_wrist", (0.02, 0.015, -0.15), 0.004)):
            pose = b.camera_model(cam).world_from_camera
            marker = pose[:3, 3] + pose[:3, :3] @ np.array(ahead)  # up-right of the centre
            m.site_pos[site] = R.T @ (marker - t)
            m.site_rgba[site] = [1.0, 0.0, 1.0, 1.0]
            m.site_size[site] = [radius] * 3
            m.site_type[site] = 2  # a sphere
            b.observe_next(); b.apply(np.array([0, 0, 0, 0, 0, 0, 1.0])); b.step()
            img = b.render(cam).astype(int)
            mask = (img[..., 0] - img[..., 1] > 60) & (img[..., 2] - img[..., 1] > 60)
            ys, xs = np.nonzero(mask)
            world = messages.msg_to_world_state(messages.world_state_to_msg(b.world_state()))
            focal = {cam: b.camera_model(cam).focal_px}
            anchor = AnchorRef(point=tuple(marker))
            errors = {}
            for mirrored in (True, False):
                model = CueConditioner(None, mirrored=mirrored).camera_models(
                    {cam: img}, None, focal, world)[cam]
                a = project_anchor(anchor, world, model)
                errors[str(mirrored)] = (float(np.hypot(a.uv[0] - xs.mean(), a.uv[1] - ys.mean()))
                                         if a is not None else None)
            out[cam] = {"pixels": int(mask.sum()), "error_px": errors}
        b.close()
        print(json.dumps(out))
    """)
    for cam, r in got.items():
        assert r["pixels"] >= 20, (cam, r)  # the marker is in view
        assert r["error_px"]["True"] < 1.5, (cam, r)
        assert r["error_px"]["False"] is None or r["error_px"]["False"] > 10, (cam, r)


@pytest.mark.graph
@needs_libero_venv
@pytest.mark.slow
def test_a_libero_episode_through_the_graph_is_scored_by_libero_predicates(tmp_path):
    """`vla-bridge launch libero_sim`: the LIBERO sim node from .venv-libero, the policy node
    (LIBERO oracle) and the LIBERO evaluator from this venv, over DDS; LIBERO's goal predicates
    decide the episode, and the run directory holds the row, the per-suite summary and the
    report."""
    out = tmp_path / "run"
    rows = launch_libero_graph(out, "--suite", "libero_object", "--tasks", "0", "--inits", "0")
    assert len(rows) == 1
    row = rows[0]
    assert row["episode"] == "libero_object/0/0" and row["success"] is True
    assert row["reason"] == "success (LIBERO's goal predicates hold)"
    assert row["steps"] < 280 and row["calls"] == math.ceil(row["steps"] / 5)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suites"]["libero_object"]["successes"] == 1
    assert summary["suites"]["libero_object"]["ci95"][1] == 1.0
    assert json.loads((out / "run.json").read_text())["embodiment"] == "libero_panda"
    assert "| libero_object | 1 | 100.0 |" in (out / "report.md").read_text()


@pytest.mark.graph
@needs_libero_venv
@pytest.mark.slow
def test_libero_vifo_protocols_through_the_graph(tmp_path):
    """LIBERO-VIFO on LIBERO: under `conflict` the policy reads the cued images (the cue
    shows libero_object task 0, the language names its conflict partner) and LIBERO's
    predicates score both tasks; a language-following oracle does the language task only
    (LFR 100, UVF 0). Under `authorized` a cue-following oracle does the cue's task from the
    cue alone (AVF 100). The cue is drawn into both cameras; a resume with another cue family
    is refused, naming the difference."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "test"),
                                                         os.environ.get("PYTHONPATH", "")])}

    def launch(out, *args):
        return subprocess.run([sys.executable, "-m", "vla_bridge.cli", "launch", "libero_sim",
                               "--suite", "libero_object", "--tasks", "0", "--inits", "0",
                               "--output", str(out), "--timeout", "240",
                               "image_source:=cued", *args],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=280)

    conflict = tmp_path / "conflict"
    proc = launch(conflict, "cue_protocol:=conflict", "cue_family:=F7")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    [row] = [json.loads(line) for line in (conflict / "results.jsonl").read_text().splitlines()]
    partner = row["language_task"]
    assert row["cue_task"] == "libero_object/0" and partner.startswith("libero_object/")
    assert row["instruction"] == P.load_catalog()["libero_object"][int(partner.split("/")[1])][
        "instruction"]
    assert row["scores"]["language"] == {"task": partner, "complete": True}
    assert row["scores"]["cue"] == {"task": "libero_object/0", "complete": False}
    assert row["success"] is True and "the language task's goal holds" in row["reason"]
    overlay = row["overlay"]
    assert overlay["observations"] == row["calls"] and overlay["dropped"] == 0
    assert all(overlay["changed_fraction"][c] > 0.001 for c in ("cam_high", "cam_left_wrist"))
    assert sorted(p.name for p in (conflict / "cue_frames").iterdir()) == \
        ["libero_object_0_cam_high.png", "libero_object_0_cam_left_wrist.png"]
    table = (conflict / "cue_table.txt").read_text()
    assert "LFR" in table and "instances: F7/outline 1" in table
    metrics = json.loads((conflict / "cue_metrics.json").read_text())
    assert (metrics["overall"]["lfr"], metrics["overall"]["uvf"]) == (100.0, 0.0)
    run = json.loads((conflict / "run.json").read_text())
    assert run["status"] == "finished" and run["provenance"]["hardware"] == "sim:libero"
    assert run["trials"][0]["language_task"] == partner

    authorized = tmp_path / "authorized"
    proc = launch(authorized, "cue_protocol:=authorized", "cue_family:=F2",
                  "cue_variant:=numbered", "oracle_follow:=cue")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    [row] = [json.loads(line) for line in (authorized / "results.jsonl").read_text().splitlines()]
    assert row["instruction"] == "Follow the visual cue in the observation and complete the task."
    assert row["language_task"] is None and row["scores"]["cue"]["complete"] is True
    assert json.loads((authorized / "cue_metrics.json").read_text())["overall"]["avf"] == 100.0

    proc = launch(authorized, "cue_protocol:=authorized", "cue_family:=F1",
                  "oracle_follow:=cue")
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "cannot resume" in said and "'family': 'F2'" in said and "'family': 'F1'" in said


def test_junk_protocol_input_is_rejected_with_one_clear_error():
    """A begin task's malformed goals are refused naming the problem before anything runs (a
    run's unknown cue family or protocol: test/evaluation/test_libero_run.py). The check
    needs no LIBERO: it runs before the backend loads a scene."""
    from vla_bridge.sim_nodes.libero.backend import LiberoBackend
    check = LiberoBackend().check_watch
    assert check({"scene": "libero_goal"}) is None
    goals = {"language": [["on", "a_1", "b_1"]], "cue": [["turnon", "flat_stove_1"]]}
    assert check({"goals": goals, "end_on": "cue"}) == (goals, "cue")
    for junk, says in (({"hijack": [["on", "a", "b"]]}, "must map 'language' / 'cue'"),
                       ({"cue": "turn on the stove"}, "list of predicates"),
                       ({"cue": [["on", "a_1", 3]]}, "list of predicates"),
                       ({"cue": []}, "list of predicates")):
        with pytest.raises(ValueError, match=says):
            check({"goals": junk})
    with pytest.raises(ValueError, match="end_on 'cue' names no watched goal"):
        check({"goals": {"language": [["on", "a_1", "b_1"]]}, "end_on": "cue"})
    with pytest.raises(ValueError, match="unknown LIBERO suite 'libero_nope'"):
        LiberoBackend().step_budget("libero_nope")

def test_libero_gripper_on_the_openpi_wire_round_trips():
    from vla_bridge.policy_nodes.openpi import wire as ob
    chunk = np.zeros((3, 7))
    chunk[:, 6] = [1.0, 0.0, 0.25]  # ours: 1 open, 0 closed
    wire = ob.actions_to_wire(chunk, "libero")
    assert wire.dtype == np.float32 and wire[:, 6].tolist() == [-1.0, 1.0, 0.5]  # LIBERO's
    np.testing.assert_allclose(ob.actions_from_wire(wire, "libero"), chunk, atol=1e-6)


class LiberoNudge:
    """A LIBERO-keyed test policy: nudges +x with the gripper closing (what it was sent is kept)."""
    needs_world_state = False
    embodiment = "libero_panda"
    seen: list = []

    def __init__(self, chunk_size: int = 5, **_):
        self.chunk_size = chunk_size

    def reset(self):
        pass

    def set_instruction(self, instruction, task=None):
        self.instruction = instruction

    def predict(self, obs):
        LiberoNudge.seen.append((obs.state.copy(), {c: i.shape for c, i in obs.images.items()},
                                 self.instruction))
        return np.tile([0.5, 0, 0, 0, 0, 0, 0.0], (self.chunk_size, 1))


def test_vla_bridge_serve_serves_a_libero_keyed_policy_to_the_openpi_backend():
    """`vla-bridge serve --key-map libero`: LIBERO keys in, [H, 7] out in LIBERO's gripper
    convention; the graph's openpi backend turns them back into ours. A backend of another
    embodiment behind the LIBERO key map is refused, naming both."""
    from support.openpi_servers import serve_in_thread
    from vla_bridge.policy_nodes.openpi.client import OpenPIPolicy
    from vla_bridge.policy_nodes.openpi.serve import PolicyServer
    with pytest.raises(C.EmbodimentMismatch, match="key map 'libero' speaks libero_panda.*"
                                                   "policy backend 'hold' speaks aloha_piper"):
        PolicyServer("hold", key_map="libero")
    server = PolicyServer("test_libero:LiberoNudge", chunk_size=5, key_map="libero")
    meta = server.metadata()
    assert meta["action_dim"] == 7 and meta["embodiment"] == "libero_panda"
    port, stop = serve_in_thread(server)
    state = np.arange(8) / 10
    images = {c: np.zeros((256, 256, 3), np.uint8) for c in C.LIBERO_PANDA.camera_names}
    try:
        client = OpenPIPolicy("127.0.0.1", port, key_map="libero")
        client.reset()
        client.set_instruction("open the drawer")
        actions = client.predict(Observation(state=state, images=images))
    finally:
        stop()
    seen_state, shapes, prompt = LiberoNudge.seen[-1]
    np.testing.assert_allclose(seen_state, state, atol=1e-6)
    assert shapes == {"cam_high": (224, 224, 3), "cam_left_wrist": (224, 224, 3)}
    assert prompt == "open the drawer"
    assert actions.shape == (5, 7) and actions[0].tolist() == [0.5, 0, 0, 0, 0, 0, 0.0]


def test_oracle_rotations_and_goals_it_has_no_plan_for():
    from vla_bridge.policy_nodes.oracle import libero as O
    rng = np.random.default_rng(1)
    for _ in range(20):
        v = rng.normal(size=3)
        v *= rng.uniform(0.01, 3.1) / np.linalg.norm(v)
        np.testing.assert_allclose(O.matrix_to_axis_angle(O.axis_angle_to_matrix(v)), v, atol=1e-9)
    oracle = O.LiberoOracle(chunk_size=5)
    oracle.set_instruction("open the drawer", {"goal": [["open", "wooden_cabinet_1_top_region"]]})
    assert oracle.phase == "hold" and oracle.note == "no plan for 'open wooden_cabinet_1_top_region'"
    obs = Observation(state=np.array([0, 0, 1, np.pi, 0, 0, 0.04, -0.04]))
    assert oracle.predict(obs).tolist() == [[0, 0, 0, 0, 0, 0, 1.0]] * 5  # holds, open
    # placements first, then the knob; a drawer to close is skipped and named
    oracle.set_instruction("two goals", {"goal": [["turnon", "flat_stove_1"],
                                                  ["on", "moka_pot_1", "flat_stove_1"],
                                                  ["close", "microwave_1"]]})
    assert oracle.phase == "approach" and oracle.goals == [["on", "moka_pot_1", "flat_stove_1"],
                                                           ["turnon", "flat_stove_1"]]
    assert oracle.note == "no plan for 'close microwave_1'"
    # the LIBERO-VIFO protocols: the language task, the cue's with follow="cue", none at all
    follower = O.LiberoOracle(follow="cue")
    follower.set_instruction("put the bowl on the plate", {"goal": [["on", "a_1", "b_1"]]},
                             cue_task={"goal": [["turnon", "flat_stove_1"]]})
    assert follower.goals == [["turnon", "flat_stove_1"]]
    quiet = O.LiberoOracle()
    quiet.set_instruction("", {"goal": None, "goals": {"cue": [["on", "a_1", "b_1"]]}})
    assert quiet.phase == "hold" and quiet.note == "the language names no task"
    with pytest.raises(ValueError, match="follow must be one of"):
        O.LiberoOracle(follow="both")


def _flat_box_world(size):
    from vla_bridge.embodiment.world import ObjectState, WorldState
    box = ObjectState("cream_cheese_1", np.array([0.055, -0.103, 0.009]), np.array([1., 0, 0, 0]),
                      np.array(size))
    basket = ObjectState("basket_1", np.array([0.0, 0.25, 0.03]), np.array([1., 0, 0, 0]),
                         np.array([0.12, 0.12, 0.06]))
    region = ObjectState("basket_1_contain_region", np.array([0.0, 0.25, 0.02]),
                         np.array([1., 0, 0, 0]), np.zeros(3))
    return WorldState(0.0, {o.name: o for o in (box, basket, region)}, {})


def _hand_at(pos, world):
    return Observation(state=np.array([*pos, np.pi, 0, 0, 0.04, -0.04]), world=world)


def _stuck_descent(oracle, size, stuck_z=0.044, calls=8):
    """Plan from the home pose, arrive above the object, then report the hand at `stuck_z`
    for `calls` calls; the plans' grasp points seen, in order."""
    world = _flat_box_world(size)
    oracle.set_instruction("put it in the basket", {"goal": [["in", "cream_cheese_1",
                                                              "basket_1_contain_region"]]})
    oracle.predict(_hand_at([-0.15, 0.0, 0.26], world))
    grasps = [oracle.plan["grasp"].copy()]
    oracle.predict(_hand_at(oracle.plan["above"], world))
    assert oracle.phase == "descend"
    for _ in range(calls):
        oracle.predict(_hand_at([*oracle.plan["grasp"][:2], stuck_z], world))
        if oracle.plan["grasp"][0] != grasps[-1][0]:
            grasps.append(oracle.plan["grasp"].copy())
    return grasps


def test_oracle_grasps_a_long_flat_box_at_its_near_end_when_its_descent_is_stuck():
    """LIBERO's cream cheese (8.1 x 4.3 x 1.8 cm) far out: the top-down descent stops 3.2 cm
    above the centre grasp (the arm's reach); the oracle then grasps its end toward the robot."""
    from vla_bridge.policy_nodes.oracle import libero as O
    oracle = O.LiberoOracle()
    grasps = _stuck_descent(oracle, [0.081, 0.043, 0.018])
    assert len(grasps) == 2, "the stuck descent was never re-planned"
    np.testing.assert_allclose(grasps[0][:2], [0.055, -0.103])  # the centre first
    np.testing.assert_allclose(grasps[1], [0.055 - 0.0405 + O.NEAR_END_INSET_M, -0.103,
                                           grasps[0][2]])  # the -x end: toward the robot
    assert oracle.phase == "approach" and "near end" in oracle.note
    assert oracle.plan["near_end"] is True
    # the place keeps the grasp's offset, so the box still lands centred over the basket
    np.testing.assert_allclose(oracle.plan["place"][:2] - oracle.plan["grasp"][:2],
                               [0.0, 0.25] - np.array([0.055, -0.103]))
    # once per goal: stuck again above the near end, it waits there (no third grasp)
    world = _flat_box_world([0.081, 0.043, 0.018])
    oracle.predict(_hand_at(oracle.plan["above"], world))
    for _ in range(8):
        oracle.predict(_hand_at([*grasps[1][:2], 0.044], world))
    assert oracle.phase == "descend"
    np.testing.assert_allclose(oracle.plan["grasp"], grasps[1])
    # a stall within STUCK_Z_M of the grasp point is a done descent, as before
    low = O.LiberoOracle()
    assert len(_stuck_descent(low, [0.081, 0.043, 0.018], stuck_z=0.012 + 0.015, calls=3)) == 1
    assert low.phase not in ("approach", "descend")
    # a square footprint is never re-planned: the descent waits, as before
    square = O.LiberoOracle()
    assert len(_stuck_descent(square, [0.05, 0.05, 0.018])) == 1
    assert square.phase == "descend" and square.plan["near_end"] is None
