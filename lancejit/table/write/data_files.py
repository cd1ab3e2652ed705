"""Writing new data files of a dataset: record batches -> ``data/<name>.lance`` files -> fragments.

Used by :func:`lancejit.table.write.dataset_write.write_data_async`, ``update`` (rewritten rows) and
``add_columns`` (one new file per fragment).  Names follow the reference: 24 binary digits from
the first 3 bytes of a random UUIDv4, then the other 13 bytes in hex, then ``.lance``.

``DataFile`` descriptions are set as pylance 14 sets them: ``fields`` = the dataset field ids
that own a column (2.0: every field in pre-order; 2.1/2.2: the leaves, with packed structs,
blobs and empty structs as one unit), ``column_indices`` = 0..n-1, the file version ((2, 0) for
2.0 files), and ``file_size_bytes``.  The data files carry the dataset's field ids in their schema.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import pyarrow as pa

from lancejit.core.errors import InvalidInputError, NotSupportedError, SchemaMismatchError
from lancejit.core.schema import LanceField, LanceSchema
from lancejit.io.store import ObjectStore, join_path
from lancejit.pb import table_pb2

if TYPE_CHECKING:  # pragma: no cover
    from lancejit.file.writer_schema import WriterTemplate

DATA_DIR = "data"
#: The reference's default ``max_bytes_per_file`` (90 GiB).
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3
DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
#: Small batches are gathered until they hold this many rows ...
COALESCE_ROWS = 256 * 1024
#: ... or this many bytes before they reach the file writer.
COALESCE_BYTES = 8 * 1024 * 1024

_STORAGE_VERSIONS = {"2.0": "2.0", "0.3": "2.0", "2.1": "2.1", "2.2": "2.2", "stable": "2.2"}
_FILE_NUMBERS = {"2.0": (2, 0), "2.1": (2, 1), "2.2": (2, 2)}


def normalize_storage_version(version: str | None, default: str = "2.2") -> str:
    """``"2.0"``, ``"2.1"`` or ``"2.2"`` for a user's data storage version (None -> ``default``)."""
    v = (version or default).strip().lower()
    if v in _STORAGE_VERSIONS:
        return _STORAGE_VERSIONS[v]
    if v in ("legacy", "0.1", "next", "2.3"):
        raise NotSupportedError(f"writing data storage version {version!r} is not supported")
    raise InvalidInputError(f"unknown data storage version {version!r}")


def random_file_name() -> str:
    """A data file's base name (no extension) in the reference's format (50 characters)."""
    raw = uuid.uuid4().bytes
    return "".join(format(b, "08b") for b in raw[:3]) + raw[3:].hex()


def _truthy(v: bytes | str | None) -> bool:
    if v is None:
        return False
    s = v.decode(errors="replace") if isinstance(v, bytes) else v
    return s.strip().lower() not in ("", "false", "0", "no", "off")


def _is_unit(f: LanceField) -> bool:
    md = f.metadata
    packed = any(_truthy(md.get(k)) for k in ("lance-encoding:packed", "packed"))
    return f.is_blob or (f.is_struct and (packed or not f.children))


def column_field_ids(fields: tuple[LanceField, ...], storage_version: str) -> list[int]:
    """Dataset field ids owning a column, in column order, for top-level ``fields``."""
    if storage_version == "2.0":
        return [f.id for top in fields for f in top.walk()]
    out: list[int] = []

    def walk(f: LanceField) -> None:
        if _is_unit(f) or not f.children:
            out.append(f.id)
        else:
            for c in f.children:
                walk(c)

    for top in fields:
        walk(top)
    return out


