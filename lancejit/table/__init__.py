"""Lance datasets: versions, fragments, scans, takes, filters, indices, writes and commits.

Parts, each importing only those before it: ``meta`` (what a version is) -> ``filter`` ->
``indices`` -> ``read`` (scans and takes; :class:`~.read.dataset_reader.DatasetReader` is the read
core operations are given) -> ``commit`` (operations as data, conflict rules, the commit
protocol) -> ``write`` (changes) -> :mod:`.dataset` (the public face).

``dataset(uri, version=None, storage_options=None)`` opens one version (``version``: None =
latest, a number, or a tag name); ``await open_dataset_async(...)`` from async code.
``describe(ds)`` returns a JSON-friendly summary for ``lancejit inspect``.
"""

from lancejit.core.lazy import lazy_exports

from .dataset import Dataset, Scanner, dataset, open_dataset_async, write_dataset, write_dataset_async
from .describe import describe, describe_async
from .read.fragment import FragmentInfo
from .meta.versions import Tag

#: The reference's class name for a dataset.
LanceDataset = Dataset

#: Names imported on first use (maintenance loads the commit machinery, which a process that
#: only reads does not need).
_LAZY = {"CleanupStats": ".write.maintenance", "Tags": ".write.maintenance", "LanceOperation": ".operation",
         "Transaction": ".operation", "LanceFragment": ".fragment", "write_fragments": ".fragment",
         "FragmentMetadata": ".meta.fragment_meta"}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)

__all__ = [
    "Dataset",
    "FragmentInfo",
    "FragmentMetadata",
    "LanceFragment",
    "LanceOperation",
    "Transaction",
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
    "write_fragments",
]
