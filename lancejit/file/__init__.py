"""Layer 3: one Lance file — container/footer parsing (:mod:`.container`), the search cache
(:mod:`.cache`), readers (:mod:`.reader`) and metadata summaries (:mod:`.summary`).

Names are imported lazily so that importing a submodule (e.g. ``lancejit.file.legacy``) does
not pull in the readers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lancejit.core.lazy import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)

if TYPE_CHECKING:  # the lazily imported names, for type checkers and editors
    from lancejit.file.cache import FileCache, SearchCache, default_cache
    from lancejit.file.container import FileMetadata, open_file_metadata, parse_file_metadata
    from lancejit.file.reader import AsyncLanceFileReader, LanceFileReader
    from lancejit.file.summary import FileSummary

__all__ = [
    "AsyncLanceFileReader",
    "FileCache",
    "FileMetadata",
    "FileSummary",
    "LanceFileReader",
    "SearchCache",
    "default_cache",
    "open_file_metadata",
    "parse_file_metadata",
]
