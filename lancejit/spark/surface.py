"""lancejit's own errors shown to Spark users message first.

pyspark reports an exception raised in a Python worker as its formatted traceback (the
``AnalysisException`` / ``PythonException`` text starts with ``Traceback`` and lancejit's
source lines; the message comes last).  For errors lancejit raises on purpose (bad options,
missing versions or columns, schema mismatches: :class:`~lancejit.core.errors.LanceJitError`)
the entry points of the data source ask pyspark's handler for the message alone, through the
``SPARK_HIDE_TRACEBACK`` switch it reads when it formats the exception (the worker exits right
after reporting, so nothing else in that process sees the switch).  Other exceptions keep
their traceback.
"""

from __future__ import annotations

import functools
import os
from typing import Callable, Iterator, ParamSpec, TypeVar

from lancejit.core.errors import LanceJitError

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def in_spark_worker() -> bool:
    """Whether this process is a Python worker Spark started (not the driver)."""
    return os.environ.get("SPARK_PYTHON_RUNTIME") == "PYTHON_WORKER"


def _mark(exc: BaseException) -> None:
    if isinstance(exc, LanceJitError) and in_spark_worker():
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"


def surfaced(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a data source entry point (see the module docstring)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            _mark(exc)
            raise

    return wrapper


def surfaced_iter(it: Iterator[T]) -> Iterator[T]:
    """``it``, with its errors surfaced as :func:`surfaced` does."""
    try:
        yield from it
    except BaseException as exc:
        _mark(exc)
        raise


__all__ = ["in_spark_worker", "surfaced", "surfaced_iter"]
