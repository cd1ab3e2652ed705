"""Layer 3: one Lance file — container/footer parsing (:mod:`.container`), the search cache
(:mod:`.cache`), readers (:mod:`.reader`) and metadata summaries (:mod:`.summary`).

Names are imported lazily so that importing a submodule (e.g. ``lancejit.file.legacy``) does
not pull in the readers.
"""

from __future__ import annotations

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

__all__ = sorted(_LAZY)
