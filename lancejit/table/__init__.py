"""Layer 4: Lance datasets (read side) -- manifests, versions, tags, fragments, deletion files,
row ids, scans with projection and SQL filters, take by offset and by row id.

``dataset(uri, version=None, storage_options=None)`` opens one version (``version``: None =
latest, a number, or a tag name); ``await open_dataset_async(...)`` from async code.
``describe(ds)`` returns a JSON-friendly summary for ``lancejit inspect``.
"""

from .dataset import Dataset, Scanner, dataset, open_dataset_async
from .describe import describe, describe_async
from .fragment import FragmentInfo
from .versions import Tag
from .maintenance import CleanupStats, Tags
from .write import write_dataset, write_dataset_async

#: The reference's class name for a dataset.
LanceDataset = Dataset

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
