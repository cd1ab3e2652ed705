"""Layer 4: Lance datasets (read side) -- manifests, versions, tags, fragments, deletion files,
row ids, scans with projection and SQL filters, take by offset and by row id.

``dataset(uri, version=None, storage_options=None)`` opens one version (``version``: None =
latest, a number, or a tag name); ``await open_dataset_async(...)`` from async code.
``describe(ds)`` returns a JSON-friendly summary for ``lancejit inspect``.
"""

from lancejit.core.lazy import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)

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
