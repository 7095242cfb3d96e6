"""Operator cards (benchmarks.perturbation_cards, `vla-bridge perturb`): each axis's card names
the quantities the operator changes, equal to the draws the sim makes from the same seed."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vla_bridge import contract
from vla_bridge.benchmarks import perturbation_cards as cards
from vla_bridge.benchmarks.perturbations import (AXES, EpisodePerturbation, Perturbation,
                                                  pair_start)
from vla_bridge.benchmarks.robofollow.scenes import load_scene
from vla_bridge.cli import main as cli_main
from vla_bridge.embodiment.workcell import home_command

SEED = 539


def _card(spec: str, seed: int = SEED, **kw) -> dict:
    return cards.card(cards.parse_spec(spec), seed, **kw)


def _draws(spec: str, seed: int = SEED) -> EpisodePerturbation:
    return EpisodePerturbation(cards.parse_spec(spec), seed)


def test_camera_card_is_the_sims_shift_and_turn():
    c = _card("camera:3")
    shift, turn = _draws("camera:3").camera_offset()
    assert c["camera"] == "cam_high"
    assert c["shift_cm"] == pytest.approx(100 * shift, abs=0.006)
    described = _draws("camera:3").describe()  # what the rows record
    assert c["turn_deg"] == pytest.approx(described["turn_deg"]) == pytest.approx(7.5)
    assert c["turn_axis"] == pytest.approx(described["turn_axis"], abs=6e-4)
    assert np.linalg.norm(c["turn_components_deg"]) == pytest.approx(7.5, abs=0.02)
    dx, dy, dz = c["shift_cm"]
    assert c["steps"][0] == (f"Move the high camera (cam_high) by dx {dx:+.2f} cm, "
                             f"dy {dy:+.2f} cm, dz {dz:+.2f} cm.")
    assert "by 7.50 deg about the axis" in c["steps"][1]
    assert "recalibrate the tracker" in c["steps"][2]


def test_lighting_card_is_the_sims_intensity_and_lamp_shift():
    for level in (1, 4):
        c = _card(f"lighting:{level}")
        gain, shift = _draws(f"lighting:{level}").light_change()
        assert c["intensity_percent"] == pytest.approx(100 * gain)
        assert abs(c["intensity_percent"] - 100) == pytest.approx(15 * level)
        assert c["lamp_shift_m"] == pytest.approx(shift[:2], abs=5e-4)
        assert np.hypot(*c["lamp_shift_m"]) == pytest.approx(0.25 * level, abs=1e-3)
        verb = "Dim" if gain < 1 else "Brighten"
        assert c["steps"][0] == f"{verb} the lights to {100 * gain:.0f} % of their usual intensity."
        assert c["steps"][1].startswith(f"Move the lamp by dx {shift[0]:+.3f} m, "
                                        f"dy {shift[1]:+.3f} m")


def test_texture_card_covers_the_table_then_the_floor():
    one, two = _card("texture:1"), _card("texture:2")
    assert one["surfaces"] == list(_draws("texture:1").texture_surfaces()) == ["table"]
    assert two["surfaces"] == ["table", "floor"]
    assert one["steps"][0] == "Cover the table top with a patterned cloth (not the usual surface)."
    assert "floor and the background" in two["steps"][1]
    assert not any("floor" in step for step in one["steps"])


def test_initial_joints_card_is_the_sims_start_in_degrees():
    c = _card("initial_joints:4")
    p = _draws("initial_joints:4")
    start = pair_start(home_command(), p)  # what the MuJoCo / SAPIEN backends start at
    drawn = p.joint_offsets(12)  # left arm [0:6], right arm [6:12]
    home = home_command()
    for i, arm in enumerate(contract.ARMS):
        base = i * contract.JOINTS_PER_ARM
        entry = c["arms"][arm]
        assert entry["joints"] == list(contract.ARM_JOINTS)
        assert entry["target_deg"] == pytest.approx(np.degrees(start[base:base + 6]), abs=0.006)
        assert entry["home_deg"] == pytest.approx(np.degrees(home[base:base + 6]), abs=0.006)
        unclipped = [k for k, j in enumerate(contract.ARM_JOINTS) if j not in entry["clipped"]]
        assert len(unclipped) >= 4
        for k in unclipped:  # the drawn offset itself
            assert entry["offset_deg"][k] == pytest.approx(np.degrees(drawn[6 * i + k]), abs=0.006)
        assert max(abs(v) for v in entry["offset_deg"]) <= np.degrees(0.2) + 1e-9
        first = entry["target_deg"][0]
        assert c["steps"][i].startswith(f"Jog the {arm} arm to joint1 {first:+.2f} deg, joint2 ")
        assert c["steps"][i].endswith("gripper open.")
    # seed 539 at level 4 draws the left joint5 past its range: the card stops where the sim does
    assert c["arms"]["left"]["clipped"] == ["joint5"] and c["arms"]["right"]["clipped"] == []
    assert "; joint5 stops at the end of its range, as in the sim" in c["steps"][0]
    assert np.degrees(home[4] + drawn[4]) > c["arms"]["left"]["target_deg"][4]


def test_object_jitter_card_moves_every_layout_object_by_its_draw():
    scene, layout = "scene2", "default"
    c = _card("object_jitter:3", scene=scene, layout=layout)
    spec = load_scene(scene)
    names = [o.name for o in spec.layout_objects(layout)]
    offsets = _draws("object_jitter:3").object_offsets(names)
    nominal = spec.layout(layout).nominal_xy()
    assert list(c["objects"]) == names and (c["scene"], c["layout"]) == (scene, layout)
    for (name, entry), step in zip(c["objects"].items(), c["steps"]):
        assert entry["offset_cm"] == pytest.approx(100 * offsets[name], abs=0.006)
        assert entry["card_xy_m"] == pytest.approx(nominal[name], abs=1e-4)
        assert entry["target_xy_m"] == pytest.approx(nominal[name] + offsets[name], abs=1e-4)
        assert 0.5 * 3 - 1e-6 <= np.hypot(*entry["offset_cm"]) <= 1.0 * 3 + 0.01
        assert step.startswith(f"Move {name} by dx {entry['offset_cm'][0]:+.2f} cm, ")


@pytest.mark.parametrize("axis", ["image_noise", "image_blur"])
def test_image_axes_are_software_and_say_the_real_graph_lacks_them(axis):
    c = _card(f"{axis}:2")
    assert c["software"] is True
    assert c["steps"][0].startswith(f"Nothing to change in the cell: {axis} is a software axis")
    assert "The real graph does not apply it yet" in c["steps"][1]
    described = _draws(f"{axis}:2").describe()
    key = "sigma" if axis == "image_noise" else "sigma_px"
    assert c[key] == described[key] == (10.0 if axis == "image_noise" else 1.5)


@pytest.mark.parametrize("axis", sorted(AXES))
def test_same_seed_same_card_another_seed_another(axis):
    from vla_bridge.embodiment import libero_assets
    if axis == "distractors" and not libero_assets.available():
        pytest.skip("the distractors' card needs LIBERO's assets (bash scripts/setup.sh libero)")
    spec = f"{axis}:2"
    assert _card(spec, 7) == _card(spec, 7)
    assert cards.card_text(_card(spec, 7)) == cards.card_text(_card(spec, 7))
    if axis in ("texture", "image_noise", "image_blur"):  # nothing drawn the operator sees
        assert _card(spec, 7)["steps"] == _card(spec, 8)["steps"]
    else:
        assert _card(spec, 7)["steps"] != _card(spec, 8)["steps"]


def test_level_zero_is_no_change_and_bad_specs_are_refused():
    assert _card("camera:0")["steps"] == ["Level 0 is no change: set the trial up as usual."]
    for text, message in [("camera", "AXIS:LEVEL"), ("camera:9", "levels 0..4"),
                          ("camra:1", "unknown perturbation axis"), ("", "AXIS:LEVEL")]:
        with pytest.raises(ValueError, match=message):
            cards.parse_spec(text)
    assert cards.parse_spec("texture:2") == Perturbation("texture", 2)


def test_perturb_list_and_card_commands(capsys):
    assert cli_main(["perturb", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(AXES)
    assert listed[2].split()[:3] == ["texture", "levels", "0-2"]
    assert cli_main(["perturb", "card", "lighting:2", "--seed", str(SEED)]) == 0
    text = capsys.readouterr().out
    assert text == cards.card_text(_card("lighting:2"))
    assert text.startswith(f"Operator card: lighting:2, seed {SEED}\n")
    assert cli_main(["perturb", "card", "object_jitter:1", "--seed", "3", "--scene", "scene3",
                     "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(
        _card("object_jitter:1", 3, scene="scene3")))
    assert cli_main(["perturb", "card", "object_jitter:1", "--seed", "3", "--layout", "nope"]) == 2
    assert capsys.readouterr().err.startswith("vla-bridge perturb card: unknown layout 'nope'")
