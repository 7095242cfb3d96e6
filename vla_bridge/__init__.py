"""vla_bridge: evaluate VLA policies the same way in simulation and on real arms.

Sub-packages by concern, bottom-up (a layer imports only from the layers before it; the
test `test/test_layering.py` reads every import and enforces this):

* ``contract``, ``paths`` (modules here): the vocabulary every layer shares -- topic names,
  QoS, joint order, units, the gripper convention; where the shipped config files are.
  They import nothing of ours.
* ``embodiment``: the arms and cameras -- kinematics, workcell, camera mounts, world state,
  the per-frame episode record.
* ``ros``: ROS 2 plumbing -- message conversions, launch graphs, the own launcher, DDS helpers.
* ``benchmarks``: what is measured -- RoboFollow (suites, scenes, scoring, entropy), INT-ACT
  metrics, the LIBERO-VIFO cue library. Pure logic, never ROS.
* ``sim_nodes``, ``policy_nodes``, ``robot_nodes`` (top-level folders, mapped here by
  setup.py): thin node shells over backends.
* ``evaluation``: running episodes and reporting -- run directory, evaluator node, reports,
  VQA runner, pilot console.
* ``cli``, ``bench``: the ``vla-bridge`` subcommands and the scripts that print figures.
"""
__version__ = "0.1.0"
