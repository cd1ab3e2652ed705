"""Layer 4: Lance datasets (read side) -- manifests, versions, tags, fragments, deletion files,
row ids, scans with projection and SQL filters, take by offset and by row id.

``dataset(uri, version=None, storage_options=None)`` opens one version (``version``: None =
latest, a number, or a tag name); ``await open_dataset_async(...)`` from async code.
``describe(ds)`` returns a JSON-friendly summary for ``lancejit inspect``.
"""

from lancejit.core.lazy import lazy_exports

from .dataset import Dataset, Scanner, dataset, open_dataset_async
from .describe import describe, describe_async
from .read.fragment import FragmentInfo
from .meta.versions import Tag

#: The reference's class name for a dataset.
LanceDataset = Dataset

#: Names imported on first use (the write side and maintenance load the commit machinery,
#: ~10 ms a process that only reads does not need).
_LAZY = {"CleanupStats": ".write.maintenance", "Tags": ".write.maintenance", "write_dataset": ".write.dataset_write",
         "write_dataset_async": ".write.dataset_write"}


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
