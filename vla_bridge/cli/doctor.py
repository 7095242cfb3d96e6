"""`vla-bridge doctor [--fake [--inject FAULT]] [--config FILE]`: pre-flight checks of the real
graph's hardware, one line each: ``PASS|WARN|FAIL <check>: <what was seen> — <the fix>``.

Reads what the real graph reads (config/robofollow_real.yaml: piper_node's arms and CAN
ports, realsense_node's cameras, tracker_node's calibration file) and checks, per arm, the
CAN interface, frames, firmware, arm status, leader/follower mode, firmware joint limits,
feedback rates, zero joint readings, enable state and the e-stop path
(`vla_bridge.robot_nodes.piper.doctor`), then each camera
(`robot_nodes.realsense.camera_check`) and the table calibration
(`robot_nodes.tracker.calibration_check`). Exit status 0 when nothing failed, 1 when a check
failed (or warned, with --strict), 2 for bad arguments.

`--fake` starts the PiPER firmware emulator for every arm on its own virtual CAN bus (what
`use_fake_hardware` does) and the cameras the fake graph would use; `--inject FAULT` makes
the emulator misbehave as a broken arm would (`fake_faults.FAULTS`).

Safety on real arms: doctor moves nothing. It listens, the SDK sends its queries (joint
limits, firmware), and the e-stop test sends EmergencyStop(0x01) and then the resume only
to an arm whose motors are off (a resting arm; skipped with a WARN while enabled, e.g. under
a running graph; --no-estop-test leaves it out). --enable-test (on by default with --fake
only) enables motors that were off, holding where they are with no motion command, and
disables them again: the arm must rest on its stops, as a disabled arm does.
"""
from __future__ import annotations

import argparse
import logging
import sys
import uuid

SKIPPABLE = ("arms", "cameras", "calibration")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vla_bridge.robot_nodes.piper.fake_faults import FAULTS

    parser.add_argument("--config", default=None, metavar="FILE",
                        help="the real graph's params file (default: config/robofollow_real.yaml)")
    parser.add_argument("--fake", action="store_true",
                        help="check the PiPER firmware emulator on virtual CAN buses (and the "
                             "fake graph's cameras) instead of the hardware")
    parser.add_argument("--inject", action="append", default=[], metavar="[ARM:]FAULT",
                        help="with --fake: a fault for the emulator (comma-separated or "
                             "repeated; ARM: for one arm only): " + ", ".join(FAULTS))
    parser.add_argument("--arms", default=None, help="arms to check (default: piper_node's arms)")
    parser.add_argument("--timeout", type=float, default=2.0, metavar="S",
                        help="wait this long for an arm's first frames and each answer")
    parser.add_argument("--rate-window", type=float, default=1.0, metavar="S",
                        help="measure feedback and camera rates over this long")
    parser.add_argument("--enable-test", action=argparse.BooleanOptionalAction, default=None,
                        help="enable motors that are off (no motion command) and disable them "
                             "again (default: on with --fake, off on real arms)")
    parser.add_argument("--no-estop-test", action="store_true",
                        help="don't send the emergency stop (sent by default, only to arms "
                             "whose motors are off)")
    parser.add_argument("--skip", default="", metavar="WHAT",
                        help=f"comma-separated parts to leave out: {', '.join(SKIPPABLE)}")
    parser.add_argument("--camera-serials", default=None, metavar="MAP",
                        help="cam_high:SERIAL,... (overrides realsense_node's serials)")
    parser.add_argument("--camera-playback-dir", default=None, metavar="DIR",
                        help="check DIR/<camera>.db3 recordings instead of the devices")
    parser.add_argument("--calibration-file", default=None, metavar="FILE",
                        help="table calibration to check (overrides tracker_node's)")
    parser.add_argument("--strict", action="store_true", help="warnings fail too (exit 1)")


