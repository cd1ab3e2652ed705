"""How filters compare floating-point values: the reference's order, not IEEE's.

The reference (DataFusion over arrow-rs) compares floats by their *total order*: ``-NaN`` below
``-inf``, ``-0.0`` below ``+0.0``, ``NaN`` above ``+inf`` and equal to itself.  Arrow C++ (and so
``pyarrow.compute``) compares by IEEE rules: every comparison with NaN is false and ``-0.0 ==
0.0``.  Checked against pylance 14.0.2:

* expression vs expression (``f < g``, ``a <= f * -1``): total order, ``-0.0 < 0.0``;
* expression vs numeric literal (``f >= 0.0``, ``f = -0.0``): total order for NaN (``NaN > 1e300``
  is true) but ``-0.0`` and ``0.0`` compare equal;
* ``IN`` lists of floats: as the literal comparisons (``f IN (-0.0)`` matches ``0.0`` too).

A comparison involving a floating-point operand therefore compares int64 *keys* instead of the
values: the key of a double is its bit pattern with the magnitude bits flipped for negative
values, which orders exactly as the total order.  ``float_key(expr, fold_zero)`` is that key as an
Arrow expression (a registered scalar function, computed with NumPy per batch); ``fold_zero``
maps ``-0.0`` to ``0.0`` first.  Integer operands compared with floats are cast to double first,
as the reference does.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from lancejit.core import arrow_compute as pc
from lancejit.encoding.arrow_build import numbers_of, scalar_of

_KEY_FN = "lancejit_float_total_key"
_KEY_FN_FOLD = "lancejit_float_total_key_fold_zero"
_MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)
_registered = False
_lock = threading.Lock()


def total_keys(values: np.ndarray, fold_zero: bool = False) -> np.ndarray:
    """int64 keys of float64 ``values`` ordering as the IEEE total order (``fold_zero``: -0.0 as 0.0)."""
    v = np.ascontiguousarray(values, dtype=np.float64)
    if fold_zero:
        v = np.where(v == 0.0, 0.0, v)
    bits = v.view(np.int64)
    return bits ^ ((bits >> 63) & _MAGNITUDE)


def _kernel(fold_zero: bool):
    def key(ctx, x):  # noqa: ARG001 - Arrow passes the UDF context first
        if isinstance(x, pa.Scalar):
            v = x.as_py()
            if v is None:
                return pa.scalar(None, pa.int64())
            return pa.scalar(int(total_keys(np.array([v]), fold_zero)[0]), pa.int64())
        data = x.fill_null(0.0).to_numpy(zero_copy_only=False)
        keys = total_keys(data, fold_zero)
        mask = np.asarray(x.is_null()) if x.null_count else None
        return pa.array(keys, pa.int64(), mask=mask)

    return key


def _register() -> None:
    global _registered
    with _lock:
        if _registered:
            return
        for name, fold in ((_KEY_FN, False), (_KEY_FN_FOLD, True)):
            try:
                pc.register_scalar_function(
                    _kernel(fold), name,
                    {"summary": "total-order key of a double", "description": "lancejit filter helper"},
                    {"x": pa.float64()}, pa.int64(),
                )
            except pa.ArrowKeyError:  # already registered in this process
                pass
        _registered = True


def float_key(expr: pc.Expression, fold_zero: bool) -> pc.Expression:
    """The int64 total-order key of ``expr`` (cast to double, integers rounded to nearest) as
    an Arrow expression."""
    _register()
    return pc.Expression._call(_KEY_FN_FOLD if fold_zero else _KEY_FN, [expr.cast(pa.float64(), safe=False)])


def literal_key(value: float) -> pc.Expression:
    """The key of a numeric literal (``-0.0`` folded to ``0.0``) as an Arrow scalar expression."""
    return pc.scalar(scalar_of(int(total_keys(np.array([float(value)]), True)[0]), pa.int64()))


def key_set(values: pa.Array) -> pa.Array:
    """Keys of a float ``IN`` list (``-0.0`` folded; nulls dropped: they never match)."""
    vals = numbers_of(pc.cast(pc.drop_null(values), pa.float64()))
    keys = np.ascontiguousarray(total_keys(vals, True), dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(keys), [None, pa.py_buffer(keys)])
