"""Sharded checkpoints in torch.distributed.checkpoint (DCP) files: each tensor is written by the
ranks that hold its pieces, and read back by any number of ranks, each taking the pieces it needs.

DCP folders hold `.metadata` (which file holds which piece of which tensor; DCP writes it last,
once every rank's pieces are on disk) and one `__<rank>_0.distcp` file per rank. Only tensors go
in them: DCP stores anything else pickled and unpickles it with `weights_only=False`, so the
rest of a checkpoint goes to a `torch.save` file beside them, and a folder holding anything but
tensors is refused. `.metadata` is itself a pickle, which DCP reads with a plain `pickle.load`:
here it is read by an unpickler that admits DCP's own index classes and nothing else, so a
planted `.metadata` is refused before any of its code can run.
"""

from __future__ import annotations

import pickle
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta, TensorStorageMetadata
from torch.distributed.checkpoint.staging import DefaultStager

from ..runtime.errors import first_line
from .errors import CheckpointError

# DCP's index of the tensors in a sharded checkpoint's folder (written last, by DCP)
SHARDED_INDEX = ".metadata"

# Everything DCP pickles into `.metadata` (read off real saves with pickletools): its index
# classes, the torch values they hold (dtypes, sizes, layouts, memory formats) and the path the
# save was written to. Creating any of them runs no code of the file's choosing
_INDEX_GLOBALS = {
    "torch.distributed.checkpoint.metadata": {
        "Metadata",
        "MetadataIndex",
        "StorageMeta",
        "TensorStorageMetadata",
        "BytesStorageMetadata",
        "ChunkStorageMetadata",
        "TensorProperties",
        "_MEM_FORMAT_ENCODING",
    },
    "torch.distributed.checkpoint.filesystem": {"_StorageInfo"},
    "torch.serialization": {"_get_layout"},
    "torch": {"Size"},
    "pathlib": {"PosixPath", "WindowsPath", "PurePosixPath", "PureWindowsPath"},
    "pathlib._local": {"PosixPath", "WindowsPath", "PurePosixPath", "PureWindowsPath"},
}


class _Foreign(pickle.UnpicklingError):
    """The pickle names something that is not part of a DCP index."""


class _IndexUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        dtype = module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)
        if not dtype and name not in _INDEX_GLOBALS.get(module, ()):
            raise _Foreign(f"{module}.{name}")
        return super().find_class(module, name)


class _CheckedReader(dcp.FileSystemReader):
    """DCP's reader, taking the index from `read_index` instead of a plain `pickle.load`: the
    file is read again by `dcp.load`, and may have been replaced since it was checked."""

    def read_metadata(self) -> Metadata:  # without DCP's `rank`: no per-rank index is read
        index = read_index(Path(self.path))
        index.storage_meta = index.storage_meta or StorageMeta()
        index.storage_meta.load_id = self.load_id
        return index


def read_index(path: Path) -> Metadata:
    """The folder's index of tensors, checked to hold nothing but tensors."""
    file = path / SHARDED_INDEX
    try:
        with file.open("rb") as f:
            index = _IndexUnpickler(f).load()
    except _Foreign as err:
        raise CheckpointError(
            f"{file}: refused, the file holds pickled code or objects, not only a sharded "
            f"checkpoint's index ({err}; only load checkpoints you trust)"
        ) from None
    except Exception as err:  # a missing, torn or foreign file: OSError, pickle, EOF or type errors
        raise CheckpointError(
            f"{path}: truncated or corrupt sharded checkpoint ({first_line(err)})"
        ) from None
    if not isinstance(index, Metadata):
        raise CheckpointError(f"{path}: truncated or corrupt sharded checkpoint ({file.name} is no index)")
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


def read_model(path: Path, consolidate: bool = True, part: str = "model") -> dict[str, torch.Tensor]:
    """The model's whole tensors (or those of another `part` laid out like it: "ema", the EMA's
    averages; empty when the folder holds none), read in this process alone (no process group
    needed); `consolidate=False` reads only their shapes and dtypes (tensors on the meta device)."""
    entries = read_index(path).state_dict_metadata
    device = "cpu" if consolidate else "meta"
    prefix = f"{part}."
    tensors = {
        key.removeprefix(prefix): torch.empty(entry.size, dtype=entry.properties.dtype, device=device)
        for key, entry in entries.items()
        if key.startswith(prefix)
    }
    if consolidate and tensors:
        read(path, {part: tensors}, no_dist=True)
    return tensors


def read(path: Path, tensors: dict[str, Any], no_dist: bool = False) -> None:
    """Fill `tensors` (nested dicts of tensors, DTensor shards included) in place from `path`."""
    read_index(path)  # refused here, on every rank, with its own message
    try:
        dcp.load(tensors, storage_reader=_CheckedReader(path), no_dist=no_dist or not dist.is_initialized())
    except Exception as err:  # a missing key or a torn file, on this rank or another one
        raise CheckpointError(f"{path}: cannot load the sharded checkpoint ({first_line(err)})") from None


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
        raise CheckpointError(f"cannot write checkpoint {path.parent}: {first_line(err)}") from None
    return None
