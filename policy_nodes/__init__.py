"""Policy node and its backends (imported as ``vla_bridge.policy_nodes``)."""
