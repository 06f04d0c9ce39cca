"""`python -m <package>.sweep`: see runner.py."""

import sys

from .runner import main

sys.exit(main())