def _node_config(path, node: str, module: str, overrides: dict | None = None):
    """The node's config dataclass filled from the params file (defaults elsewhere)."""
    import dataclasses

    from vla_bridge.ros import node_config as NC

    values = NC.file_params(path, node)
    cls = NC.config_of(module, values)
    names = {f.name for f in dataclasses.fields(cls)}
    given = {k: v for k, v in {**values, **(overrides or {})}.items() if k in names}
    return cls(**given), values


def _faults(specs: list[str], arms: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """--inject values -> {arm: faults}; ValueError for an unknown arm or fault."""
    from vla_bridge.robot_nodes.piper.fake_faults import parse_faults

    out = {arm: [] for arm in arms}
    for spec in specs:
        for item in (s.strip() for s in spec.split(",") if s.strip()):
            arm, sep, fault = item.rpartition(":")
            if sep and arm not in arms:
                raise ValueError(f"--inject {item}: arm {arm!r} is not checked (arms: "
                                 f"{','.join(arms)})")
            for a in ([arm] if sep else arms):
                out[a] += parse_faults(fault)
    return {a: tuple(dict.fromkeys(f)) for a, f in out.items()}


def _camera_plan(path, args, fake: bool):
    overrides = {k: v for k, v in (("serials", args.camera_serials),
                                   ("playback_dir", args.camera_playback_dir)) if v is not None}
    p, values = _node_config(path, "realsense_node",
                             "vla_bridge.robot_nodes.realsense.realsense_node", overrides)
    try:
        return _plan(p, values, fake)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"params file {path}, realsense_node: {exc}") from None


def _plan(p, values: dict, fake: bool):
    """The realsense node's camera plan (`RealsenseNode._plan`'s inputs) from its config."""
    import os

    from vla_bridge.robot_nodes.realsense import realsense_io as rio
    from vla_bridge.robot_nodes.realsense.camera_check import CameraPlan

    cameras = rio.parse_cameras(p.cameras)
    playback = {}
    for cam in cameras:  # the node's `<camera>.playback_file`, nested or dotted
        nested = values.get(cam) if isinstance(values.get(cam), dict) else {}
        file = values.get(f"{cam}.playback_file") or nested.get("playback_file") or ""
        if file:
            playback[cam] = file
        elif p.playback_dir:
            playback[cam] = os.path.join(p.playback_dir, f"{cam}.db3")
    full = set(rio.parse_cameras(p.full_resolution_cameras))
    sizes = {c: (int(p.synthetic_width), int(p.synthetic_height)) if c in full
             else (int(p.image_width), int(p.image_height)) for c in cameras}
    return CameraPlan(cameras, str(p.source), rio.parse_camera_map(p.serials), playback,
                      bool(p.use_fake_hardware) or fake, int(p.width), int(p.height),
                      int(p.fps), float(p.synthetic_fps), sizes, str(p.synthetic_scene),
                      str(p.synthetic_layout), str(p.objects_file))


def _read_params_file(path: str) -> None:
    """ValueError of one line for a params file that is missing or not YAML."""
    from pathlib import Path

    import yaml

    try:
        yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"params file {path} not found") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ValueError(f"params file {path}: not valid YAML{where}") from None


