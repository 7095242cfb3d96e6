"""`python -m vla_bridge.cli ARGS` is `vla-bridge ARGS`."""
import sys

from vla_bridge.cli import main

sys.exit(main())
