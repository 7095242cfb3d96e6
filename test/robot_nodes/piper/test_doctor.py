"""`vla-bridge doctor` on the PiPER firmware emulator through the real piper_sdk: a healthy fake
passes every check, each injected bring-up fault is named by exactly the check(s) it breaks,
nothing that moves an arm reaches the bus, and bad input is one line."""
from __future__ import annotations

import re
import subprocess
import time
import uuid

import pytest

from vla_bridge.cli import main as cli_main
from vla_bridge.robot_nodes.piper import doctor as D
from vla_bridge.robot_nodes.piper.fake_faults import FAULTS, parse_faults
from vla_bridge.robot_nodes.piper.fake_piper import FakePiper

pytestmark = pytest.mark.filterwarnings("ignore:The 'bustype' argument is deprecated")

ARM_CHECKS = ["can", "frames", "firmware", "status", "mode", "limits", "rate", "gripper",
              "joints", "enable", "estop"]


def _doctor(capsys, *args: str) -> tuple[int, list[str]]:
    code = cli_main(["doctor", *args])
    out = capsys.readouterr().out.strip().splitlines()
    return code, out


def _statuses(lines: list[str]) -> dict[str, str]:
    """{check name: status} of the check lines (the summary line left out)."""
    out = {}
    for line in lines:
        status, _, rest = line.partition(" ")
        if status in D.STATUSES:
            out[rest.split(":", 1)[0]] = status
    return out


def test_healthy_fake_passes_every_check(capsys):
    code, lines = _doctor(capsys, "--fake")
    statuses = _statuses(lines)
    assert code == 0, "\n".join(lines)
    expected = [f"{arm}.{c}" for arm in ("left", "right") for c in ARM_CHECKS]
    expected += ["camera.cam_high", "camera.cam_left_wrist", "camera.cam_right_wrist",
                 "calibration"]
    assert list(statuses) == expected
    assert set(statuses.values()) == {"PASS"}, "\n".join(lines)
    assert lines[-1] == f"doctor (fake hardware): {len(expected)} PASS, 0 WARN, 0 FAIL"
    assert "—" not in "\n".join(lines)  # a PASS carries no fix


#: fault -> the checks it must turn (every other check passes); exit status
FAULT_EXPECTED = {
    "silent": ({"left.frames": "FAIL"}, 1),
    "feedback_offset": ({"left.frames": "FAIL"}, 1),
    "refuse_enable": ({"left.enable": "FAIL"}, 1),
    "zero_joints": ({"left.joints": "WARN"}, 0),
    "gripper_lag": ({"left.gripper": "FAIL"}, 1),
    "corrupt_limits": ({"left.limits": "FAIL"}, 1),
    "leader": ({"left.mode": "FAIL", "left.enable": "WARN"}, 1),
    "drop_estop": ({"left.estop": "FAIL"}, 1),
    "low_rate": ({"left.rate": "FAIL", "left.gripper": "FAIL"}, 1),
}
#: words of the FAIL/WARN line that say what was seen
FAULT_WORDS = {
    "silent": "no frames at all", "feedback_offset": "but no feedback ids",
    "refuse_enable": "did not report enabled", "zero_joints": "every joint reads exactly 0",
    "gripper_lag": "0x2A8 at ~20 Hz", "corrupt_limits": "joint2 [0, 0] deg",
    "leader": "linkage teaching input (leader)", "drop_estop": "never reported an emergency stop",
    "low_rate": "0x2A7 at ~50 Hz",
}
RATE_WORDS = re.compile(r"^(.*) at ~(\d+) Hz$")  # a measured rate: within 20 % (a loaded CI)


def _names_fault(line: str, words: str) -> bool:
    rate = RATE_WORDS.match(words)
    if rate is None:
        return words in line
    seen = re.search(re.escape(rate.group(1)) + r" at (\d+) Hz", line)
    return seen is not None and abs(int(seen.group(1)) / int(rate.group(2)) - 1) <= 0.2


def test_every_fault_has_an_expectation():
    assert set(FAULT_EXPECTED) == set(FAULTS) == set(FAULT_WORDS)


@pytest.mark.parametrize("fault", sorted(FAULT_EXPECTED))
def test_doctor_names_each_injected_fault(fault, capsys):
    code, lines = _doctor(capsys, "--fake", "--arms", "left", "--inject", fault,
                          "--skip", "cameras,calibration")
    expected, expected_code = FAULT_EXPECTED[fault]
    statuses = _statuses(lines)
    assert {n: s for n, s in statuses.items() if s != "PASS"} == expected, "\n".join(lines)
    assert code == expected_code
    named = [line for line in lines if line.split(" ", 1)[0] != "PASS"
             and line.split(" ", 2)[1].rstrip(":") in expected
             and _names_fault(line, FAULT_WORDS[fault])]
    assert named and all(" — " in line for line in named), "\n".join(lines)  # with its fix
    assert f"injected left: {fault}" in lines[-1]
    if fault == "zero_joints":  # a warning fails only with --strict
        assert _doctor(capsys, "--fake", "--arms", "left", "--inject", fault, "--skip",
                       "cameras,calibration", "--strict")[0] == 1


