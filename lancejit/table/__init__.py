"""Layer 4: Lance datasets (read side) -- manifests, versions, tags, fragments, deletion files,
row ids, scans with projection and SQL filters, take by offset and by row id.

``dataset(uri, version=None, storage_options=None)`` opens one version (``version``: None =
latest, a number, or a tag name); ``await open_dataset_async(...)`` from async code.
``describe(ds)`` returns a JSON-friendly summary for ``lancejit inspect``.
"""

from typing import Any

from .dataset import Dataset, Scanner, dataset, open_dataset_async
from .describe import describe, describe_async
from .fragment import FragmentInfo
from .versions import Tag

#: The reference's class name for a dataset.
LanceDataset = Dataset

#: Names imported on first use (the write side and maintenance load the commit machinery,
#: ~10 ms a process that only reads does not need).
_LAZY = {"CleanupStats": ".maintenance", "Tags": ".maintenance", "write_dataset": ".write",
         "write_dataset_async": ".write"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value

__all__ = [
    "Dataset",
    "FragmentInfo",
    "LanceDataset",
    "Scanner",
    "CleanupStats",
    "Tag",
    "Tags",
    "dataset",
    "describe",
    "describe_async",
    "open_dataset_async",
    "write_dataset",
    "write_dataset_async",
]
