"""A folder written by `export`, read as a checkpoint: the model's weights as safetensors, the rest
of what an export keeps as JSON.

safetensors holds tensors only, so reading an export never runs code; it comes with the `export`
extra, and is imported only when an export is read or written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..runtime.errors import first_line
from .errors import CheckpointError

EXPORTED_WEIGHTS = "model.safetensors"
CONFIG_FILE = "config.json"
# What an export keeps of a checkpoint: enough to build the model and prepare its inputs
KEYS = ("template_version", "task", "config", "data_info")


def safetensors_module() -> Any:
    """The safetensors package, or a CheckpointError saying how to install it."""
    try:
        import safetensors.torch
    except ImportError:
        raise CheckpointError("exports need safetensors: pip install -e .[export]") from None
    return safetensors


def is_export(path: Path) -> bool:
    return (path / EXPORTED_WEIGHTS).is_file()


def read_exported(path: Path) -> dict[str, Any]:
    """An export as a checkpoint dict (its keys as a checkpoint has them, `model` included)."""
    safetensors = safetensors_module()
    try:
        description = json.loads((path / CONFIG_FILE).read_text(encoding="utf-8"))
        weights = safetensors.torch.load_file(path / EXPORTED_WEIGHTS, device="cpu")
    except FileNotFoundError as err:
        missing = Path(err.filename).name if err.filename else EXPORTED_WEIGHTS  # safetensors names none
        raise CheckpointError(f"{path}: not an export (no {missing})") from None
    except (OSError, ValueError, safetensors.SafetensorError) as err:  # unreadable, torn, not JSON
        raise CheckpointError(f"{path}: corrupt export ({first_line(err)})") from None
    if not isinstance(description, dict) or any(key not in description for key in KEYS):
        raise CheckpointError(
            f"{path}: not an export of this project ({CONFIG_FILE} lacks {', '.join(KEYS)})"
        )
    return {**description, "model": weights}