def conform_batch(batch: pa.RecordBatch, target: pa.Schema, where: str) -> pa.RecordBatch:
    """``batch`` with its columns in ``target``'s order (matched by name) and ``target``'s field
    types; :class:`SchemaMismatchError` when a column is missing, extra or of another type."""
    names = batch.schema.names
    if len(set(names)) != len(names):
        raise SchemaMismatchError(f"{where}: data has duplicate column names {names}")
    missing = [f.name for f in target if f.name not in names]
    extra = [n for n in names if target.get_field_index(n) < 0]
    if missing or extra:
        raise SchemaMismatchError(
            f"{where}: data columns {names} do not match the dataset's {target.names}"
            + (f" (missing {missing})" if missing else "") + (f" (unexpected {extra})" if extra else "")
        )
    cols = []
    for f in target:
        col = batch.column(names.index(f.name))
        if not col.type.equals(f.type):
            raise SchemaMismatchError(
                f"{where}: column {f.name!r} has type {col.type}, the dataset has {f.type}"
            )
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=target)


@dataclass(frozen=True)
class FileLayout:
    """What the data files of one schema share: the Lance schema, the files' Arrow schema, the
    dataset field ids owning their columns, and the file writer's template."""

    lance_schema: LanceSchema
    file_schema: pa.Schema
    field_ids: tuple[int, ...]
    template: "WriterTemplate"


@functools.lru_cache(maxsize=32)
def file_layout(fields: tuple[LanceField, ...], metadata: tuple[tuple[str, bytes], ...],
                storage_version: str) -> FileLayout:
    """The :class:`FileLayout` of top-level ``fields`` with schema ``metadata`` (items), built
    once per schema (an operation writing many files asks for it per file)."""
    from lancejit.file.writer_schema import writer_template

    lschema = LanceSchema(fields, dict(metadata))
    file_schema = lschema.to_arrow(dataset=False)
    return FileLayout(lschema, file_schema, tuple(column_field_ids(fields, storage_version)),
                      writer_template(file_schema, lschema))


@dataclass(slots=True)
class WrittenFile:
    """A finished data file: ``name`` under ``data/``, ``rows``, ``size`` in bytes."""

    name: str
    rows: int
    size: int


