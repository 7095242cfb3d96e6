"""SAPIEN against MuJoCo: speed and a cross-simulator score table (figures, never asserted).

`speed()` (`vla-bridge bench sapien`): wall time per episode of the same task in both
simulators, in one run: through the node graph (`--sim mujoco` vs `--sim sapien`, nothing
else differs) and in one process (the same session, oracle and scorer on each backend). The
first episode of each side is a warm-up (SAPIEN compiles its shaders there).

`crosssim()` (`vla-bridge bench crosssim`): a policy (the oracle by default, or any
`--policy` spec) over round 1 of the chosen tasks in both simulators, in one process each:
IS, ES and CR per scene x level side by side, and every task whose score differs with the
first stage that differs and each simulator's reason for it. `--output FILE` keeps the rows.

`figure()` (`vla-bridge bench sapien --figure PNG`): the same oracle episode in both
simulators, the cameras at three observations, MuJoCo above SAPIEN (docs/figures/).
"""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from vla_bridge import contract as C
from vla_bridge.sim_nodes.registry import make_backend

SIMS = ("mujoco", "sapien")  # the RoboFollow workcell's backends (LIBERO's scenes are others)


def run_direct(sim: str, tasks, rounds: int = 1, policy: str = "oracle",
               on_row=None) -> list[dict]:
    """One row per (task, round) of `policy` on simulator `sim`, in this process."""
    from vla_bridge.benchmarks.robofollow.tasks import plan_trials
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.policy_nodes.registry import make_policy
    from vla_bridge.sim_nodes.session import SimSession

    session = SimSession(make_backend(sim))
    agent = make_policy(policy, chunk_size=50, control_period=session.backend.control_period)
    rows = []
    for trial in plan_trials(tasks, rounds):
        t0 = time.perf_counter()
        row = {"sim": sim, "task_id": trial.task.id, "scene": trial.task.scene,
               "level": trial.task.level, "round": trial.round, "seed": trial.seed}
        try:
            _, score = run_episode_direct(session, agent, trial.task, trial.seed, images=True)
            row.update(status="ok", **{k: v for k, v in score.to_dict().items()
                                       if k in ("intent_score", "exec_score", "complete",
                                                "max_total", "stages")})
        except Exception as exc:  # a failed episode is a row, as in the evaluator
            row.update(status="error", error=f"{type(exc).__name__}: {exc}", intent_score=0.0,
                       exec_score=0.0, complete=False, stages=[])
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        if on_row:
            on_row(row)
    session.backend.close()
    return rows


def _times(rows: list[dict]) -> str:
    return ", ".join(f"{r['wall_s']:.2f}" for r in rows)


def _same(a: list[dict], b: list[dict]) -> bool:
    keys = ("intent_score", "exec_score", "complete")
    return [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b]


def speed(task_id: str, episodes: int, graph: bool = True) -> int:
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    if episodes < 2:
        raise SystemExit("--episodes must be >= 2 (the first episode of each side is a warm-up)")
    task = load_suite().get(task_id)
    print(f"SAPIEN vs MuJoCo: task {task_id}, {episodes} episodes per side (first = warm-up)")
    sides = {}
    for sim in SIMS:  # round 1 repeated: the same trial each time
        sides[f"{sim}, one process"] = run_direct(sim, [task], rounds=[1] * episodes)
    if graph:
        from vla_bridge.perf.graph import run_graph
        for sim in SIMS:
            sides[f"{sim}, node graph"] = run_graph(task_id, episodes, "--sim", sim)
    means = {}
    for name, rows in sides.items():
        means[name] = statistics.mean(r["wall_s"] for r in rows[1:])
        print(f"{name:<20}: {means[name]:.3f} s/episode  ({_times(rows)})")
    for where in ("one process", "node graph"):
        m, s = means.get(f"mujoco, {where}"), means.get(f"sapien, {where}")
        if m and s:
            print(f"ratio SAPIEN/MuJoCo, {where:<11}: {s / m:.2f}   (target <= 1.5)")
    scores = {name: [(r["intent_score"], r["exec_score"], r["complete"]) for r in rows]
              for name, rows in sides.items()}
    print("scores (IS, ES, CR) per side: " + "; ".join(f"{k} {v[0]}" for k, v in scores.items()))
    return 0


def _metrics(rows: list[dict]) -> dict[str, float]:
    n = len(rows)
    return {"n": n, "IS": 100 * sum(r["intent_score"] for r in rows) / n,
            "ES": 100 * sum(r["exec_score"] for r in rows) / n,
            "CR": 100 * sum(bool(r["complete"]) for r in rows) / n}


def _difference(a: dict, b: dict) -> str:
    """The first stage whose credit differs, with each simulator's reason."""
    if a["status"] != "ok" or b["status"] != "ok":
        return f"mujoco: {a.get('error') or 'ok'}; sapien: {b.get('error') or 'ok'}"
    for sa, sb in zip(a["stages"], b["stages"]):
        if (sa["intent"], sa["exec"]) != (sb["intent"], sb["exec"]):
            return (f"{sa['name']}: mujoco IS/ES {sa['intent']:.2f}/{sa['exec']:.2f} "
                    f"({sa['reason']}); sapien {sb['intent']:.2f}/{sb['exec']:.2f} ({sb['reason']})")
    return "stage credits equal; completion differs"


