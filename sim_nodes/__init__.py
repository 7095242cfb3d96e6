"""Simulator nodes and their backends (imported as ``vla_bridge.sim_nodes``)."""
