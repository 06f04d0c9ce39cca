"""`python -m <package>.sweep`: see runner.py."""

from .runner import main

raise SystemExit(main())
