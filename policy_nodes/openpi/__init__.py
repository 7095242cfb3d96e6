"""openpi's websocket protocol, both ends: ``wire`` (msgpack-numpy, gripper conventions, key
maps), ``client`` (the ``openpi`` backend), ``serve`` (``vla-bridge serve``: any backend
behind the protocol).
"""
