"""lancejit: a Python implementation of the Lance columnar file and table format.

Numba-compiled decoders fed by an asyncio I/O scheduler over local disk, memory, S3 and GCS.

Public API (imported lazily, so ``import lancejit`` stays cheap and compiles nothing):

* :class:`LanceFileReader` / :class:`AsyncLanceFileReader`: read one ``.lance`` file.
* :class:`SearchCache`: the LRU metadata/decoder-state cache (bounded in bytes).
* :func:`warmup`: byte-compile lancejit and compile every Numba kernel into the on-disk cache
  (run once after installing; ``lancejit warmup`` on the command line).
* Errors: :class:`LanceJitError` and its subclasses (:class:`NotFoundError`,
  :class:`CorruptFileError`, :class:`NotSupportedError`, :class:`RowIndexError`, ...).
"""

from __future__ import annotations

import importlib
from typing import Any

from lancejit.core.errors import (
    AlreadyExistsError,
    CommitConflictError,
    CorruptFileError,
    InvalidInputError,
    LanceJitError,
    NotFoundError,
    NotSupportedError,
    RetryableCommitError,
    RowIndexError,
    SchemaMismatchError,
    StoreError,
)

__version__ = "0.1.0"

#: Lazily imported public names: attribute -> module holding it.
_LAZY = {
    "LanceFileReader": "lancejit.file.reader",
    "AsyncLanceFileReader": "lancejit.file.reader",
    "SearchCache": "lancejit.file.cache",
    "FileMetadata": "lancejit.file.container",
    "warmup": "lancejit.warm",
}

#: Lazily imported optional API (later layers: ``lancejit.dataset(...)`` etc.), exported when present.
_OPTIONAL = {
    "write_dataset": "lancejit.table",
    "LanceDataset": "lancejit.table",
    "LanceFileWriter": "lancejit.file.writer",
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
}

#: Submodules named like the reference's (``lancejit.dataset`` is also callable: it opens a dataset).
_MODULES = {"dataset": "lancejit.dataset", "fragment": "lancejit.fragment"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        module = importlib.import_module(_MODULES[name])
        globals()[name] = module
        return module
    module_name = _LAZY.get(name) or _OPTIONAL.get(name)
    if module_name is None:
        raise AttributeError(f"module 'lancejit' has no attribute {name!r}")
    try:
        module = importlib.import_module(module_name)
        value = getattr(module, name)
    except (ModuleNotFoundError, AttributeError):
        if name in _LAZY:
            raise
        raise AttributeError(f"module 'lancejit' has no attribute {name!r} (not available in this build)") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AlreadyExistsError",
    "AsyncLanceFileReader",
    "CommitConflictError",
    "CorruptFileError",
    "FileMetadata",
    "InvalidInputError",
    "LanceFileReader",
    "LanceJitError",
    "NotFoundError",
    "NotSupportedError",
    "RetryableCommitError",
    "RowIndexError",
    "SchemaMismatchError",
    "SearchCache",
    "StoreError",
    "warmup",
]
