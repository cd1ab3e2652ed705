"""Options of the ``lancejit`` Spark data source (Spark passes them as strings; names are
case-insensitive).  Unknown names are refused with the list of known ones and the closest match.

Read:

* ``path``: the dataset URI (set by ``load(uri)``); ``version``: a number or a tag name;
* ``columns``: comma-separated projection (Spark does not push projections to Python data
  sources); ``filter``: a SQL predicate evaluated by lancejit; ``batch_size``: rows per batch;
* partitioning, as Spark's file sources (see :mod:`.partitions`): ``maxPartitionBytes`` (bytes
  per partition at most, default 128 MiB), ``openCostInBytes`` (what opening a fragment costs,
  default 64 KiB), ``minPartitionNum`` (spread small datasets over this many tasks; default the
  planning host's cores), ``rows_per_partition`` (rows per partition at most);
* ``pushdown``: ``auto``/``true``/``false``, whether filters Spark pushes are accepted (``auto``:
  only on pyspark versions without the stale-filter bug).

Write: ``path``, ``max_rows_per_file`` (rows per data file = fragment), ``max_bytes_per_file``,
``data_storage_version`` (file version of a new dataset), ``max_page_bytes``, ``mergeSchema``
(``true``: an append may add nullable columns, the reference's schema evolution),
``write_mode`` (``errorifexists``/``ignore``/``append``/``overwrite``, set by
:func:`lancejit.spark.write` for the modes pyspark does not pass to a Python data source),
``abort_grace_seconds`` (how long an aborted job keeps removing files of its cancelled tasks).

Both: ``storage_options.<key>`` (passed to the store).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Mapping, overload

from lancejit.core.errors import InvalidInputError

from .partitions import DEFAULT_MAX_PARTITION_BYTES, DEFAULT_OPEN_COST_BYTES

DEFAULT_MAX_ROWS_PER_FILE = 1 << 20
DEFAULT_MAX_BYTES_PER_FILE = 90 * 1024**3
#: Seconds abort keeps removing files of cancelled tasks (Spark's Python kill timeout is 2 s).
DEFAULT_ABORT_GRACE_S = 3.0
#: Rows per batch handed to Spark (bigger batches: fewer JVM round trips per task).
DEFAULT_SPARK_BATCH_SIZE = 1 << 15
STORAGE_PREFIX = "storage_options."
WRITE_MODES = ("errorifexists", "ignore", "append", "overwrite")

#: Option names as documented (matching is case-insensitive).
READ_OPTIONS = ("path", "version", "columns", "filter", "batch_size", "maxPartitionBytes",
                "openCostInBytes", "minPartitionNum", "rows_per_partition", "pushdown")
WRITE_OPTIONS = ("path", "max_rows_per_file", "max_bytes_per_file", "data_storage_version",
                 "max_page_bytes", "mergeSchema", "write_mode", "abort_grace_seconds")


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): v for k, v in dict(options).items()}


def check_names(options: Mapping[str, str], known: tuple[str, ...], what: str,
                other: tuple[str, ...] = ()) -> None:
    """Refuse option names not in ``known`` (``storage_options.*`` always allowed), naming the
    known ones and the closest match; ``other``: the names of the other direction (read/write)."""
    by_lower = {k.lower(): k for k in known}
    for key in _lower(options):
        if key in by_lower or key.startswith(STORAGE_PREFIX):
            continue
        if key in {o.lower() for o in other}:
            raise InvalidInputError(f"option {key!r} applies to writes, not to {what}s" if what == "read"
                                    else f"option {key!r} applies to reads, not to {what}s")
        close = difflib.get_close_matches(key, list(by_lower), n=1, cutoff=0.6)
        hint = f"; did you mean {by_lower[close[0]]!r}?" if close else ""
        raise InvalidInputError(
            f"unknown {what} option {key!r}{hint} (known: {', '.join(known)}, storage_options.<key>)")


@overload
def _int(options: Mapping[str, str], key: str, default: int, minimum: int = ...) -> int: ...
@overload
def _int(options: Mapping[str, str], key: str, default: None, minimum: int = ...) -> int | None: ...


def _int(options: Mapping[str, str], key: str, default: int | None, minimum: int = 1) -> int | None:
    """Option ``key`` as an integer >= ``minimum`` (``default`` when absent or blank)."""
    raw = options.get(key.lower())
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidInputError(f"option {key!r} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise InvalidInputError(f"option {key!r} must be >= {minimum}, got {value}")
    return value


def _float(options: Mapping[str, str], key: str, default: float) -> float:
    raw = options.get(key.lower())
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise InvalidInputError(f"option {key!r} must be a number, got {raw!r}") from None
    if not value >= 0:
        raise InvalidInputError(f"option {key!r} must be >= 0, got {value}")
    return value


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key.lower())
    if raw is None or str(raw).strip() == "":
        return default
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise InvalidInputError(f"option {key!r} must be true or false, got {raw!r}")


def storage_options(options: Mapping[str, str]) -> dict[str, str] | None:
    """The ``storage_options.*`` entries with the prefix removed (None when there are none)."""
    out = {k[len(STORAGE_PREFIX):]: v for k, v in _lower(options).items() if k.startswith(STORAGE_PREFIX)}
    return out or None


def dataset_uri(options: Mapping[str, str]) -> str:
    uri = _lower(options).get("path")
    if not uri:
        raise InvalidInputError("the lancejit data source needs a dataset URI: load(uri) / save(uri)")
    return str(uri)


def parse_version(raw: str | None) -> int | str | None:
    """``"3"`` -> 3, a tag name stays a string, empty -> None (latest)."""
    if raw is None or str(raw).strip() == "":
        return None
    text = str(raw).strip()
    return int(text) if text.isdigit() else text


def parse_columns(raw: str | None) -> tuple[str, ...] | None:
    """``"a, b"`` -> ``("a", "b")``; None or empty -> None (every column)."""
    if raw is None or not str(raw).strip():
        return None
    return tuple(c.strip() for c in str(raw).split(",") if c.strip())


@dataclass(frozen=True, slots=True)
class ReadOptions:
    uri: str
    version: int | str | None = None
    columns: tuple[str, ...] | None = None
    filter: str | None = None
    batch_size: int = DEFAULT_SPARK_BATCH_SIZE
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    open_cost: int = DEFAULT_OPEN_COST_BYTES
    min_partitions: int | None = None
    rows_per_partition: int | None = None
    pushdown: str = "auto"
    storage_options: dict[str, str] | None = field(default=None, hash=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "ReadOptions":
        check_names(options, READ_OPTIONS, "read", WRITE_OPTIONS)
        low = _lower(options)
        pushdown = str(low.get("pushdown", "auto")).strip().lower()
        if pushdown not in ("auto", "true", "false"):
            raise InvalidInputError(f"option 'pushdown' must be auto, true or false, got {pushdown!r}")
        flt = low.get("filter")
        return cls(
            uri=dataset_uri(options),
            version=parse_version(low.get("version")),
            columns=parse_columns(low.get("columns")),
            filter=flt if flt and str(flt).strip() else None,
            batch_size=_int(low, "batch_size", DEFAULT_SPARK_BATCH_SIZE),
            max_partition_bytes=_int(low, "maxPartitionBytes", DEFAULT_MAX_PARTITION_BYTES),
            open_cost=_int(low, "openCostInBytes", DEFAULT_OPEN_COST_BYTES, minimum=0),
            min_partitions=_int(low, "minPartitionNum", None),
            rows_per_partition=_int(low, "rows_per_partition", None),
            pushdown=pushdown,
            storage_options=storage_options(options),
        )


@dataclass(frozen=True, slots=True)
class WriteOptions:
    uri: str
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE
    data_storage_version: str | None = None
    max_page_bytes: int | None = None
    merge_schema: bool = False
    write_mode: str | None = None
    abort_grace_seconds: float = DEFAULT_ABORT_GRACE_S
    storage_options: dict[str, str] | None = field(default=None, hash=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "WriteOptions":
        check_names(options, WRITE_OPTIONS, "write", READ_OPTIONS)
        low = _lower(options)
        dsv = low.get("data_storage_version")
        mode = low.get("write_mode")
        if mode is not None:
            mode = str(mode).strip().lower()
            mode = "errorifexists" if mode in ("error", "default") else mode
            if mode not in WRITE_MODES:
                raise InvalidInputError(f"option 'write_mode' must be one of {', '.join(WRITE_MODES)}, "
                                        f"got {mode!r}")
        return cls(
            uri=dataset_uri(options),
            max_rows_per_file=_int(low, "max_rows_per_file", DEFAULT_MAX_ROWS_PER_FILE),
            max_bytes_per_file=_int(low, "max_bytes_per_file", DEFAULT_MAX_BYTES_PER_FILE),
            data_storage_version=str(dsv).strip() if dsv else None,
            max_page_bytes=_int(low, "max_page_bytes", None),
            merge_schema=_bool(low, "mergeSchema", False),
            write_mode=mode,
            abort_grace_seconds=_float(low, "abort_grace_seconds", DEFAULT_ABORT_GRACE_S),
            storage_options=storage_options(options),
        )


__all__ = ["READ_OPTIONS", "ReadOptions", "WRITE_MODES", "WRITE_OPTIONS", "WriteOptions", "check_names",
           "parse_columns", "parse_version", "storage_options"]
