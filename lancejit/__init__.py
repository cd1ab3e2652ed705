"""lancejit: a Python implementation of the Lance columnar file and table format.

Numba-compiled decoders fed by an asyncio I/O scheduler over local disk, memory, S3 and GCS.

Public API (``__all__``; imported lazily, so ``import lancejit`` stays cheap and compiles nothing):

* :class:`LanceFileReader` / :class:`AsyncLanceFileReader`: read one ``.lance`` file.
* :class:`SearchCache`: the LRU metadata/decoder-state cache (bounded in bytes).
* :func:`warmup`: byte-compile lancejit and compile every Numba kernel into the on-disk cache
  (run once after installing; ``lancejit warmup`` on the command line).
* Errors: :class:`LanceJitError` and its subclasses (:class:`NotFoundError`,
  :class:`CorruptFileError`, :class:`NotSupportedError`, :class:`RowIndexError`, ...).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lancejit.core.errors import (
    AlreadyExistsError,
    CommitConflictError,
    CorruptFileError,
    ExecutionError,
    FilterSyntaxError,
    InvalidChangeError,
    InvalidInputError,
    InvalidTypeError,
    LanceJitError,
    NegativeIndexError,
    NotFoundError,
    NotSupportedError,
    RetryableCommitError,
    RowIndexError,
    SchemaMismatchError,
    StoreError,
    UnknownColumnError,
)
from lancejit.core.lazy import lazy_exports

from lancejit.core.version import __version__ as __version__

#: Public names imported on first use: name -> module holding it.
_LAZY = {
    # files
    "LanceFileReader": "lancejit.file.reader",
    "AsyncLanceFileReader": "lancejit.file.reader",
    "LanceFileWriter": "lancejit.file.writer",
    "AsyncLanceFileWriter": "lancejit.file.writer",
    "FileMetadata": "lancejit.file.container",
    "SearchCache": "lancejit.file.cache",
    # datasets
    "open_dataset_async": "lancejit.table.dataset",
    "write_dataset": "lancejit.table.dataset",
    "write_dataset_async": "lancejit.table.dataset",
    "Dataset": "lancejit.table.dataset",
    "LanceDataset": "lancejit.table",
    "Scanner": "lancejit.table.read.dataset_reader",
    "Tag": "lancejit.table.meta.versions",
    # the reference's (pylance's) names
    "LanceOperation": "lancejit.table.operation",
    "Transaction": "lancejit.table.operation",
    "LanceFragment": "lancejit.table.fragment",
    "FragmentMetadata": "lancejit.table.meta.fragment_meta",
    "LanceScanner": "lancejit.dataset",
    "MergeInsertBuilder": "lancejit.dataset",
    "DataStatistics": "lancejit.dataset",
    "FieldStatistics": "lancejit.dataset",
    "CleanupStats": "lancejit.dataset",
    "json_to_schema": "lancejit.core.schema_json",
    "schema_to_json": "lancejit.core.schema_json",
    # configuration (the module: ``lancejit.config.override(...)``) and set-up
    "config": "lancejit.core",
    "warmup": "lancejit.warm",
}

_lazy_getattr, _lazy_dir = lazy_exports(__name__, globals(), _LAZY)

#: Submodules named like the reference's (``lancejit.dataset`` is also callable: it opens a dataset).
_MODULES = {"dataset": "lancejit.dataset", "fragment": "lancejit.fragment"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        module = importlib.import_module(_MODULES[name])
        globals()[name] = module
        return module
    return _lazy_getattr(name)


def __dir__() -> list[str]:
    return sorted(set(_lazy_dir()) | set(_MODULES))

if TYPE_CHECKING:  # the lazily imported names, for type checkers and editors
    from lancejit.core import config
    from lancejit.file.cache import SearchCache
    from lancejit.file.container import FileMetadata
    from lancejit.file.reader import AsyncLanceFileReader, LanceFileReader
    from lancejit.file.writer import AsyncLanceFileWriter, LanceFileWriter
    from lancejit.table import LanceDataset
    from lancejit import dataset, fragment
    from lancejit.core.schema_json import json_to_schema, schema_to_json
    from lancejit.dataset import CleanupStats, DataStatistics, FieldStatistics, LanceScanner, MergeInsertBuilder
    from lancejit.table.dataset import Dataset, open_dataset_async, write_dataset, write_dataset_async
    from lancejit.table.fragment import LanceFragment
    from lancejit.table.meta.fragment_meta import FragmentMetadata
    from lancejit.table.operation import LanceOperation, Transaction
    from lancejit.table.meta.versions import Tag
    from lancejit.table.read.dataset_reader import Scanner
    from lancejit.warm import warmup

__all__ = [
    "AlreadyExistsError",
    "AsyncLanceFileReader",
    "AsyncLanceFileWriter",
    "CleanupStats",
    "CommitConflictError",
    "CorruptFileError",
    "DataStatistics",
    "Dataset",
    "ExecutionError",
    "FieldStatistics",
    "FileMetadata",
    "FilterSyntaxError",
    "FragmentMetadata",
    "InvalidChangeError",
    "InvalidInputError",
    "InvalidTypeError",
    "LanceDataset",
    "LanceFileReader",
    "LanceFileWriter",
    "LanceFragment",
    "LanceJitError",
    "LanceOperation",
    "LanceScanner",
    "MergeInsertBuilder",
    "NegativeIndexError",
    "NotFoundError",
    "NotSupportedError",
    "RetryableCommitError",
    "RowIndexError",
    "Scanner",
    "SchemaMismatchError",
    "SearchCache",
    "StoreError",
    "Tag",
    "Transaction",
    "UnknownColumnError",
    "config",
    "dataset",
    "fragment",
    "json_to_schema",
    "open_dataset_async",
    "schema_to_json",
    "warmup",
    "write_dataset",
    "write_dataset_async",
]
