"""Building manifest N+1 from manifest N and a transaction, and writing it in the reference's framing.

Manifest file layout (little endian; positions absolute)::

    [IndexSection:  u32 len + protobuf]     only when the dataset has indices
    [Transaction:   u32 len + protobuf]     inline copy of the .txn; offset in Manifest field 23
    [Manifest:      u32 len + protobuf]
    [i64 manifest_position][i16 0][i16 2]["LANC"]

What the builder sets, as pylance 14 does: fragment ids for new fragments (id 0) counted from
``max_fragment_id + 1`` (Overwrite included), fragments sorted by id, data files holding only
tombstoned fields (-2) dropped, ``max_fragment_id`` as a high-water mark, feature flags recomputed
from the content (1 deletion files, 2 stable row ids, 8 table config, 16 base paths), stable row
ids assigned from ``next_row_id`` with created-at / last-updated-at version sequences,
``writer_version`` = (``lancejit``, our version), ``data_format`` kept from the previous version
(inferred from the data files for a new dataset), the timestamp, the transaction file name.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from lancejit.core.errors import CorruptFileError, InvalidInputError, NotSupportedError, RetryableCommitError
from lancejit.pb import table_pb2

from ..meta.features import (
    FLAG_BASE_PATHS,
    FLAG_DELETION_FILES,
    FLAG_DISABLE_TRANSACTION_FILE,
    FLAG_STABLE_ROW_IDS,
    FLAG_TABLE_CONFIG,
)
from ..meta.manifest import FOOTER_LEN, MAGIC, manifest_position
from ..meta.rowids import decode_row_id_sequence
from .operations import (
    Append,
    Delete,
    Merge,
    CreateIndex,
    OtherOperation,
    Overwrite,
    Project,
    ReserveFragments,
    Restore,
    Rewrite,
    Transaction,
    Update,
    UpdateConfig,
)
from .rowid_writer import decode_version_runs, encode_row_id_sequence, encode_version_runs, uniform_versions

WRITER_LIBRARY = "lancejit"
#: The ``DataFile`` version pairs and the data_format string they stand for.
_FILE_VERSIONS = {(0, 0): "0.1", (0, 1): "0.1", (0, 2): "0.1", (0, 3): "2.0", (2, 0): "2.0", (2, 1): "2.1",
                  (2, 2): "2.2"}
DEFAULT_STORAGE_VERSION = "2.2"


def writer_version() -> str:
    """lancejit's version string written in ``Manifest.writer_version.version``."""
    try:
        from lancejit.core.version import __version__

        return str(__version__)
    except ImportError:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("lancejit")
        except PackageNotFoundError:
            return "0.1.0"


@dataclass(frozen=True, slots=True)
class ManifestWriteConfig:
    """Options of one commit.  ``enable_stable_row_ids`` only matters when creating a dataset
    (the reference refuses to turn it on later); ``data_storage_version`` is the requested format
    for a new dataset or an overwrite (None: inferred / kept); ``timestamp_ns`` defaults to now."""

    enable_stable_row_ids: bool = False
    data_storage_version: str | None = None
    timestamp_ns: int | None = None


@dataclass(frozen=True, slots=True)
class LoadedManifest:
    """A manifest file decoded for writing: the protobuf, the raw IndexSection protobuf bytes (or
    None), the raw inline Transaction bytes (or None) and the file size in bytes."""

    manifest: table_pb2.Manifest
    index_section: bytes | None
    transaction: bytes | None
    size: int


def _section(data: memoryview, pos: int, path: str, what: str) -> bytes:
    if pos < 0 or pos + 4 > len(data):
        raise CorruptFileError(f"{what} position {pos} is outside the file", path=path)
    (n,) = struct.unpack_from("<I", data, pos)
    if pos + 4 + n > len(data):
        raise CorruptFileError(f"{what} at {pos} runs past the end of the file", path=path)
    return data[pos + 4 : pos + 4 + n].tobytes()


