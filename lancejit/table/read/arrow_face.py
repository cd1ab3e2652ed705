"""lancejit's datasets and scanners as ``pyarrow.dataset`` objects, for engines that accept
those (DuckDB, polars' ``scan_pyarrow_dataset``, code checking ``isinstance(x,
pyarrow.dataset.Dataset)``).

The reference subclasses ``pyarrow.dataset.Dataset``.  Importing ``pyarrow.dataset`` costs a
fresh process several tenths of a second (it loads pandas), so a dataset is one of two things,
chosen when it is created (setting ``pyarrow_dataset_class``):

* **genuine** (``on``, or ``auto`` when ``pyarrow.dataset`` is already imported): an instance of
  a class deriving from both lancejit's class and ``pyarrow.dataset.FileSystemDataset``.
  Engines that decide by the object's real class see a pyarrow dataset: DuckDB offers it the
  query's filters (``type(ds).scanner(ds, columns=..., filter=...)``, lancejit's scan).  Its
  C++ part, which pyarrow's C++ functions read (``Scanner.from_dataset``, union datasets), is a
  dataset of one placeholder file whose file system refuses to open it: those raise
  :class:`NotSupportedError` instead of crashing (the reference crashes there);
* **view** (``off``, or ``auto`` otherwise): a plain lancejit object whose ``__class__`` reports
  that class, so ``isinstance`` answers True and engines calling ``ds.scanner(columns=...,
  filter=...)`` / ``ds.to_table(...)`` / ``ds.head(...)`` (polars, DuckDB) reach lancejit's scan;
  DuckDB pushes only projections into a view (it filters the rows itself).  pyarrow's C++
  functions taking a dataset raise ``TypeError``.  ``__class__`` is only consulted when a type
  check against some other class fails; the first such question imports ``pyarrow.dataset``.

Either way a pyarrow ``Expression`` filter keeps pyarrow's meaning (DuckDB relies on it: it
does not filter again what it pushed), evaluated in lancejit's scan.  Scanners are views.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from lancejit.core.errors import NotSupportedError

_VIEWS: dict[tuple[type, str], type] = {}

#: The ``pyarrow.dataset`` class a lancejit class is seen as, by kind.
_BASES = {"Dataset": "FileSystemDataset", "Scanner": "Scanner"}

#: Attributes of ``FileSystemDataset`` that describe files pyarrow would read: absent here.
_FILE_ATTRIBUTES = ("files", "filesystem", "format", "partitioning")

_REFUSAL = ("pyarrow's C++ dataset functions cannot read a lancejit dataset; use ds.scanner(columns=, filter=) "
            "(or ds.to_table / ds.to_batches / ds.to_reader)")


def _pyarrow_dataset(load: bool) -> Any:
    """The ``pyarrow.dataset`` module (imported when ``load``), else None."""
    pds = sys.modules.get("pyarrow.dataset")
    if pds is None and load:
        try:
            pds = importlib.import_module("pyarrow.dataset")
        except ImportError:  # pragma: no cover - pyarrow without the dataset module
            return None
    return pds


def _absent(name: str) -> property:
    def get(self: Any) -> Any:
        raise AttributeError(f"lancejit datasets have no {name!r} (they are not read through pyarrow's file system)")

    return property(get)


def arrow_view(cls: type, kind: str) -> type:
    """``cls`` seen as a ``pyarrow.dataset`` ``kind`` ("Dataset" or "Scanner"): a subclass of both
    (``cls`` itself when it already is one, or when ``pyarrow.dataset`` cannot be imported)."""
    pds = _pyarrow_dataset(True)
    if pds is None:  # pragma: no cover
        return cls
    base = getattr(pds, _BASES[kind])
    if issubclass(cls, base):
        return cls
    view = _VIEWS.get((cls, kind))
    if view is None:
        namespace: dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                     "__doc__": cls.__doc__}
        if kind == "Dataset":
            namespace.update({name: _absent(name) for name in _FILE_ATTRIBUTES})
        view = type(cls.__name__, (cls, base), namespace)
        _VIEWS[(cls, kind)] = view
    return view


def genuine_datasets() -> bool:
    """Whether datasets created now are genuine ``pyarrow.dataset`` instances (module docstring)."""
    from lancejit.core.config import settings

    mode = settings().pyarrow_dataset_class
    if mode == "on":
        return True
    if mode == "off":
        return False
    return "pyarrow.dataset" in sys.modules


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise NotSupportedError(_REFUSAL)


_PLACEHOLDER: list[Any] = []


def _placeholder() -> tuple[Any, Any, Any]:
    """``(file format, file system, fragment)`` of a genuine dataset's C++ part: one file on a
    ``pyarrow.fs.PyFileSystem`` whose every operation raises :class:`NotSupportedError`."""
    if not _PLACEHOLDER:
        import pyarrow.dataset as pds
        import pyarrow.fs as pafs

        handler = pafs.FileSystemHandler
        methods: dict[str, Any] = {name: _refuse for name in handler.__abstractmethods__}
        methods.update({
            "__eq__": lambda self, other: type(other) is type(self),
            "__ne__": lambda self, other: type(other) is not type(self),
            "__hash__": lambda self: hash(type(self)),
            "get_type_name": lambda self: "lancejit",
            "normalize_path": lambda self, path: path,
        })
        fs = pafs.PyFileSystem(type("RefusingHandler", (handler,), methods)())
        fmt = pds.IpcFileFormat()
        _PLACEHOLDER.append((fmt, fs, fmt.make_fragment("lancejit-dataset", filesystem=fs)))
    return _PLACEHOLDER[0]


class ArrowDatasetFace:
    """Mixin: a genuine ``pyarrow.dataset`` instance or a view (see the module docstring).

    The class calls :meth:`_arm_arrow` whenever its schema may have changed (opening, moving to
    another version)."""

    if TYPE_CHECKING:  # what the dataset class this is mixed into provides
        @property
        def schema(self) -> Any: ...

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        pds = _pyarrow_dataset(False)
        if pds is not None and issubclass(cls, pds.FileSystemDataset):  # a genuine class already
            return pds.FileSystemDataset.__new__(cls)
        if genuine_datasets():
            pds = _pyarrow_dataset(True)
            if pds is not None:
                return pds.FileSystemDataset.__new__(arrow_view(cls, "Dataset"))
        return object.__new__(cls)

    def _arm_arrow(self) -> None:
        """Give a genuine instance's C++ part this dataset's schema (no-op for a view)."""
        pds = _pyarrow_dataset(False)
        if pds is None or not issubclass(type(self), pds.FileSystemDataset):
            return
        fmt, fs, frag = _placeholder()
        pds.FileSystemDataset.__init__(self, [frag], self.schema, fmt, fs)

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


__all__ = ["ArrowDatasetFace", "ArrowScannerFace", "arrow_view", "filter_of", "genuine_datasets"]
