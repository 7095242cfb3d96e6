"""vla_bridge: evaluate VLA policies the same way in simulation and on real arms."""
__version__ = "0.1.0"
