"""The ``nearest={...}`` argument of a scan, checked and normalized into a :class:`NearestQuery`.

Keys (the reference's): ``column`` (a fixed-size-list column of float16/float32/float64, or
uint8 for hamming), ``q`` (one vector, or a 2-D array / list of vectors: a batched query whose
result carries a ``query_index`` column), ``k`` (default 10), ``metric`` (``l2``/``euclidean``,
``cosine``, ``dot``, ``hamming``; default: the index's, else l2), ``use_index`` (default True),
``nprobes`` (sets both ``minimum_nprobes`` and ``maximum_nprobes``), ``minimum_nprobes``
(default :data:`DEFAULT_NPROBES`), ``maximum_nprobes`` (default: every partition), ``refine_factor``, ``ef``.
Errors are those the reference raises (``ValueError``, ``TypeError``), as lancejit's classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from lancejit.core.errors import InvalidInputError, InvalidTypeError, NotSupportedError

from . import kernels as K

DEFAULT_K = 10
#: Partitions an index search probes at least when ``nprobes`` / ``minimum_nprobes`` is not given
#: (pylance 14's default; more may be probed: see :mod:`.search`).
DEFAULT_NPROBES = 20
_METRICS = {"l2": K.L2, "euclidean": K.L2, "cosine": K.COSINE, "dot": K.DOT, "hamming": K.HAMMING}
METRIC_NAMES = {K.L2: "l2", K.COSINE: "cosine", K.DOT: "dot", K.HAMMING: "hamming"}
_KEYS = {"column", "q", "k", "metric", "use_index", "nprobes", "minimum_nprobes", "maximum_nprobes",
         "refine_factor", "ef", "distance_range", "lower_bound", "upper_bound"}


@dataclass(frozen=True, slots=True)
class NearestQuery:
    """A checked vector query.  ``q``: ``(nq, dim)`` in the dtype distances are computed in
    (float32 for float16/float32 columns, float64, or uint8 for hamming); ``batched``: ``q`` was
    given as several vectors; ``metric``: a :mod:`.kernels` metric code or None (the index's,
    else l2); ``value_type``: the column's element type."""

    column: str
    q: np.ndarray
    batched: bool
    k: int
    metric: int | None
    use_index: bool
    minimum_nprobes: int
    maximum_nprobes: int | None
    refine_factor: int | None
    ef: int | None
    dim: int
    value_type: pa.DataType

    def metric_or(self, default: int) -> int:
        return default if self.metric is None else self.metric


def metric_code(metric: Any) -> int:
    """The kernel code of a metric name (case-insensitive)."""
    if not isinstance(metric, str) or metric.lower() not in _METRICS:
        raise InvalidInputError(f"metric must be one of l2, cosine, dot, hamming; got {metric!r}")
    return _METRICS[metric.lower()]


def vector_type(schema: pa.Schema, column: str) -> tuple[int, pa.DataType]:
    """``(dim, element type)`` of the vector column ``column`` of ``schema``."""
    if not isinstance(column, str) or column not in schema.names:
        raise InvalidInputError(f"Embedding column {column!r} is not in the dataset")
    t = schema.field(column).type
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_list(t) and pa.types.is_fixed_size_list(t.value_type):
        raise NotSupportedError(f"column {column!r}: multivector columns are not supported")
    if not pa.types.is_fixed_size_list(t):
        raise InvalidTypeError(f"Query column {column} must be a vector. Got {t}.")
    vt = t.value_type
    if not (pa.types.is_floating(vt) or vt == pa.uint8()):
        raise InvalidTypeError(f"Query column {column} must hold float or uint8 vectors. Got {t}.")
    return t.list_size, vt


def _count(spec: Mapping[str, Any], key: str, minimum: int) -> int | None:
    v = spec.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        try:
            v = int(v)
        except (TypeError, ValueError):
            raise InvalidInputError(f"{key} must be an integer, got {v!r}") from None
    if v < minimum:
        raise InvalidInputError(f"{key} must be >= {minimum}, got {v}")
    return int(v)


