"""Export a checkpoint's model for inference: its weights as safetensors, its config as JSON.

    python -m <package>.export CHECKPOINT OUT

CHECKPOINT is any checkpoint of the project: a `.pt` file, or a sharded checkpoint's folder (its
shards are consolidated here, in this one process). OUT is a folder holding

- `model.safetensors`: every tensor of the plain model, whole, under its parameter names;
- `config.json`: the task, the training config (the model is built from its `model` section)
  and the data description (vocabulary or classes, image statistics, ...).

`load_exported(OUT)` builds the model from them, and `evaluate`, `sample` and `predict` take
OUT wherever they take a checkpoint. safetensors holds tensors only, so loading an export never
runs code; it comes with the `export` extra (`pip install -e .[export]`).

Exit codes: 0 exported, 2 an unusable checkpoint (missing, corrupt, or refused for carrying
pickled code) or an OUT that cannot be written (or holds anything but an earlier export).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torch import nn

from . import TASK, TEMPLATE_VERSION
from .checkpoint.exported import CONFIG_FILE, EXPORTED_WEIGHTS, KEYS, read_exported, safetensors_module
from .checkpoint.format import CheckpointError, check_task, load_checkpoint
from .checkpoint.inference import inference_model
from .ema import inference_weights
from .runtime.files import remove_entry, replace_folder, write_json, write_whole


def export(checkpoint: Path, out: Path) -> Path:
    """Write the model of `checkpoint` to the folder `out`. An earlier export there is replaced in
    one step (see `files.replace_folder`): a kill at any moment leaves the old export or the new."""
    _check_replaceable(out)
    state = load_checkpoint(checkpoint, needs=("task", "config", "data_info", "model"))
    check_task(state, TASK)
    # The EMA when the run kept one. Contiguous copies of their own: safetensors refuses tensors
    # that share memory (tied weights)
    weights = {name: t.detach().contiguous().clone() for name, t in inference_weights(state).items()}
    description = {key: state.get(key) for key in KEYS} | {
        "template_version": state.get("template_version", TEMPLATE_VERSION)
    }
    serialized = safetensors_module().torch.save(weights)
    staging = out.with_name(f".{out.name}.tmp")
    try:
        remove_entry(staging)  # left by an export that was killed
        staging.mkdir(parents=True)
        write_whole(staging / EXPORTED_WEIGHTS, serialized)
        write_json(staging / CONFIG_FILE, description)
        replace_folder(staging, out)
    except OSError as err:
        remove_entry(staging)
        raise CheckpointError(f"cannot write {out}: {err.strerror or err}") from None
    return out


def _check_replaceable(out: Path) -> None:
    """Refuse an `out` holding anything but an earlier export: replacing it would delete it."""
    if not out.exists():
        return
    if not out.is_dir() or any(p.name not in (EXPORTED_WEIGHTS, CONFIG_FILE) for p in out.iterdir()):
        raise CheckpointError(f"{out}: exists and is not an export (choose a new or empty folder)")


def load_exported(path: Path) -> nn.Module:
    """The exported model, built from its config and loaded with its weights, in eval mode."""
    return inference_model(read_exported(path))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__package__}.export", description=__doc__.split("\n")[0]
    )
    parser.add_argument("checkpoint", type=Path, help="a checkpoint file or a sharded checkpoint's folder")
    parser.add_argument("out", type=Path, help="the folder to write")
    args = parser.parse_args(argv)
    try:
        out = export(args.checkpoint, args.out)
    except CheckpointError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"exported {args.checkpoint} to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
