"""Helpers shared by the tests (no tests here): imported as ``from support import graph_runs``
or ``from support.graph_runs import launch``. setup.cfg's ``pythonpath = test`` puts test/ on
sys.path; child processes (nodes, servers) get it from ``graph_runs.child_pythonpath()``, so a
node loads a test policy such as "support.bad_policies:NaNPolicy"."""
