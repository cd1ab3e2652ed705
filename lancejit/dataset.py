"""The reference's ``lance.dataset`` module: ``LanceDataset``, ``LanceOperation``,
``Transaction``, ``LanceScanner``, ``MergeInsertBuilder``, ``write_dataset``...

The module is also callable: ``lancejit.dataset(uri, ...)`` opens a dataset (the function
:func:`lancejit.table.dataset`), as ``lance.dataset(uri)`` does.  Names other than the dataset
class and the two functions load on first use (opening a dataset does not import the write
machinery).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from lancejit.table.dataset import Dataset, dataset, write_dataset

LanceDataset = Dataset

#: name -> (module, attribute) loaded on first access.
_LAZY = {
    "LanceOperation": ("lancejit.table.operation", "LanceOperation"),
    "Transaction": ("lancejit.table.operation", "Transaction"),
    "LanceScanner": ("lancejit.table.read.dataset_reader", "Scanner"),
    "ColumnOrdering": ("lancejit.table.read.scan_post", "Ordering"),
    "DataStatistics": ("lancejit.table.dataset_info", "DataStatistics"),
    "FieldStatistics": ("lancejit.table.dataset_info", "FieldStatistics"),
    "LanceStats": ("lancejit.table.dataset_info", "LanceStats"),
    "DatasetOptimizer": ("lancejit.table.write.compaction", "DatasetOptimizer"),
    "MergeInsertBuilder": ("lancejit.table.write.merge_insert", "MergeInsertBuilder"),
    "CleanupStats": ("lancejit.table.write.maintenance", "CleanupStats"),
    "Tags": ("lancejit.table.write.maintenance", "Tags"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`lancejit.table.dataset`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Dataset:
        return dataset(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if TYPE_CHECKING:  # the lazily loaded names, for type checkers and editors
    from lancejit.table.dataset_info import DataStatistics, FieldStatistics, LanceStats
    from lancejit.table.operation import LanceOperation, Transaction
    from lancejit.table.read.dataset_reader import Scanner as LanceScanner
    from lancejit.table.read.scan_post import Ordering as ColumnOrdering
    from lancejit.table.write.compaction import DatasetOptimizer
    from lancejit.table.write.maintenance import CleanupStats, Tags
    from lancejit.table.write.merge_insert import MergeInsertBuilder

__all__ = ["CleanupStats", "ColumnOrdering", "DataStatistics", "DatasetOptimizer", "FieldStatistics", "LanceDataset",
           "LanceOperation", "LanceScanner", "LanceStats", "MergeInsertBuilder", "Tags", "Transaction", "dataset",
           "write_dataset"]