def test_inject_targets_one_arm(capsys):
    code, lines = _doctor(capsys, "--fake", "--inject", "right:drop_estop", "--skip",
                          "cameras,calibration", "--no-enable-test")
    statuses = _statuses(lines)
    assert code == 1 and statuses["right.estop"] == "FAIL" and statuses["left.estop"] == "PASS"

# --------------------------------------------------------------- what reaches the arm


@pytest.fixture
def fake():
    f = FakePiper(f"test_doctor_{uuid.uuid4().hex[:8]}", initial_joints=[0.1, 0.8, -0.9, 0, 1, 0])
    yield f.start()
    f.stop()


def test_doctor_sends_only_queries_and_the_stop_to_a_resting_arm(fake):
    checks = D.check_arm("left", fake.channel, "virtual", D.ArmCheckOptions(enable_test=False))
    assert [c.status for c in checks] == ["PASS"] * len(ARM_CHECKS), [c.line() for c in checks]
    names = {f.name for f in fake.frames()}
    assert names == {"query_motor_limits", "firmware_read", "motion_ctrl_1"}
    stops = [f.fields["emergency_stop"] for f in fake.frames("motion_ctrl_1")]
    assert stops == [0x01, 0x02]  # the stop, then the resume
    state = fake.state()
    assert not state.emergency_stopped and not any(state.joints_enabled)


def test_enable_test_enables_and_disables_without_motion(fake):
    checks = D.check_arm("left", fake.channel, "virtual", D.ArmCheckOptions(enable_test=True))
    assert {c.name: c.status for c in checks}["left.enable"] == "PASS"
    names = {f.name for f in fake.frames()}
    assert names == {"query_motor_limits", "firmware_read", "motion_ctrl_1", "motor_enable"}
    assert not any(fake.state().joints_enabled)


def test_an_enabled_arm_is_neither_stopped_nor_disabled(fake):
    fake.handle(0x471, bytes([7, 0x02]))  # as if a graph had enabled it
    time.sleep(0.1)
    checks = {c.name: c for c in D.check_arm("left", fake.channel, "virtual",
                                             D.ArmCheckOptions(enable_test=True))}
    enable, estop = checks["left.enable"], checks["left.estop"]
    assert enable.status == "PASS" and "enabled (holding)" in enable.seen
    assert estop.status == "WARN" and "skipped" in estop.seen
    assert not fake.frames("motion_ctrl_1")  # no stop
    assert len(fake.frames("motor_enable")) == 1  # the test's own: doctor sent none
    assert all(fake.state().joints_enabled)


def test_no_estop_test_sends_no_stop(fake):
    checks = D.check_arm("left", fake.channel, "virtual",
                         D.ArmCheckOptions(enable_test=False, estop_test=False))
    assert checks[-1].status == "WARN" and not fake.frames("motion_ctrl_1")

# ---------------------------------------------------------------- the CAN interface

IP_OK = """5: can_left: <NOARP,UP,LOWER_UP,ECHO> mtu 16 qdisc pfifo_fast state UP mode DEFAULT
    link/can  promiscuity 0 minmtu 0 maxmtu 0
    can state ERROR-ACTIVE (berr-counter tx 0 rx 0) restart-ms 0
          bitrate 1000000 sample-point 0.875
"""


def _sysfs(tmp_path, state: str):
    (tmp_path / "can_left").mkdir(exist_ok=True)
    (tmp_path / "can_left" / "operstate").write_text(state + "\n")
    return str(tmp_path)


@pytest.mark.parametrize("operstate, ip_text, status, words", [
    ("up", IP_OK, "PASS", "bitrate 1000000, bus ERROR-ACTIVE"),
    ("down", IP_OK, "FAIL", "is down"),
    ("up", IP_OK.replace("1000000", "500000"), "FAIL", "bitrate 500000"),
    ("up", IP_OK.replace("ERROR-ACTIVE", "BUS-OFF"), "FAIL", "bus BUS-OFF"),
    ("unknown", IP_OK.replace("ERROR-ACTIVE", "ERROR-PASSIVE"), "WARN", "ERROR-PASSIVE"),
])
def test_socketcan_interface_state_and_bitrate(tmp_path, operstate, ip_text, status, words):
    check = D.check_can_interface("left.can", "can_left", "socketcan",
                                  sys_root=_sysfs(tmp_path, operstate),
                                  ip_details=lambda _: ip_text)
    assert check.status == status and words in check.seen, check.line()
    if status != "PASS":
        assert "ip link set can_left" in check.fix or "acknowledged" in check.fix


