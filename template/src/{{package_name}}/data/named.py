"""Datasets of the user's by name (`data.source=MODULE:FUNCTION`), for either task."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping

from torch.utils.data import Dataset

from ..config import DataConfig
from .loading import DataError

# data.source=MODULE:FUNCTION: a function of the user's that returns the datasets
NAMED_SOURCE = re.compile(r"(?P<module>[A-Za-z_][\w.]*):(?P<function>[A-Za-z_]\w*)")
SPLIT_NAMES = ("train", "val", "test")


def is_named(source: str) -> bool:
    return NAMED_SOURCE.fullmatch(source) is not None


def named_datasets(cfg: DataConfig) -> dict[str, Dataset]:
    """`data.source=MODULE:FUNCTION`: FUNCTION(cfg), the run's `data` settings, from MODULE as
    imported from the project's root or from this package, checked to be {"train": dataset, "val":
    dataset} and optionally "test". An empty test split counts as none."""
    source = cfg.source
    module_name, function_name = NAMED_SOURCE.fullmatch(source).group("module", "function")
    module = None
    for name in (module_name, f"{__package__.rpartition('.')[0]}.{module_name}"):
        try:
            module = importlib.import_module(name)
            break
        except ModuleNotFoundError as err:
            if err.name is None or not name.startswith(err.name):  # found; something it imports not
                raise DataError(f"data.source={source}: importing {name} failed: {err}") from None
    if module is None:
        raise DataError(f"data.source={source}: no module {module_name!r} in the project or the package")
    function = getattr(module, function_name, None)
    if not callable(function):
        raise DataError(f"data.source={source}: {module_name} has no function {function_name!r}")
    splits = function(cfg)
    expected = 'a dict {"train": dataset, "val": dataset} (and optionally "test") of map-style datasets'
    if not isinstance(splits, Mapping):
        raise DataError(f"data.source={source} returned {type(splits).__name__}; expected {expected}")
    keys = set(splits)
    if not {"train", "val"} <= keys <= set(SPLIT_NAMES):
        raise DataError(f"data.source={source} returned the keys {sorted(keys)}; expected {expected}")
    for name, dataset in splits.items():
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            what = type(dataset).__name__
            raise DataError(f"data.source={source}: its {name!r} is a {what}; expected {expected}")
        if len(dataset) == 0 and name != "test":
            raise DataError(f"data.source={source}: its {name!r} dataset is empty")
        first = dataset[0] if len(dataset) else (None, None)
        if not (isinstance(first, tuple | list) and len(first) == 2):
            raise DataError(
                f"data.source={source}: item 0 of its {name!r} dataset is a {type(first).__name__}; "
                "expected an (input, target) pair"
            )
    return {name: splits[name] for name in SPLIT_NAMES if name in splits and len(splits[name])}
