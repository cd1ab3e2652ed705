"""Fixtures of the file-layer tests: sample files written by pylance 14, an in-memory
RangeReader for fuzzing the container parser, and helpers to copy files to any store."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


def _load(name: str, filename: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


samples_module = _load("tests_file_samples", "lance_samples.py")


@pytest.fixture(scope="session")
def samples(tmp_path_factory) -> dict[tuple[str, str], Path]:
    """``{(version, schema name): path}`` of files written by pylance 14 (see lance_samples.py)."""
    return samples_module.write_samples(tmp_path_factory.mktemp("lance_samples"))


class BytesReader:
    """A :class:`lancejit.core.ranges.RangeReader` over ``bytes`` that logs its requests.

    Used to feed the container parser thousands of mutated files without touching a store.
    """

    def __init__(self, data: bytes, path: str = "mem://sample.lance") -> None:
        self.data = bytes(data)
        self._path = path
        self.requests: list = []

    @property
    def path(self) -> str:
        return self._path

    async def size(self) -> int:
        return len(self.data)

    async def read_ranges(self, ranges, *, priority: int = 0):
        from lancejit.core.errors import CorruptFileError

        self.requests.append(list(ranges))
        out = []
        for start, end in ranges:
            if end > len(self.data):
                raise CorruptFileError(f"range [{start}, {end}) past end", path=self._path)
            out.append(memoryview(self.data[start:end]))
        return out

    async def read_tail(self, nbytes: int):
        self.requests.append(("tail", nbytes))
        return len(self.data), memoryview(self.data[max(0, len(self.data) - nbytes):])


@pytest.fixture
def bytes_reader():
    return BytesReader