def parse_manifest_file(data: bytes | memoryview, path: str) -> LoadedManifest:
    """Decode a whole manifest file for rebuilding (keeps every protobuf field, known or not)."""
    data = memoryview(data)
    pos = manifest_position(data, len(data), path)
    body = _section(data, pos, path, "manifest")
    if pos + 4 + len(body) + FOOTER_LEN != len(data):
        raise CorruptFileError("manifest length prefix does not reach the footer", path=path)
    msg = table_pb2.Manifest()
    try:
        msg.ParseFromString(body)
    except Exception as exc:
        raise CorruptFileError(f"manifest protobuf does not decode: {exc}", path=path) from None
    index = _section(data, msg.index_section, path, "index section") if msg.HasField("index_section") else None
    tpos = None
    if msg.HasField("transaction_section"):
        tpos = msg.transaction_section
    elif msg.HasField("transaction_section_deprecated"):
        tpos = msg.transaction_section_deprecated
    txn = _section(data, tpos, path, "inline transaction") if tpos is not None else None
    return LoadedManifest(msg, index, txn, len(data))


def serialize_manifest(
    manifest: table_pb2.Manifest, *, transaction: bytes | None, index_section: bytes | None
) -> bytes:
    """The manifest file bytes; sets ``index_section`` / ``transaction_section`` offsets in
    ``manifest`` (modified in place)."""
    out = bytearray()
    manifest.ClearField("index_section")
    manifest.ClearField("transaction_section")
    manifest.ClearField("transaction_section_deprecated")
    if index_section is not None:
        manifest.index_section = len(out)
        out += struct.pack("<I", len(index_section)) + index_section
    if transaction is not None:
        manifest.transaction_section = len(out)
        out += struct.pack("<I", len(transaction)) + transaction
    pos = len(out)
    body = manifest.SerializeToString()
    out += struct.pack("<I", len(body)) + body
    out += struct.pack("<qhh", pos, 0, 2) + MAGIC
    return bytes(out)


# ------------------------------------------------------------------------------- helpers
def max_fragment_id(manifest: table_pb2.Manifest) -> int | None:
    """The high-water mark of fragment ids (stored, else computed; None when never set)."""
    if manifest.HasField("max_fragment_id"):
        return manifest.max_fragment_id
    ids = [f.id for f in manifest.fragments]
    return max(ids) if ids else None


def _copy(frags: Iterable[table_pb2.DataFragment]) -> list[table_pb2.DataFragment]:
    out = []
    for f in frags:
        c = table_pb2.DataFragment()
        c.CopyFrom(f)
        out.append(c)
    return out


def _assign_ids(frags: list[table_pb2.DataFragment], next_id: int) -> int:
    for f in frags:
        if f.id == 0:
            f.id = next_id
            next_id += 1
    return next_id


def _row_ids_of(frag: table_pb2.DataFragment) -> np.ndarray | None:
    if frag.WhichOneof("row_id_sequence") == "inline_row_ids":
        return decode_row_id_sequence(frag.inline_row_ids, f"<fragment {frag.id} row ids>", frag.physical_rows or None)
    return None


def _assign_row_ids(frags: list[table_pb2.DataFragment], next_row_id: int) -> int:
    """Give every row of ``frags`` a row id (fresh ids from ``next_row_id``); returns the new next id."""
    for f in frags:
        n = f.physical_rows
        existing = _row_ids_of(f)
        if existing is None:
            if f.HasField("external_row_ids"):
                continue
            f.inline_row_ids = encode_row_id_sequence(np.arange(next_row_id, next_row_id + n, dtype=np.uint64))
            next_row_id += n
        elif len(existing) < n:
            extra = np.arange(next_row_id, next_row_id + n - len(existing), dtype=np.uint64)
            f.inline_row_ids = encode_row_id_sequence(np.concatenate([existing, extra]))
            next_row_id += len(extra)
        elif len(existing) > n:
            raise InvalidInputError(f"fragment has {len(existing)} row ids for {n} physical rows")
    return next_row_id


