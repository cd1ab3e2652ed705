"""One sync/async pattern: every public ``x_async`` method of the public classes has a sync twin
``x`` derived by :func:`lancejit.io.sync.bridged` (same signature and docstring)."""

from __future__ import annotations

import inspect

import pytest

import lancejit
from lancejit.io.sync import async_methods_without_twin
from lancejit.table.read.dataset_reader import Scanner
from lancejit.table.vector.scanner import NearestScanner


@pytest.mark.parametrize("cls", [lancejit.Dataset, Scanner, NearestScanner], ids=lambda c: c.__name__)
def test_every_async_method_has_a_sync_twin(cls):
    assert async_methods_without_twin(cls) == []


def test_twins_carry_signature_and_doc():
    ds = lancejit.Dataset
    for name in ("to_table", "take", "delete", "checkout_version"):
        sync, coro = getattr(ds, name), getattr(ds, name + "_async")
        assert inspect.signature(sync).parameters.keys() == inspect.signature(coro).parameters.keys()
        assert sync.__doc__ == coro.__doc__
        assert sync.__name__ == name
    r = lancejit.LanceFileReader
    # (read_all / read_range / take_rows wrap their tables in the reference's ReaderResults)
    assert r.read_global_buffer.__doc__ == lancejit.AsyncLanceFileReader.read_global_buffer.__doc__
