"""LIBERO's suites in LIBERO's own environments, run from ``.venv-libero`` (mujoco 3.3.7):
``backend`` (the environment behind the ``SimBackend`` protocol, the ``libero`` entry of the
sim backend registry; the one sim node and session drive it), ``perturb`` (the scene
perturbation axes on a LIBERO environment: camera, lighting, texture, initial_joints,
object_jitter), ``frames`` (first observations for Part I-A), ``catalog`` (writes
config/libero/suites.json from the installed LIBERO).
"""