def _created_at_lookup(frags: Iterable[table_pb2.DataFragment]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted row ids and their created-at versions over ``frags`` (those with inline metadata)."""
    ids, vers = [], []
    for f in frags:
        rid = _row_ids_of(f)
        if rid is None or not f.inline_created_at_versions:
            continue
        ids.append(rid)
        vers.append(decode_version_runs(f.inline_created_at_versions, len(rid)))
    if not ids:
        return np.empty(0, np.uint64), np.empty(0, np.uint64)
    i, v = np.concatenate(ids), np.concatenate(vers)
    order = np.argsort(i, kind="stable")
    return i[order], v[order]


def _set_new_version_meta(frag: table_pb2.DataFragment, version: int, created: np.ndarray | None = None) -> None:
    if frag.physical_rows == 0:
        return
    frag.inline_last_updated_at_versions = uniform_versions(frag.physical_rows, version)
    if created is None:
        frag.inline_created_at_versions = uniform_versions(frag.physical_rows, version)
    else:
        frag.inline_created_at_versions = encode_version_runs(created)


def _storage_version_of(frags: Iterable[table_pb2.DataFragment]) -> str | None:
    found = set()
    for f in frags:
        for df in f.files:
            found.add(_FILE_VERSIONS.get((df.file_major_version, df.file_minor_version),
                                         f"{df.file_major_version}.{df.file_minor_version}"))
    if len(found) > 1:
        raise InvalidInputError(f"data files of a new dataset mix storage versions {sorted(found)}")
    return found.pop() if found else None


def apply_feature_flags(
    manifest: table_pb2.Manifest, *, stable_row_ids: bool, disable_transaction_file: bool = False
) -> None:
    """Recompute reader/writer feature flags from the manifest's content, as the reference does."""
    reader = writer = 0
    if disable_transaction_file:
        writer |= FLAG_DISABLE_TRANSACTION_FILE
    if any(f.HasField("deletion_file") for f in manifest.fragments):
        reader |= FLAG_DELETION_FILES
        writer |= FLAG_DELETION_FILES
    with_ids = [f.WhichOneof("row_id_sequence") is not None for f in manifest.fragments]
    if any(with_ids) or stable_row_ids:
        if not all(with_ids):
            raise InvalidInputError("with stable row ids every fragment must have row ids")
        reader |= FLAG_STABLE_ROW_IDS
        writer |= FLAG_STABLE_ROW_IDS
    if len(manifest.config):
        writer |= FLAG_TABLE_CONFIG
    if len(manifest.base_paths):
        reader |= FLAG_BASE_PATHS
        writer |= FLAG_BASE_PATHS
    manifest.reader_feature_flags = reader
    manifest.writer_feature_flags = writer


def _finish(manifest: table_pb2.Manifest, txn: Transaction, transaction_file: str, version: int,
            config: ManifestWriteConfig) -> None:
    manifest.version = version
    manifest.tag = txn.tag
    manifest.transaction_file = transaction_file
    manifest.writer_version.Clear()
    manifest.writer_version.library = WRITER_LIBRARY
    manifest.writer_version.version = writer_version()
    ts = config.timestamp_ns if config.timestamp_ns is not None else time.time_ns()
    manifest.timestamp.seconds = ts // 1_000_000_000
    manifest.timestamp.nanos = ts % 1_000_000_000


def _apply_rewrite(
    existing: list[table_pb2.DataFragment], op: Rewrite, next_frag_id: int
) -> tuple[list[table_pb2.DataFragment], int]:
    """``existing`` with each group's old fragments replaced in place by its new ones (ids 0 get
    fresh ids; row-id and version sequences are the rewriter's).  A missing old fragment means a
    concurrent commit changed it: :class:`RetryableCommitError`."""
    final = _copy(existing)
    for g in op.groups:
        new = _copy(g.new_fragments)
        next_frag_id = _assign_ids(new, next_frag_id)
        pos = {f.id: i for i, f in enumerate(final)}
        old_ids = [f.id for f in g.old_fragments]
        missing = [fid for fid in old_ids if fid not in pos]
        if missing:
            raise RetryableCommitError(f"fragments {missing} to rewrite are no longer in the dataset; retry")
        start = pos[old_ids[0]] if old_ids else len(final)
        if old_ids and [f.id for f in final[start:start + len(old_ids)]] == old_ids:
            final[start:start + len(old_ids)] = new
        else:
            gone = set(old_ids)
            final = [f for f in final if f.id not in gone] + new
    return final, next_frag_id


# ------------------------------------------------------------------------------- the builder
def build_manifest(
    previous: table_pb2.Manifest | None,
    txn: Transaction,
    *,
    transaction_file: str,
    config: ManifestWriteConfig = ManifestWriteConfig(),
    restore_source: table_pb2.Manifest | None = None,
) -> table_pb2.Manifest:
    """Manifest version ``previous.version + 1`` (1 without ``previous``) applying ``txn``.

    ``restore_source`` is the manifest of the version a :class:`Restore` brings back.
    ``transaction_file`` is the name under ``_transactions/`` ("" when none was written).
    """
    op = txn.operation
    new_version = previous.version + 1 if previous is not None else 1
    if isinstance(op, Restore):
        if previous is None or restore_source is None:
            raise InvalidInputError("restore needs an existing dataset and the version to restore")
        m = table_pb2.Manifest()
        m.CopyFrom(restore_source)
        known = [x for x in (max_fragment_id(previous), max_fragment_id(restore_source)) if x is not None]
        if known:
            m.max_fragment_id = max(known)
        m.next_row_id = max(previous.next_row_id, restore_source.next_row_id)
        m.ClearField("index_section")
        _finish(m, txn, transaction_file, new_version, config)
        return m
    if isinstance(op, OtherOperation):
        raise NotSupportedError(f"lancejit cannot build a manifest for a {op.name} operation")
    if previous is None and not isinstance(op, Overwrite):
        raise InvalidInputError(f"a {op.name} needs an existing dataset (create one with Overwrite)")

    prev_stable = previous is not None and bool(previous.reader_feature_flags & FLAG_STABLE_ROW_IDS)
    if previous is not None and config.enable_stable_row_ids and not prev_stable:
        raise NotSupportedError("stable row ids cannot be enabled on an existing dataset")
    stable = prev_stable or (previous is None and config.enable_stable_row_ids)
    next_row_id = previous.next_row_id if previous is not None else 0
    mf = max_fragment_id(previous) if previous is not None else None
    next_frag_id = mf + 1 if mf is not None else 0
    existing = list(previous.fragments) if previous is not None else []

    m = table_pb2.Manifest()
    if previous is not None:
        m.CopyFrom(previous)
        m.ClearField("fragments")
        m.ClearField("index_section")
        m.ClearField("tag")
        m.version_aux_data = 0
    final: list[table_pb2.DataFragment]

    if isinstance(op, (Append, Overwrite)):
        new = _copy(op.fragments)
        next_frag_id = _assign_ids(new, next_frag_id)
        if stable:
            next_row_id = _assign_row_ids(new, next_row_id)
            for f in new:
                _set_new_version_meta(f, new_version)
        final = (_copy(existing) if isinstance(op, Append) else []) + new
        if isinstance(op, Overwrite):
            m.ClearField("fields")
            m.fields.extend(op.schema)
            m.ClearField("schema_metadata")
            m.schema_metadata.update(op.schema_metadata)
            m.config.update(op.config_upsert_values)
    elif isinstance(op, Delete):
        updated = {f.id: f for f in op.updated_fragments}
        removed = set(op.deleted_fragment_ids)
        final = _copy(updated.get(f.id, f) for f in existing if f.id not in removed)
    elif isinstance(op, Update):
        updated = {f.id: f for f in op.updated_fragments}
        removed = set(op.removed_fragment_ids)
        final = _copy(updated.get(f.id, f) for f in existing if f.id not in removed)
        new = _copy(op.new_fragments)
        next_frag_id = _assign_ids(new, next_frag_id)
        if stable:
            lookup_ids, lookup_vers = _created_at_lookup(existing)
            for f in new:
                # rows that kept their id keep their created-at version; rows getting fresh ids
                # (inserts, after the given ids) are created now
                rid = _row_ids_of(f)
                created = None
                if rid is not None and len(lookup_ids) and len(rid) <= f.physical_rows:
                    pos = np.minimum(np.searchsorted(lookup_ids, rid), len(lookup_ids) - 1)
                    hit = lookup_ids[pos] == rid
                    created = np.full(f.physical_rows, new_version, dtype=np.uint64)
                    created[: len(rid)] = np.where(hit, lookup_vers[pos], np.uint64(new_version))
                _set_new_version_meta(f, new_version, created)
            next_row_id = _assign_row_ids(new, next_row_id)
        final += new
    elif isinstance(op, Merge):
        final = _copy(op.fragments)
        before = {f.id: f for f in existing}
        for f in final:
            old = before.get(f.id)
            if old is not None and list(old.files) != list(f.files) and f.inline_last_updated_at_versions:
                f.inline_last_updated_at_versions = uniform_versions(f.physical_rows, new_version)
        m.ClearField("fields")
        m.fields.extend(op.schema)
        m.ClearField("schema_metadata")
        m.schema_metadata.update(op.schema_metadata)
    elif isinstance(op, Project):
        keep = {f.id for f in op.schema}
        final = _copy(existing)
        for f in final:
            files = [df for df in f.files if any(fid in keep for fid in df.fields)]
            del f.files[:]
            f.files.extend(files)
        m.ClearField("fields")
        m.fields.extend(op.schema)
    elif isinstance(op, Rewrite):
        final, next_frag_id = _apply_rewrite(existing, op, next_frag_id)
    elif isinstance(op, (ReserveFragments, UpdateConfig, CreateIndex)):
        final = _copy(existing)
        if isinstance(op, UpdateConfig):
            _apply_update_config(m, op)
    else:  # pragma: no cover - every Operation class is handled above
        raise NotSupportedError(f"unknown operation {op!r}")

    final.sort(key=lambda f: f.id)
    if len({f.id for f in final}) != len(final):
        raise InvalidInputError("fragment ids of the new version are not unique")
    for f in final:
        files = [df for df in f.files if any(fid != -2 for fid in df.fields)]
        if len(files) != len(f.files):
            del f.files[:]
            f.files.extend(files)
    m.fragments.extend(final)

    if previous is None:
        fmt = _storage_version_of(final)
        if fmt is not None and config.data_storage_version not in (None, fmt):
            raise InvalidInputError(
                f"requested data storage version {config.data_storage_version} does not match "
                f"the data files ({fmt})"
            )
        m.data_format.file_format = "lance"
        m.data_format.version = fmt or config.data_storage_version or DEFAULT_STORAGE_VERSION
    elif isinstance(op, Overwrite) and config.data_storage_version is not None:
        m.data_format.file_format = "lance"
        m.data_format.version = config.data_storage_version

    no_txn_file = previous is not None and bool(previous.writer_feature_flags & FLAG_DISABLE_TRANSACTION_FILE)
    apply_feature_flags(m, stable_row_ids=stable, disable_transaction_file=no_txn_file)
    ids = [f.id for f in final]
    if ids:
        top = max(ids)
        if not m.HasField("max_fragment_id") or top > m.max_fragment_id:
            m.max_fragment_id = top
    if isinstance(op, ReserveFragments):
        m.max_fragment_id = (m.max_fragment_id if m.HasField("max_fragment_id") else 0) + op.num_fragments
    if stable:
        m.next_row_id = next_row_id
    _finish(m, txn, transaction_file, new_version, config)
    return m


def _apply_update_config(m: table_pb2.Manifest, op: UpdateConfig) -> None:
    """``op``'s changes to the config, table metadata, schema metadata and field metadata of ``m``."""
    m.config.update(op.upsert_values)
    for k in op.delete_keys:
        m.config.pop(k, None)
    for name, target, encode in (("config_updates", "config", False),
                                 ("table_metadata_updates", "table_metadata", False),
                                 ("schema_metadata_updates", "schema_metadata", True)):
        um = getattr(op, name)
        if um is not None:
            new = um.apply(getattr(m, target), encode)
            m.ClearField(target)
            getattr(m, target).update(new)
    if op.field_metadata_updates:
        by_id = {f.id: f for f in m.fields}
        for fid, um in op.field_metadata_updates.items():
            f = by_id.get(int(fid))
            if f is None:
                raise InvalidInputError(f"field metadata update for field id {fid}, which the schema does not have")
            new = um.apply(f.metadata, True)
            f.ClearField("metadata")
            f.metadata.update(new)


__all__ = [
    "DEFAULT_STORAGE_VERSION",
    "LoadedManifest",
    "ManifestWriteConfig",
    "WRITER_LIBRARY",
    "apply_feature_flags",
    "build_manifest",
    "max_fragment_id",
    "parse_manifest_file",
    "serialize_manifest",
    "writer_version",
]

