"""lancejit's datasets and scanners as ``pyarrow.dataset`` objects, for engines that accept
those (DuckDB, polars' ``scan_pyarrow_dataset``, code checking ``isinstance(x,
pyarrow.dataset.Dataset)``).

The reference subclasses ``pyarrow.dataset.Dataset``; importing ``pyarrow.dataset`` costs a
fresh process several tenths of a second (it loads pandas), which opening a dataset here does
not pay.  Instead, a dataset reports as its ``__class__`` a subclass of both its own class and
``pyarrow.dataset.Dataset`` (scanners likewise of ``pyarrow.dataset.Scanner``): ``isinstance``
answers True, and engines calling ``type(ds).scanner(ds, columns=..., filter=...)`` (DuckDB) or
``ds.to_table(columns=..., filter=...)`` / ``ds.head(...)`` (polars) reach lancejit's own scan,
projection and filter pushed down.  ``__class__`` is only consulted when a type check against
some other class fails (``isinstance(ds, pyarrow.Table)``, as DuckDB asks first); the first
such question imports ``pyarrow.dataset`` (DuckDB only recognizes datasets when that module is
loaded).

pyarrow's C++ functions taking a dataset (``pyarrow.dataset.Scanner.from_dataset``,
``pyarrow.dataset.write_dataset``) cannot call into Python: they raise ``TypeError`` (the
reference segfaults there); use ``ds.scanner(...)`` / ``ds.to_batches()`` instead.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

_VIEWS: dict[tuple[type, str], type] = {}


def arrow_view(cls: type, kind: str) -> type:
    """``cls`` seen as a ``pyarrow.dataset`` ``kind`` ("Dataset" or "Scanner"), a subclass of both
    (``cls`` itself when ``pyarrow.dataset`` cannot be imported)."""
    pds = sys.modules.get("pyarrow.dataset")
    if pds is None:
        try:
            pds = importlib.import_module("pyarrow.dataset")
        except ImportError:  # pragma: no cover - pyarrow without the dataset module
            return cls
    view = _VIEWS.get((cls, kind))
    if view is None:
        base = getattr(pds, kind)
        view = type(cls.__name__, (cls, base), {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                                "__doc__": cls.__doc__})
        _VIEWS[(cls, kind)] = view
    return view


class ArrowDatasetFace:
    """Mixin: ``__class__`` is the ``pyarrow.dataset.Dataset`` view (see the module docstring)."""

    @property  # type: ignore[misc]  # read-only by design; typeshed's object.__class__ has a setter
    def __class__(self) -> type:  # noqa: D105
        return arrow_view(type(self), "Dataset")


class ArrowScannerFace:
    """Mixin: ``__class__`` is the ``pyarrow.dataset.Scanner`` view."""

    @property  # type: ignore[misc]  # read-only by design; typeshed's object.__class__ has a setter
    def __class__(self) -> type:  # noqa: D105
        return arrow_view(type(self), "Scanner")


def filter_of(expression: Any) -> Any:
    """A filter argument as lancejit takes it: pyarrow ``Expression`` and SQL strings as they
    are; pyarrow's substrait ``BoundExpressions`` unwrapped."""
    exprs = getattr(expression, "expressions", None)
    if isinstance(exprs, dict) and len(exprs) == 1:
        return next(iter(exprs.values()))
    return expression


__all__ = ["ArrowDatasetFace", "ArrowScannerFace", "arrow_view", "filter_of"]
