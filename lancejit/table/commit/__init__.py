"""Write side of the table format: operations, conflict rules, manifest building, the commit protocol,
tags, row-id sequences and deletion files.

Entry point for writers (``write_dataset``, ``Dataset.delete`` ..., the Spark writer)::

    from lancejit.table.commit import Append, commit
    new_version = await commit(store, root, Append(fragments), read_version)

See :mod:`.committer` for the protocol and :mod:`.operations` for the operations.
"""

from .committer import (
    CommitResult,
    commit,
    commit_sync,
    commit_transaction,
    latest_version,
    load_manifest,
)
from .conflicts import ConflictChecker
from .deletion_writer import delete_rows, read_deleted_offsets, write_deletion_file
from .manifest_writer import (
    LoadedManifest,
    ManifestWriteConfig,
    build_manifest,
    parse_manifest_file,
    serialize_manifest,
)
from .operations import (
    REWRITE_COLUMNS,
    REWRITE_ROWS,
    Append,
    CreateIndex,
    Delete,
    Merge,
    Operation,
    OtherOperation,
    Overwrite,
    Project,
    ReserveFragments,
    Restore,
    Transaction,
    Update,
    UpdateConfig,
    UpdateMap,
    data_file,
    new_fragment,
    schema_fields,
)
from .rowid_writer import encode_row_id_range, encode_row_id_sequence, encode_version_runs
from .tags import create_tag, delete_tag, list_tags, update_tag

__all__ = [
    "Append",
    "CommitResult",
    "CreateIndex",
    "ConflictChecker",
    "Delete",
    "LoadedManifest",
    "ManifestWriteConfig",
    "Merge",
    "Operation",
    "OtherOperation",
    "Overwrite",
    "Project",
    "REWRITE_COLUMNS",
    "REWRITE_ROWS",
    "ReserveFragments",
    "Restore",
    "Transaction",
    "Update",
    "UpdateConfig",
    "UpdateMap",
    "build_manifest",
    "commit",
    "commit_sync",
    "commit_transaction",
    "create_tag",
    "data_file",
    "delete_rows",
    "delete_tag",
    "encode_row_id_range",
    "encode_row_id_sequence",
    "encode_version_runs",
    "latest_version",
    "list_tags",
    "load_manifest",
    "new_fragment",
    "parse_manifest_file",
    "read_deleted_offsets",
    "schema_fields",
    "serialize_manifest",
    "update_tag",
    "write_deletion_file",
]
