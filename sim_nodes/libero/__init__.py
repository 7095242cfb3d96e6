"""LIBERO's suites in LIBERO's own environments, run from ``.venv-libero`` (mujoco 3.3.7):
``backend`` (the environment behind the ``SimBackend`` calls), ``session`` (one episode),
``frames`` (first observations for Part I-A), ``libero_node`` (the ROS shell).
"""