@dataclass
class FragmentFileWriter:
    """Streams batches of ``schema`` (top-level Lance ``fields``) into data files, starting a new
    file every ``max_rows_per_file`` rows or ``max_bytes_per_file`` bytes.

    Call :meth:`write` per batch, :meth:`finish` for the files, :meth:`cleanup` on failure
    (aborts the open file and deletes the finished ones).  ``file_rows`` gives each file its own
    row count instead (compaction's even split).
    """

    store: ObjectStore
    root: str
    fields: tuple[LanceField, ...]
    schema_metadata: dict[str, bytes]
    storage_version: str
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE
    storage_options: dict[str, Any] | None = None
    max_page_bytes: int | None = None
    on_file: Callable[[WrittenFile], None] | None = None
    #: Put before every data file's name (lets a job find the files it wrote).
    name_prefix: str = ""
    #: Rows of each file, in order (None: ``max_rows_per_file`` each); files past the list
    #: hold ``max_rows_per_file`` rows.
    file_rows: Sequence[int] | None = None
    files: list[WrittenFile] = field(default_factory=list)
    _writer: Any = None
    _name: str | None = None
    _rows: int = 0
    _pending: list = field(default_factory=list)
    _pending_rows: int = 0
    _pending_bytes: int = 0

    def __post_init__(self) -> None:
        if self.max_rows_per_file <= 0 or self.max_bytes_per_file <= 0:
            raise InvalidInputError("max_rows_per_file and max_bytes_per_file must be positive")
        self.layout = file_layout(tuple(self.fields), tuple(sorted(self.schema_metadata.items())),
                                  self.storage_version)
        self.file_schema = self.layout.file_schema
        self.field_ids = list(self.layout.field_ids)

    def path_of(self, name: str) -> str:
        return join_path(self.root, DATA_DIR, name)

    async def _open(self) -> None:
        from lancejit.file.writer import AsyncLanceFileWriter

        self._name = self.name_prefix + random_file_name() + ".lance"
        path = self.path_of(self._name)
        w = AsyncLanceFileWriter(
            self.store.uri(path), self.file_schema, version=self.storage_version,
            storage_options=self.storage_options, max_page_bytes=self.max_page_bytes,
            lance_schema=self.layout.lance_schema,  # data files carry the dataset's field ids
            template=self.layout.template, opener=functools.partial(self.store.open_writer, path),
        )
        self._writer = w
        self._rows = 0

    async def _close_current(self) -> None:
        if self._writer is None:
            return
        w, name = self._writer, self._name
        assert name is not None  # named by _open with the writer
        self._writer = None
        self._rows = 0
        rows = await w.close()
        ncols = w.num_columns or len(self.field_ids)
        if ncols != len(self.field_ids):
            self.files.append(WrittenFile(name, rows, 0))
            raise NotSupportedError(
                f"data file has {ncols} columns but the schema has {len(self.field_ids)} column fields"
            )
        size = w.bytes_written
        if not size:
            size = await self.store.size(self.path_of(name))
        wf = WrittenFile(name, int(rows), int(size))
        self.files.append(wf)
        if self.on_file is not None:
            self.on_file(wf)

    async def write(self, batch: pa.RecordBatch) -> None:
        """Append ``batch`` (already conformed to :attr:`file_schema`).  Small batches are
        gathered and handed to the file writer together (:data:`COALESCE_ROWS` rows or
        :data:`COALESCE_BYTES` bytes at a time, or as soon as they complete a file: each
        hand-off encodes every column)."""
        n = batch.num_rows
        if not self._pending and (n >= COALESCE_ROWS or batch.nbytes >= COALESCE_BYTES):
            await self._write_now(batch)
            return
        self._pending.append(batch)
        self._pending_rows += n
        self._pending_bytes += batch.nbytes
        if (self._pending_rows >= COALESCE_ROWS or self._pending_bytes >= COALESCE_BYTES
                or self._rows + self._pending_rows >= self._file_limit()):  # a file is complete
            await self._flush_pending()

    def _file_limit(self) -> int:
        """Rows of the file being written (or the next one)."""
        quotas = self.file_rows
        k = len(self.files)
        if quotas is not None and k < len(quotas) and quotas[k] > 0:
            return quotas[k]
        return self.max_rows_per_file

    async def _flush_pending(self) -> None:
        if not self._pending:
            return
        pending = self._pending
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        await self._write_now(pending[0] if len(pending) == 1 else pa.concat_batches(pending))

    async def _write_now(self, batch: pa.RecordBatch) -> None:
        start = 0
        n = batch.num_rows
        while start < n:
            if self._writer is None:
                await self._open()
            limit = self._file_limit()
            take = min(n - start, limit - self._rows)
            await self._writer.write_batch(batch.slice(start, take))
            self._rows += take
            start += take
            if self._rows >= limit or self._writer.bytes_written >= self.max_bytes_per_file:
                await self._close_current()

    async def finish(self) -> list[WrittenFile]:
        await self._flush_pending()
        await self._close_current()
        return list(self.files)

    def data_file(self, wf: WrittenFile) -> table_pb2.DataFile:
        major, minor = _FILE_NUMBERS[self.storage_version]
        return table_pb2.DataFile(
            path=wf.name, fields=self.field_ids, column_indices=list(range(len(self.field_ids))),
            file_major_version=major, file_minor_version=minor, file_size_bytes=wf.size,
        )

    async def cleanup(self) -> None:
        """Abort the open file and delete every finished one (best effort)."""
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        if self._writer is not None:
            try:
                await self._writer.abort()
            except Exception:  # noqa: BLE001 - keep the original error
                pass
            self._writer = None
        paths = [self.path_of(f.name) for f in self.files]
        self.files.clear()
        try:
            await self.store.delete_many(paths)
        except Exception:  # noqa: BLE001
            pass


__all__ = [
    "DATA_DIR",
    "DEFAULT_MAX_BYTES_PER_FILE",
    "DEFAULT_MAX_ROWS_PER_FILE",
    "FileLayout",
    "FragmentFileWriter",
    "WrittenFile",
    "column_field_ids",
    "conform_batch",
    "file_layout",
    "normalize_storage_version",
    "random_file_name",
]
