"""The same workcell and scenes in SAPIEN 3 / PhysX: ``model`` (built from our kinematic chain and
the MJCF's shapes), ``backend`` (the ``SimBackend``).
"""