def _query_vectors(q: Any) -> tuple[np.ndarray, bool]:
    if isinstance(q, (pa.Array, pa.ChunkedArray)):
        t = q.type
        if pa.types.is_fixed_size_list(t) or pa.types.is_list(t):
            q = np.array(q.to_pylist(), dtype=np.float64)
        else:
            q = q.to_numpy(zero_copy_only=False)
    elif isinstance(q, (list, tuple)) and q and isinstance(q[0], (list, tuple, np.ndarray, pa.Array)):
        q = np.array([np.asarray(x) for x in q])
    try:
        a = np.asarray(q)
    except (TypeError, ValueError):
        raise InvalidInputError("q must be a vector or a list of vectors") from None
    if a.dtype == object or a.ndim not in (1, 2) or a.size == 0:
        raise InvalidInputError(f"q must be a non-empty vector or a 2-D array of vectors, got shape {a.shape}")
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
        raise InvalidInputError(f"q must be numeric, got {a.dtype}")
    return (a.reshape(1, -1), False) if a.ndim == 1 else (a, True)


def parse_nearest(spec: Any, schema: pa.Schema) -> NearestQuery:
    """Check ``spec`` (the ``nearest`` dict) against ``schema``; see the module docstring."""
    if not isinstance(spec, Mapping):
        raise InvalidInputError(f"nearest must be a dict, got {type(spec).__name__}")
    unknown = set(spec) - _KEYS
    if unknown:
        raise InvalidInputError(f"nearest has unknown keys {sorted(unknown)}")
    if "column" not in spec or "q" not in spec:
        raise InvalidInputError("nearest needs 'column' and 'q'")
    column = spec["column"]
    dim, vt = vector_type(schema, column)
    q, batched = _query_vectors(spec["q"])
    if q.shape[1] != dim:
        raise InvalidInputError(f"Query vector size {q.shape[1]} does not match index column size {dim}")
    k = _count(spec, "k", 1)
    nprobes = _count(spec, "nprobes", 1)
    lo = _count(spec, "minimum_nprobes", 1)
    hi = _count(spec, "maximum_nprobes", 1)
    if nprobes is not None:
        if lo is not None or hi is not None:
            raise InvalidInputError("nprobes cannot be set in combination with minimum_nprobes or maximum_nprobes")
        lo = hi = nprobes
    if lo is not None and hi is not None and lo > hi:
        raise InvalidInputError("minimum_nprobes must be <= maximum_nprobes")
    refine = _count(spec, "refine_factor", 1)
    ef = _count(spec, "ef", 1)
    metric = spec.get("metric")
    code = metric_code(metric) if metric is not None else None
    if code == K.HAMMING and vt != pa.uint8():
        raise InvalidInputError(f"hamming distance needs a uint8 vector column, {column!r} holds {vt}")
    if vt == pa.uint8() and code not in (None, K.HAMMING):
        raise NotSupportedError(f"metric {metric!r} on uint8 vectors is not supported (hamming is)")
    if vt == pa.uint8():
        code = K.HAMMING
        qv = q.astype(np.uint8)
    elif vt == pa.float64():
        qv = np.ascontiguousarray(q, dtype=np.float64)
    elif vt == pa.float16():  # the query takes the column's precision, scored in float32
        qv = np.ascontiguousarray(np.asarray(q, dtype=np.float16), dtype=np.float32)
    else:
        qv = np.ascontiguousarray(q, dtype=np.float32)
    for key in ("distance_range", "lower_bound", "upper_bound"):
        if spec.get(key) is not None:
            raise NotSupportedError(f"nearest: {key} is not supported")
    use_index = spec.get("use_index", True)
    return NearestQuery(column, qv, batched, DEFAULT_K if k is None else k, code,
                        True if use_index is None else bool(use_index), DEFAULT_NPROBES if lo is None else lo, hi,
                        refine, ef, dim, vt)


__all__ = ["DEFAULT_K", "DEFAULT_NPROBES", "METRIC_NAMES", "NearestQuery", "metric_code", "parse_nearest", "vector_type"]
