"""ptscaffold: generate a PyTorch training project from a Copier template, and update it.

The library API, which the `ptscaffold` command wraps one function per command:

    ptscaffold.new(dest, data={"amp": "bf16"}, defaults=True)   # -> Path
    ptscaffold.update(dest, data={"compile": True})              # -> UpdateResult
    ptscaffold.preview(dest)                  # -> Preview: what update would change
    ptscaffold.check(dest)                    # -> Status: is a newer template available
    ptscaffold.features()                                        # -> list[Feature]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

# Read lazily: `import ptscaffold.cli` must not import copier (slow), so that the command
# can catch a Ctrl-C from its first moment (see cli.main).
_EXPORTS = {
    "AnswersError": ".errors",
    "Preview": "._preview",
    "Status": "._check",
    "check": "._check",
    "preview": "._preview",
    "Feature": "._features",
    "PtscaffoldError": ".errors",
    "UpdateRefused": ".errors",
    "UpdateResult": "._update",
    "features": "._features",
    "new": "._new",
    "update": "._update",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from ._questions import template_version

        value: Any = template_version()
    elif name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
