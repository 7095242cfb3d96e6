"""LeRobot checkpoints as a policy backend: ``backend`` (``lerobot?checkpoint=...``), ``hub``
(resolving a checkpoint on disk or in the Hugging Face cache, offline).
"""
