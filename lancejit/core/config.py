"""lancejit's configuration: every tuning knob declared once, with its type, default, unit and doc.

Values come from, in order of precedence:

1. :func:`override` (a context manager; per call, per task: it rides on :mod:`contextvars`, and
   lancejit's sync calls carry the caller's context onto its I/O loop);
2. :func:`configure` (process-wide);
3. the knob's environment variable (``LANCEJIT_...``), read once at import;
4. the declared default.

Code reads the current values with :func:`settings` (one immutable :class:`Settings` object;
cheap enough for every call, not meant for per-row loops)::

    from lancejit.core.config import settings
    rows = settings().scan_unit_rows

``lancejit config`` (``python -m lancejit.cli config``) prints the table of knobs and values;
:func:`knob_table` renders it (the README's table is generated from it).

Per-store I/O settings (:class:`IOConfig`: block size, request size, parallelism, bytes in flight)
are also overridable per dataset through ``storage_options``.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Iterator

from lancejit.core.errors import InvalidInputError

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True, slots=True)
class Knob:
    """One tuning knob: attribute ``name`` of :class:`Settings`, its ``type`` (int, float, bool),
    ``default``, ``unit`` (bytes, rows, ms, s, count, fraction, flag...), ``doc``, and the
    environment variable read at import (``LANCEJIT_`` + the name in capitals)."""

    name: str
    type: type
    default: Any
    unit: str
    doc: str

    @property
    def env_var(self) -> str:
        return "LANCEJIT_" + self.name.upper()


def knob(default: Any, unit: str, doc: str) -> Any:
    """A field of :class:`Settings`: its ``default``, ``unit`` (bytes, rows, ms, s, count,
    fraction, flag...) and ``doc``; its environment variable is ``LANCEJIT_`` + its name in
    capitals."""
    return dataclasses.field(default=default, metadata={"unit": unit, "doc": doc})


@dataclass(frozen=True, slots=True)
class Settings:
    """The value of every knob (immutable).  The fields are the declarations: each one's
    default, unit, meaning and environment variable (:data:`KNOBS` lists them as :class:`Knob`)."""

    # ---------------------------------------------------------------- I/O
    local_block_size: int = knob(4 * KiB, "bytes",
        "local stores: ranges closer than this are read as one")
    cloud_block_size: int = knob(64 * KiB, "bytes",
        "object stores: ranges closer than this are read as one")
    max_iop_size: int = knob(0, "bytes",
        "longest single read request (0: 8 MiB on local stores, 16 MiB on object stores, the reference's)")
    local_io_threads: int = knob(8, "count",
        "local stores: reads in flight")
    cloud_io_threads: int = knob(64, "count",
        "object stores: requests in flight")
    max_bytes_in_flight: int = knob(256 * MiB, "bytes",
        "bytes requested but not yet consumed, per store")
    local_inline_read_bytes: int = knob(4 * MiB, "bytes",
        "local reads up to this size run in the calling thread (larger ones in a worker thread)")
    footer_prefetch_bytes: int = knob(64 * KiB, "bytes",
        "bytes read from a file's end to find its metadata")
    metadata_cache_bytes: int = knob(512 * MiB, "bytes",
        "bound on the decoded-metadata search cache")
    store_max_retries: int = knob(6, "count",
        "object stores: attempts after a retryable failure")
    store_timeout_s: float = knob(60.0, "s",
        "object stores: a request making no progress this long is retried")
    # ---------------------------------------------------------------- scans
    batch_size: int = knob(8192, "rows",
        "rows per record batch of a scan")
    scan_readahead: int = knob(4, "count",
        "scan units read ahead of the consumer")
    scan_unit_bytes: int = knob(32 * MiB, "bytes",
        "target encoded bytes of one scan unit")
    scan_unit_rows: int = knob(1 << 17, "rows",
        "most rows of one scan unit")
    scan_readahead_bytes: int = knob(64 * MiB, "bytes",
        "estimated encoded bytes in flight of a scan")
    scan_units_in_flight: int = knob(64, "count",
        "most scan units read concurrently")
    late_materialization: bool = knob(True, "flag",
        "filtered scans read the filter's columns first and the others only for matching rows")
    late_take_fraction: float = knob(0.2, "fraction",
        "late materialization fetches the other columns by take below this fraction of matching rows")
    page_pruning: bool = knob(True, "flag",
        "filtered scans skip pages whose statistics (legacy page statistics, zone maps) cannot match")
    scalar_indices: bool = knob(True, "flag",
        "filters (scans, counts, delete/update, merge_insert keys) are answered by BTREE, BITMAP and LABEL_LIST "
        "indices where they cover fragments")
    index_candidate_cost: float = knob(2.0, "scanned values",
        "estimated cost of reading one row a scalar index selected, in values of a numeric column scanned and "
        "compared (a text column's value counts two), three times as much when the filter is evaluated again "
        "on it; the selected rows are read instead of scanning the filter's columns when that costs less")
    index_parts_bytes: int = knob(512 * MiB, "bytes",
        "loaded parts of scalar indices (BTREE pages, bitmaps) a dataset keeps")
    decode_threads: int = knob(-1, "count",
        "worker threads decoding scans of many files (-1: one per spare core, 0: decode inline)")
    decode_offload_rows: int = knob(1 << 14, "rows",
        "a group of scan units of at least this many rows decodes in a worker thread (kernels release the GIL)")
    decode_offload_file_rows: int = knob(8192, "rows",
        "... and of at least this many rows per file on average (groups of many small files decode inline)")
    whole_file_bytes: int = knob(64 * KiB, "bytes",
        "data files of at most this size are kept whole once opened")
    gc_pause_files: int = knob(32, "count",
        "local and memory stores: the garbage collector pauses while this many new data files open together")
    malloc_tune: bool = knob(True, "flag",
        "at the first scan, glibc keeps freed scan buffers (mmap threshold 32 MiB, trim threshold 64 MiB)")
    # ---------------------------------------------------------------- takes
    take_batch: bool = knob(True, "flag",
        "concurrent take_async calls on one dataset are merged into one take")
    take_batch_window_ms: float = knob(0.0, "ms",
        "also merge take_async callers arriving up to this long apart")
    take_batch_max_callers: int = knob(0, "count",
        "most callers merged into one take (0: no bound)")
    take_offload_rows: int = knob(1 << 16, "rows",
        "takes of at least this many rows sort and reorder their indices in a worker thread")
    tier0: str = knob("on", "mode",
        "small kernel calls run interpreted until Numba is worth loading (on, off; always: every small call)")
    # ---------------------------------------------------------------- interoperability
    pyarrow_dataset_class: str = knob("auto", "mode",
        "datasets are instances of a pyarrow.dataset class, as the reference's (DuckDB then pushes filters into "
        "their scans): on, off (a view through __class__), auto (on when pyarrow.dataset is already imported; "
        "importing it costs a fresh process ~0.4 s)")
    # ---------------------------------------------------------------- kernels
    numba_fast_load: bool = knob(True, "flag",
        "load cached kernels without Numba's full target refresh (verified Numba versions only)")
    background_compile: bool = knob(True, "flag",
        "kernels missing from the cache are compiled by a background process while calls run interpreted")
    # ---------------------------------------------------------------- writes and commits
    max_rows_per_file: int = knob(1024 * 1024, "rows",
        "default rows per written data file")
    max_bytes_per_file: int = knob(90 * 1024**3, "bytes",
        "default bytes per written data file")
    conflict_retries: int = knob(10, "count",
        "an operation whose commit conflicts is re-run on the latest version at most this many times")
    commit_attempts: int = knob(20, "count",
        "a commit finding its version taken checks for conflicts and tries the next one at most this many times")
    # ---------------------------------------------------------------- vector search
    vector_cache_mb: int = knob(-1, "MiB",
        "decoded vectors kept between searches (-1: 2 GiB or an eighth of RAM, 0: none)")
    vector_merge: bool = knob(True, "flag",
        "concurrent vector searches on one dataset are merged")


def _knobs() -> tuple[Knob, ...]:
    out = []
    for f in dataclasses.fields(Settings):
        t = {"int": int, "float": float, "bool": bool, "str": str}[f.type] if isinstance(f.type, str) else f.type
        out.append(Knob(f.name, t, f.default, f.metadata["unit"], f.metadata["doc"]))
    return tuple(out)


#: Every knob, in declaration order.
KNOBS: tuple[Knob, ...] = _knobs()

_BY_NAME = {k.name: k for k in KNOBS}


def _parse(knob: Knob, text: str) -> Any:
    text = text.strip()
    if knob.type is bool:
        low = text.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off", ""):
            return False
        raise InvalidInputError(f"{knob.env_var}={text!r}: expected 0/1, true/false, yes/no or on/off")
    if knob.type is str:
        return text.lower()
    try:
        return knob.type(text)
    except ValueError:
        raise InvalidInputError(f"{knob.env_var}={text!r}: expected {knob.type.__name__}") from None


def _check(knob: Knob, value: Any) -> Any:
    if knob.type is str:
        if not isinstance(value, str):
            raise InvalidInputError(f"config {knob.name} must be a str, got {value!r}")
        return value.strip().lower()
    if knob.type is bool:
        if not isinstance(value, bool):
            raise InvalidInputError(f"config {knob.name} must be a bool, got {value!r}")
        return value
    if knob.type is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, knob.type) or isinstance(value, bool):
        raise InvalidInputError(f"config {knob.name} must be {knob.type.__name__}, got {value!r}")
    return value


def _from_env() -> Settings:
    values = {}
    for k in KNOBS:
        raw = os.environ.get(k.env_var)
        values[k.name] = k.default if raw is None or raw == "" else _parse(k, raw)
    return Settings(**values)


_base = _from_env()
_current: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("lancejit_settings", default=None)


def settings() -> Settings:
    """The current :class:`Settings` (an :func:`override` in effect, else the process's)."""
    cur = _current.get()
    return _base if cur is None else cur


def _updated(base: Settings, values: dict[str, Any]) -> Settings:
    unknown = [n for n in values if n not in _BY_NAME]
    if unknown:
        raise InvalidInputError(f"unknown config knobs {unknown}; knobs: {sorted(_BY_NAME)}")
    return dataclasses.replace(base, **{n: _check(_BY_NAME[n], v) for n, v in values.items()})


def configure(**values: Any) -> None:
    """Set knobs for the whole process (overrides in effect are not changed)."""
    global _base
    _base = _updated(_base, values)


@contextlib.contextmanager
def override(**values: Any) -> Iterator[Settings]:
    """Set knobs within a ``with`` block (this thread/task and the lancejit calls made from it)."""
    token = _current.set(_updated(settings(), values))
    try:
        yield settings()
    finally:
        _current.reset(token)


def reset() -> None:
    """Back to the environment's values and the defaults (for tests and tools)."""
    global _base
    _base = _from_env()


def knob_table(current: Settings | None = None) -> str:
    """The knobs as a Markdown table (name, environment variable, default, unit, meaning; and the
    current value when ``current`` is given)."""
    head = "| knob | environment | default | unit | meaning |" + (" value |" if current is not None else "")
    rule = "|---|---|---|---|---|" + ("---|" if current is not None else "")
    rows = [head, rule]
    for k in KNOBS:
        row = f"| `{k.name}` | `{k.env_var}` | {k.default!r} | {k.unit} | {k.doc} |"
        if current is not None:
            row += f" {getattr(current, k.name)!r} |"
        rows.append(row)
    return "\n".join(rows)


@dataclass(frozen=True, slots=True)
class IOConfig:
    """Scheduler settings for one store kind (overridable per dataset through storage options).

    ``block_size``: ranges closer than this are read as one request (bytes).
    ``max_request_size``: longer reads are split into parts read concurrently (bytes).
    ``io_parallelism``: requests in flight per store (the IOPS budget).
    ``max_bytes_in_flight``: backpressure bound on bytes requested but not yet consumed.
    """

    block_size: int
    max_request_size: int
    io_parallelism: int
    max_bytes_in_flight: int


def local_io() -> IOConfig:
    """The I/O settings of local stores from the current knobs."""
    s = settings()
    return IOConfig(s.local_block_size, s.max_iop_size or 8 * MiB, s.local_io_threads, s.max_bytes_in_flight)


def cloud_io() -> IOConfig:
    """The I/O settings of object stores from the current knobs."""
    s = settings()
    return IOConfig(s.cloud_block_size, s.max_iop_size or 16 * MiB, s.cloud_io_threads, s.max_bytes_in_flight)


LOCAL_IO = local_io()
CLOUD_IO = cloud_io()

#: Bytes read from the end of a file to find its footer and (usually) all its metadata.
FOOTER_PREFETCH_BYTES = _base.footer_prefetch_bytes
#: Bound on the decoded-metadata search cache, in bytes.
METADATA_CACHE_BYTES = _base.metadata_cache_bytes
#: Target bytes per column per scan read (page-sized requests).
SCAN_READ_BYTES = 8 * MiB
#: Default rows per record batch returned by scans.
DEFAULT_BATCH_SIZE = _base.batch_size

__all__ = ["CLOUD_IO", "DEFAULT_BATCH_SIZE", "FOOTER_PREFETCH_BYTES", "IOConfig", "KNOBS", "Knob", "LOCAL_IO",
           "METADATA_CACHE_BYTES", "KiB", "MiB", "SCAN_READ_BYTES", "Settings", "cloud_io", "configure",
           "knob_table", "local_io", "override", "reset", "settings"]
