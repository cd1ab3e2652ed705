"""Run one piece of code written for the reference against both libraries and compare.

``side_by_side(case, tmp_path)`` calls ``case(lance_module, base_dir)`` once with pylance and
once with lancejit (each in its own directory) and returns both outcomes: ``("ok", value)`` or
``("err", builtin exception classes)``.  ``assert_same(case, tmp_path, compare)`` asserts that
both succeed with equal values (``compare`` normalizes a value first) or both fail with the
reference's builtin exception classes among lancejit's.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import pyarrow as pa

import lance as ref_lance
import lancejit

LIBS = {"lance": ref_lance, "lancejit": lancejit}

#: Builtin exception classes compared (the reference's must be among lancejit's).
_BUILTINS = (ValueError, OSError, IndexError, KeyError, TypeError, NotImplementedError, RuntimeError,
             OverflowError, FileNotFoundError, FileExistsError)


def builtins_of(exc: BaseException) -> set[str]:
    return {b.__name__ for b in _BUILTINS if isinstance(exc, b)}


def outcome(case: Callable[[Any, str], Any], lib: Any, base: str) -> tuple[str, Any]:
    os.makedirs(base, exist_ok=True)
    try:
        return "ok", case(lib, base)
    except Exception as exc:  # noqa: BLE001 - compared by builtin class
        return "err", (builtins_of(exc), exc)


def side_by_side(case: Callable[[Any, str], Any], tmp_path: Any) -> dict[str, tuple[str, Any]]:
    return {name: outcome(case, lib, str(tmp_path / name)) for name, lib in LIBS.items()}


def normalize(value: Any) -> Any:
    """Values made comparable across the libraries (tables by content, dataset objects by
    version and rows)."""
    if isinstance(value, pa.Table):
        return ("table", value.schema.names, value.to_pylist())
    if isinstance(value, pa.RecordBatch):
        return normalize(pa.Table.from_batches([value]))
    if hasattr(value, "version") and hasattr(value, "count_rows") and hasattr(value, "to_table"):
        return ("dataset", value.version, normalize(value.to_table()))
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(normalize(v) for v in value)
    return value


def assert_same(case: Callable[[Any, str], Any], tmp_path: Any,
                compare: Callable[[Any], Any] = normalize) -> Any:
    got = side_by_side(case, tmp_path)
    ref, ours = got["lance"], got["lancejit"]
    if ref[0] == "err":
        assert ours[0] == "err", f"the reference raised {ref[1][1]!r}; lancejit returned {ours[1]!r}"
        assert ref[1][0] <= ours[1][0], (f"builtins differ: reference {sorted(ref[1][0])} ({ref[1][1]!r}), "
                                         f"lancejit {sorted(ours[1][0])} ({ours[1][1]!r})")
        return None
    assert ours[0] == "ok", f"lancejit raised {ours[1][1]!r}; the reference returned {ref[1]!r}"
    a, b = compare(ours[1]), compare(ref[1])
    assert a == b, f"lancejit:\n{a!r}\nthe reference:\n{b!r}"
    return ours[1]


__all__ = ["LIBS", "assert_same", "builtins_of", "normalize", "outcome", "side_by_side"]