def table(rows: dict[str, list[dict]]) -> list[str]:
    """Lines: IS/ES/CR per scene/level for each simulator, then the tasks that differ."""
    groups = sorted({(r["scene"], r["level"]) for r in rows["mujoco"]})
    lines = [f"{'group':<12} {'tasks':>5}  {'MuJoCo IS':>9} {'ES':>6} {'CR':>6}   "
             f"{'SAPIEN IS':>9} {'ES':>6} {'CR':>6}"]
    for key in groups + [None]:
        pick = {sim: [r for r in rows[sim] if key is None or (r["scene"], r["level"]) == key]
                for sim in SIMS}
        m, s = _metrics(pick["mujoco"]), _metrics(pick["sapien"])
        name = "all" if key is None else f"{key[0]}/{key[1]}"
        lines.append(f"{name:<12} {m['n']:>5}  {m['IS']:>9.1f} {m['ES']:>6.1f} {m['CR']:>6.1f}   "
                     f"{s['IS']:>9.1f} {s['ES']:>6.1f} {s['CR']:>6.1f}")
    by_task = {(r["scene"], r["task_id"], r["round"]): r for r in rows["sapien"]}
    differ = [(a, by_task[(a["scene"], a["task_id"], a["round"])]) for a in rows["mujoco"]
              if (a["intent_score"], a["exec_score"], a["complete"]) != (
                  by_task[(a["scene"], a["task_id"], a["round"])]["intent_score"],
                  by_task[(a["scene"], a["task_id"], a["round"])]["exec_score"],
                  by_task[(a["scene"], a["task_id"], a["round"])]["complete"])]
    lines.append(f"tasks whose score differs: {len(differ)}")
    for a, b in differ:
        lines.append(f"  {a['scene']} {a['task_id']} seed {a['seed']}: MuJoCo IS {a['intent_score']:.2f} "
                     f"ES {a['exec_score']:.2f} CR {a['complete']} | SAPIEN IS {b['intent_score']:.2f} "
                     f"ES {b['exec_score']:.2f} CR {b['complete']} | {_difference(a, b)}")
    return lines


def crosssim(scenes: str, levels: str, policy: str = "oracle", output: str | None = None) -> int:
    from vla_bridge.benchmarks.robofollow.tasks import load_suite, select_tasks
    tasks = select_tasks(load_suite(), scenes=scenes, levels=levels)
    print(f"cross-simulator: {policy} over round 1 of {len(tasks)} tasks "
          f"({scenes or 'all scenes'}, {levels or 'all levels'}) in MuJoCo and in SAPIEN")
    rows, walls = {}, {}
    for sim in SIMS:
        t0 = time.perf_counter()
        rows[sim] = run_direct(sim, tasks, rounds=1, policy=policy)
        walls[sim] = time.perf_counter() - t0
        print(f"{sim}: {len(tasks)} episodes in {walls[sim]:.0f} s "
              f"({walls[sim] / max(1, len(tasks)):.2f} s each)", flush=True)
    for line in table(rows):
        print(line)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps({"policy": policy, "scenes": scenes, "levels": levels,
                                            "wall_s": walls, "rows": rows}, indent=1))
        print(f"rows: {output}")
    return 0


def episode_images(sim: str, task_id: str, calls=(0, 2, 4)) -> list:
    """cam_high at the given policy calls and both wrist cameras at the last, of one oracle
    episode (round 1's seed) on simulator `sim`."""
    from vla_bridge.benchmarks.robofollow.tasks import episode_seed, load_suite
    from vla_bridge.policy_nodes.oracle import OraclePolicy
    from vla_bridge.sim_nodes.session import SimSession
    task = load_suite().get(task_id)
    session, policy = SimSession(make_backend(sim)), OraclePolicy()
    session.begin(task.scene, task.layout, episode_seed(task.id, 1))
    policy.reset()
    policy.set_instruction(task.instruction, task.to_dict())
    images, call = [], 0
    while not session.done and call <= max(calls):
        obs = session.observation(images=True, world=True)
        if call in calls:
            images.append(obs.images["cam_high"])
        if call == max(calls):
            images += [obs.images["cam_left_wrist"], obs.images["cam_right_wrist"]]
        for _ in session.execute(C.validate_chunk(policy.predict(obs))):
            pass
        call += 1
    session.backend.close()
    return images


def figure(task_id: str, path: str) -> int:
    import numpy as np
    from PIL import Image
    rows = [np.concatenate(episode_images(sim, task_id), axis=1) for sim in SIMS]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.concatenate(rows, axis=0)).save(path)
    print(f"{path}: {task_id}, MuJoCo (top) and SAPIEN (bottom); cam_high at policy calls "
          f"1, 3, 5, then the left and right wrist cameras at call 5")
    return 0
