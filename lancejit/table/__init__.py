"""Layer 4: Lance datasets (read side) -- manifests, versions, tags, fragments, deletion files,
row ids, scans with projection and SQL filters, take by offset and by row id.

``dataset(uri, version=None, storage_options=None)`` opens one version.
"""

from .dataset import Dataset, Scanner, dataset, open_dataset_async
from .describe import describe, describe_async
from .versions import Tag

__all__ = ["Dataset", "Scanner", "Tag", "dataset", "describe", "describe_async", "open_dataset_async"]
