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

from typing import TYPE_CHECKING

from lancejit.core.errors import (
    AlreadyExistsError,
    CommitConflictError,
    CorruptFileError,
    FilterSyntaxError,
    InvalidInputError,
    LanceJitError,
    NotFoundError,
    NotSupportedError,
    RetryableCommitError,
    RowIndexError,
    SchemaMismatchError,
    StoreError,
    UnknownColumnError,
)
from lancejit.core.lazy import lazy_exports

from lancejit.core.version import __version__

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
    "dataset": "lancejit.table.dataset",
    "open_dataset_async": "lancejit.table.dataset",
    "write_dataset": "lancejit.table.dataset",
    "write_dataset_async": "lancejit.table.dataset",
    "Dataset": "lancejit.table.dataset",
    "LanceDataset": "lancejit.table",
    "Scanner": "lancejit.table.read.dataset_reader",
    "Tag": "lancejit.table.meta.versions",
    # configuration (the module: ``lancejit.config.override(...)``) and set-up
    "config": "lancejit.core",
    "warmup": "lancejit.warm",
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)

if TYPE_CHECKING:  # the lazily imported names, for type checkers and editors
    from lancejit.core import config
    from lancejit.file.cache import SearchCache
    from lancejit.file.container import FileMetadata
    from lancejit.file.reader import AsyncLanceFileReader, LanceFileReader
    from lancejit.file.writer import AsyncLanceFileWriter, LanceFileWriter
    from lancejit.table import LanceDataset
    from lancejit.table.dataset import Dataset, dataset, open_dataset_async, write_dataset, write_dataset_async
    from lancejit.table.meta.versions import Tag
    from lancejit.table.read.dataset_reader import Scanner
    from lancejit.warm import warmup

__all__ = [
    "AlreadyExistsError",
    "AsyncLanceFileReader",
    "AsyncLanceFileWriter",
    "CommitConflictError",
    "CorruptFileError",
    "Dataset",
    "FileMetadata",
    "FilterSyntaxError",
    "InvalidInputError",
    "LanceDataset",
    "LanceFileReader",
    "LanceFileWriter",
    "LanceJitError",
    "NotFoundError",
    "NotSupportedError",
    "RetryableCommitError",
    "RowIndexError",
    "Scanner",
    "SchemaMismatchError",
    "SearchCache",
    "StoreError",
    "Tag",
    "UnknownColumnError",
    "config",
    "dataset",
    "open_dataset_async",
    "warmup",
    "write_dataset",
    "write_dataset_async",
]
