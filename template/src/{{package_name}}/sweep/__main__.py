"""`python -m <package>.sweep`: see runner.py."""

import importlib.util
import sys

if importlib.util.find_spec("optuna") is None:  # the sweep extra
    print('error: the sweep needs Optuna: pip install -e ".[sweep]"', file=sys.stderr)
    raise SystemExit(2)

from ..engine.loop import run
from .runner import main

raise SystemExit(main(None, run))