def test_missing_interface_and_unreadable_bitrate(tmp_path):
    missing = D.check_can_interface("left.can", "can_left", "socketcan", sys_root=str(tmp_path))
    assert missing.status == "FAIL" and "does not exist" in missing.seen

    def no_ip(_):
        raise subprocess.CalledProcessError(1, "ip")

    check = D.check_can_interface("left.can", "can_left", "socketcan",
                                  sys_root=_sysfs(tmp_path, "up"), ip_details=no_ip)
    assert check.status == "WARN" and "bitrate unknown" in check.seen
    assert D.parse_ip_details(IP_OK) == (1_000_000, "ERROR-ACTIVE")
    assert D.parse_ip_details("nothing") == (None, None)

# ---------------------------------------------------------------- limits and lines

SDK_DEG = {1: (-150.0, 150.0), 2: (0.0, 179.9), 3: (-170.0, 0.0), 4: (-100.0, 100.0),
           5: (-70.0, 70.0), 6: (-120.0, 120.0)}


def test_limit_rules():
    assert D.check_limits("l", SDK_DEG).status == "PASS"
    narrower = {**SDK_DEG, 4: (-80.0, 100.0)}  # inside the SDK's, outside the filter's range
    check = D.check_limits("l", narrower)
    assert check.status == "FAIL" and "joint4 [-80, 100] deg" in check.seen and \
        "narrower than the safety filter" in check.seen
    check = D.check_limits("l", {**SDK_DEG, 5: (-72.0, 72.0)})
    assert check.status == "WARN" and "joint5" in check.seen
    check = D.check_limits("l", {k: v for k, v in SDK_DEG.items() if k != 3})
    assert check.status == "WARN" and "no answer for joint 3" in check.seen
    assert D.check_limits("l", {}).status == "WARN"


def test_check_lines_and_exit_codes():
    ok, warn = D.Check("PASS", "a", "fine", "never shown"), D.Check("WARN", "b", "odd", "do X")
    assert ok.line() == "PASS a: fine" and warn.line() == "WARN b: odd — do X"
    assert D.exit_code([ok, warn]) == 0 and D.exit_code([ok, warn], strict=True) == 1
    assert D.exit_code([ok, D.Check("FAIL", "c", "bad", "fix")]) == 1
    with pytest.raises(ValueError):
        D.Check("OK", "a", "b")
    with pytest.raises(ValueError, match="unknown fake_piper fault"):
        parse_faults("leader,typo")
    assert parse_faults(" leader , leader,silent") == ("leader", "silent")

# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize("args, words", [
    (["--fake", "--inject", "nonsense"], "unknown fake_piper fault(s) nonsense; known: silent"),
    (["--inject", "silent"], "--inject needs --fake"),
    (["--fake", "--inject", "middle:silent"], "arm 'middle' is not checked"),
    (["--fake", "--arms", "up"], "arms must be a comma-separated subset"),
    (["--fake", "--skip", "arm"], "--skip: unknown part(s) ['arm']"),
    (["--config", "/nonexistent/real.yaml"], "/nonexistent/real.yaml"),
    (["--fake", "--timeout", "0"], "must be positive"),
])
def test_bad_input_is_one_line(args, words, capsys):
    assert cli_main(["doctor", *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vla-bridge doctor: ") and words in lines[0]
    assert captured.out == ""

# ------------------------------------------------------------------ the fake graph's faults


def test_piper_node_starts_its_fakes_with_the_fake_faults_parameter(ros_context):
    from rclpy.parameter import Parameter

    from vla_bridge.robot_nodes.piper.piper_node import PiperNode

    def params(faults):
        return [Parameter("arms", value="right"), Parameter("use_fake_hardware", value=True),
                Parameter("fake_faults", value=faults)]

    node = PiperNode(context=ros_context, parameter_overrides=params("corrupt_limits,drop_estop"))
    try:
        fake = node.fakes["right"]
        assert fake.drop_estop and not fake.leader_mode
        assert list(fake.limits[1]) == [0.0, 0.0]  # joint2 collapsed, as 0x473 now reports
    finally:
        node.close()
        node.destroy_node()
    with pytest.raises(ValueError, match="unknown fake_piper fault"):
        PiperNode(context=ros_context, parameter_overrides=params("leadr"))


def test_bad_params_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("piper_node:\n  ros__parameters:\n    arms: [left\n")
    assert cli_main(["doctor", "--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"vla-bridge doctor: params file {bad}: not valid YAML (line 4)"]
