"""vla-eval's model-server protocol, client side: ``wire`` (its msgpack envelope and numpy
encoding, the handshake's declarations mapped onto our embodiments) and ``client`` (the
``vla_eval`` backend). vla-eval (PyPI ``vla-eval``, allenai/vla-evaluation-harness) is not
imported here: the backend speaks the protocol itself; the tests serve it with vla-eval's own
model-server classes.
"""
