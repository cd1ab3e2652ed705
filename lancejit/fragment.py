"""The reference's ``lance.fragment`` module: ``LanceFragment``, ``FragmentMetadata``,
``DataFile``, ``DeletionFile``, ``RowIdMeta`` and ``write_fragments`` (see
:mod:`lancejit.table.fragment`)."""

from __future__ import annotations

from lancejit.table.fragment import LanceFragment, write_fragments
from lancejit.table.meta.fragment_meta import (
    DataFile,
    DeletionFile,
    FragmentMetadata,
    RowDatasetVersionMeta,
    RowIdMeta,
)

__all__ = ["DataFile", "DeletionFile", "FragmentMetadata", "LanceFragment", "RowDatasetVersionMeta", "RowIdMeta",
           "write_fragments"]
