"""Sharded checkpoints in torch.distributed.checkpoint (DCP) files: each tensor is written by the
ranks that hold its pieces, and read back by any number of ranks, each taking the pieces it needs.

DCP folders hold `.metadata` (which file holds which piece of which tensor; DCP writes it last,
once every rank's pieces are on disk) and one `__<rank>_0.distcp` file per rank. Only tensors go
in them: DCP stores anything else pickled and unpickles it with `weights_only=False`, so the
rest of a checkpoint goes to a `torch.save` file beside them, and a folder holding anything but
tensors is refused.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import Metadata, TensorStorageMetadata
from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions

from .checkpoint import CheckpointError


def read_index(path: Path) -> Metadata:
    """The folder's index of tensors, checked to hold nothing but tensors."""
    try:
        index = dcp.FileSystemReader(path).read_metadata()
    except Exception as err:  # DCP raises whatever its reader met: OSError, pickle or EOF errors
        raise CheckpointError(
            f"{path}: truncated or corrupt sharded checkpoint ({_first_line(err)})"
        ) from None
    pickled = sorted(
        key
        for key, entry in index.state_dict_metadata.items()
        if not isinstance(entry, TensorStorageMetadata)
    )
    if pickled:
        raise CheckpointError(
            f"{path}: refused, the sharded checkpoint holds pickled objects, not only tensors ({pickled[0]})"
        )
    return index


def read_model(path: Path, consolidate: bool = True) -> dict[str, torch.Tensor]:
    """The model's whole tensors, read in this process alone (no process group needed);
    `consolidate=False` reads only their shapes and dtypes (tensors on the meta device)."""
    entries = read_index(path).state_dict_metadata
    device = "cpu" if consolidate else "meta"
    model = {
        key.removeprefix("model."): torch.empty(entry.size, dtype=entry.properties.dtype, device=device)
        for key, entry in entries.items()
        if key.startswith("model.")
    }
    if consolidate:
        read(path, {"model": model}, no_dist=True)
    return model


def read(path: Path, tensors: dict[str, Any], no_dist: bool = False) -> None:
    """Fill `tensors` (nested dicts of tensors, DTensor shards included) in place from `path`."""
    read_index(path)
    try:
        dcp.load(tensors, checkpoint_id=path, no_dist=no_dist or not dist.is_initialized())
    except Exception as err:  # a missing key or a torn file, on this rank or another one
        raise CheckpointError(f"{path}: cannot load the sharded checkpoint ({_first_line(err)})") from None


def host_stager(device: torch.device) -> DefaultStager:
    """Where an asynchronous save copies this rank's shards before the background write. On a
    GPU, pinned host buffers kept from save to save: the copy runs at full transfer speed and
    allocates nothing after the first save. On a CPU, a plain copy (DCP's own default)."""
    gpu = device.type == "cuda"
    return DefaultStager(
        StagingOptions(
            use_pinned_memory=gpu, use_shared_memory=False, use_async_staging=False, use_non_blocking_copy=gpu
        )
    )


def write(
    path: Path, tensors: dict[str, Any], group: Any = None, stager: DefaultStager | None = None
) -> Future | None:
    """Write this rank's pieces of `tensors` into the folder `path` (every rank calls this).
    With a `stager`, asynchronously: return once they are copied to host memory, with a future
    of the write."""
    no_dist = not dist.is_initialized()
    try:
        if stager is not None:
            return dcp.async_save(
                tensors, checkpoint_id=path, process_group=group, no_dist=no_dist, async_stager=stager
            )
        dcp.save(tensors, checkpoint_id=path, no_dist=no_dist)
    except Exception as err:  # DCP gathers every rank's failure into one CheckpointException
        raise CheckpointError(f"cannot write checkpoint {path.parent}: {_first_line(err)}") from None
    return None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
