"""ptscaffold: generate a PyTorch training project from a Copier template, and update it.

The library API, which the `ptscaffold` command wraps one function per command:

    ptscaffold.new(dest, data={"amp": "bf16"}, defaults=True)   # -> Path
    ptscaffold.update(dest, data={"compile": True})              # -> UpdateResult
    ptscaffold.features()                                        # -> list[Feature]
"""

from __future__ import annotations

from ._features import Feature, features
from ._new import new
from ._template import template_version as _template_version
from ._update import UpdateResult, update
from .errors import AnswersError, PtscaffoldError, UpdateRefused

__version__ = _template_version()

__all__ = [
    "AnswersError",
    "Feature",
    "PtscaffoldError",
    "UpdateRefused",
    "UpdateResult",
    "__version__",
    "features",
    "new",
    "update",
]
