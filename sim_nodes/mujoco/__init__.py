"""The RoboFollow workcell and scenes in MuJoCo: ``backend`` (the ``SimBackend``), ``ghosts`` (F3
ghost trajectories rendered on a mirror copy of a scene).
"""
