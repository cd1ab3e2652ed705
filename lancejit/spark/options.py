"""Options of the ``lancejit`` Spark data source (Spark passes them as strings, keys lower-cased).

Read: ``path`` (the dataset URI, set by ``load(uri)``), ``version`` (number or tag name),
``columns`` (comma-separated projection), ``filter`` (SQL predicate evaluated by lancejit),
``batch_size`` (rows per Arrow batch), ``rows_per_partition`` (fragments larger than this are
split into row ranges), ``pushdown`` (``auto``/``true``/``false``: whether filters Spark pushes
are accepted; ``auto`` accepts them only on pyspark versions without the stale-filter bug),
``storage_options.<key>`` (passed to the store).
Write: ``path``, ``max_rows_per_file`` (rows per data file = fragment), ``data_storage_version``
(file version for a new dataset), ``max_page_bytes``, ``abort_grace_seconds`` (how long an
aborted job keeps removing files of its cancelled tasks), ``storage_options.<key>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from lancejit.core.errors import InvalidInputError

DEFAULT_ROWS_PER_PARTITION = 1 << 18
DEFAULT_MAX_ROWS_PER_FILE = 1 << 20
#: Seconds abort keeps removing files of cancelled tasks (Spark's Python kill timeout is 2 s).
DEFAULT_ABORT_GRACE_S = 3.0
STORAGE_PREFIX = "storage_options."


def _int(options: Mapping[str, str], key: str, default: int | None) -> int | None:
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidInputError(f"option {key!r} must be an integer, got {raw!r}") from None
    if value <= 0:
        raise InvalidInputError(f"option {key!r} must be positive, got {value}")
    return value


def _float(options: Mapping[str, str], key: str, default: float) -> float:
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise InvalidInputError(f"option {key!r} must be a number, got {raw!r}") from None
    if value < 0:
        raise InvalidInputError(f"option {key!r} must be >= 0, got {value}")
    return value


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): v for k, v in dict(options).items()}


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


@dataclass(frozen=True, slots=True)
class ReadOptions:
    uri: str
    version: int | str | None = None
    columns: tuple[str, ...] | None = None
    filter: str | None = None
    batch_size: int | None = None
    rows_per_partition: int = DEFAULT_ROWS_PER_PARTITION
    pushdown: str = "auto"
    storage_options: dict[str, str] | None = field(default=None, hash=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "ReadOptions":
        low = _lower(options)
        cols = low.get("columns")
        columns = tuple(c.strip() for c in cols.split(",") if c.strip()) if cols else None
        pushdown = str(low.get("pushdown", "auto")).strip().lower()
        if pushdown not in ("auto", "true", "false"):
            raise InvalidInputError(f"option 'pushdown' must be auto, true or false, got {pushdown!r}")
        flt = low.get("filter")
        return cls(
            uri=dataset_uri(options),
            version=parse_version(low.get("version")),
            columns=columns,
            filter=flt if flt and str(flt).strip() else None,
            batch_size=_int(low, "batch_size", None),
            rows_per_partition=_int(low, "rows_per_partition", DEFAULT_ROWS_PER_PARTITION),
            pushdown=pushdown,
            storage_options=storage_options(options),
        )


@dataclass(frozen=True, slots=True)
class WriteOptions:
    uri: str
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    data_storage_version: str | None = None
    max_page_bytes: int | None = None
    abort_grace_seconds: float = DEFAULT_ABORT_GRACE_S
    storage_options: dict[str, str] | None = field(default=None, hash=False)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "WriteOptions":
        low = _lower(options)
        dsv = low.get("data_storage_version")
        return cls(
            uri=dataset_uri(options),
            max_rows_per_file=_int(low, "max_rows_per_file", DEFAULT_MAX_ROWS_PER_FILE),
            data_storage_version=str(dsv).strip() if dsv else None,
            max_page_bytes=_int(low, "max_page_bytes", None),
            abort_grace_seconds=_float(low, "abort_grace_seconds", DEFAULT_ABORT_GRACE_S),
            storage_options=storage_options(options),
        )


__all__ = ["ReadOptions", "WriteOptions", "parse_version", "storage_options"]