def _setup(args) -> dict:
    from vla_bridge.paths import config_path
    from vla_bridge.robot_nodes.piper.doctor import ArmCheckOptions
    from vla_bridge.robot_nodes.piper.piper_node import parse_arms

    if args.timeout <= 0 or args.rate_window <= 0:
        raise ValueError("--timeout and --rate-window must be positive")
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if skip - set(SKIPPABLE):
        raise ValueError(f"--skip: unknown part(s) {sorted(skip - set(SKIPPABLE))}; known: "
                         f"{', '.join(SKIPPABLE)}")
    if args.inject and not args.fake:
        raise ValueError("--inject needs --fake: faults are injected into the firmware "
                         "emulator, never into a real arm")
    path = args.config or str(config_path("robofollow_real.yaml"))
    _read_params_file(path)
    piper, _ = _node_config(path, "piper_node", "vla_bridge.robot_nodes.piper.piper_node")
    arms = parse_arms(args.arms or piper.arms)
    tracker, _ = _node_config(path, "tracker_node", "vla_bridge.robot_nodes.tracker.tracker_node",
                              {} if args.calibration_file is None
                              else {"calibration_file": args.calibration_file})
    return {
        "arms": arms, "skip": skip, "faults": _faults(args.inject, arms),
        "ports": {arm: str(getattr(piper, f"{arm}_can_port")) for arm in arms},
        "interface": str(piper.can_interface),
        "options": ArmCheckOptions(
            timeout_s=args.timeout, rate_window_s=args.rate_window,
            enable_test=args.fake if args.enable_test is None else args.enable_test,
            estop_test=not args.no_estop_test, enable_timeout_s=float(piper.enable_timeout_s),
            safety_params_file=piper.safety_params_file or None),
        "cameras": None if "cameras" in skip else _camera_plan(path, args, args.fake),
        "tracker": tracker,
    }


def _quiet_logger() -> logging.Logger:
    log = logging.getLogger("vla_bridge.doctor.arm")
    log.propagate = False
    log.addHandler(logging.NullHandler())
    return log


def run(args: argparse.Namespace) -> int:
    try:
        setup = _setup(args)
    except (ValueError, TypeError, OSError) as exc:  # FileNotFoundError is an OSError
        print(f"vla-bridge doctor: {exc}", file=sys.stderr)
        return 2
    from vla_bridge.robot_nodes.piper.doctor import check_arm, exit_code

    checks = []

    def emit(found):
        for check in found:
            checks.append(check)
            print(check.line(), flush=True)

    fakes = _start_fakes(setup) if args.fake else {}
    try:
        if "arms" not in setup["skip"]:
            for arm in setup["arms"]:
                port = fakes[arm].channel if fakes else setup["ports"][arm]
                interface = "virtual" if fakes else setup["interface"]
                emit(check_arm(arm, port, interface, setup["options"], logger=_quiet_logger()))
    finally:
        for fake in fakes.values():
            fake.stop()
    if setup["cameras"] is not None:
        from vla_bridge.robot_nodes.realsense.camera_check import check_cameras

        emit(check_cameras(setup["cameras"], window_s=args.rate_window,
                           timeout_s=max(3.0, args.timeout)))
    if "calibration" not in setup["skip"]:
        from vla_bridge.robot_nodes.tracker.calibration_check import check_calibration

        t = setup["tracker"]
        emit([check_calibration(t.calibration_file, camera=t.camera, objects_file=t.objects_file)])
    counts = {s: sum(c.status == s for c in checks) for s in ("PASS", "WARN", "FAIL")}
    where = "fake hardware" + (f", injected {_describe(setup['faults'])}"
                               if any(setup["faults"].values()) else "") if args.fake else \
        "real hardware"
    print(f"doctor ({where}): {counts['PASS']} PASS, {counts['WARN']} WARN, "
          f"{counts['FAIL']} FAIL")
    return exit_code(checks, strict=args.strict)


def _describe(faults: dict) -> str:
    return ", ".join(f"{arm}: {'+'.join(f)}" for arm, f in faults.items() if f)


def _start_fakes(setup) -> dict:
    """One firmware emulator per arm, on a virtual bus of its own, as piper_node starts them."""
    from vla_bridge.embodiment.workcell import HOME_ARM_Q
    from vla_bridge.robot_nodes.piper.arm import GRIPPER_STROKE_MAX_M
    from vla_bridge.robot_nodes.piper.fake_piper import FakePiper

    fakes = {}
    for arm in setup["arms"]:
        fakes[arm] = FakePiper(f"doctor_{setup['ports'][arm]}_{uuid.uuid4().hex[:8]}",
                               initial_joints=HOME_ARM_Q, initial_gripper_m=GRIPPER_STROKE_MAX_M,
                               faults=setup["faults"][arm]).start()
    return fakes
