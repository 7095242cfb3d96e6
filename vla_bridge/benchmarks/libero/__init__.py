"""LIBERO's own task suites as data (pure logic, no LIBERO, MuJoCo or ROS): the task catalog,
the trial plan and success per task and suite with Wilson intervals (``protocol``). The
simulator side is ``sim_nodes.libero.backend`` (run from .venv-libero)."""
