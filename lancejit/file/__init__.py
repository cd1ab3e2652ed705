"""Layer 3: one Lance file — container/footer parsing (:mod:`.container`), the search cache
(:mod:`.cache`), readers (:mod:`.reader`) and metadata summaries (:mod:`.summary`).

Names are imported lazily so that importing a submodule (e.g. ``lancejit.file.legacy``) does
not pull in the readers.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "FileMetadata": "lancejit.file.container",
    "open_file_metadata": "lancejit.file.container",
    "parse_file_metadata": "lancejit.file.container",
    "SearchCache": "lancejit.file.cache",
    "FileCache": "lancejit.file.cache",
    "default_cache": "lancejit.file.cache",
    "LanceFileReader": "lancejit.file.reader",
    "AsyncLanceFileReader": "lancejit.file.reader",
    "FileSummary": "lancejit.file.summary",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'lancejit.file' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
