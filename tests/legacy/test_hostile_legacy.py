"""Hostile sizes in legacy (0.1) files (issue 21 item 3): every integer of the file's
``Metadata`` (batch offsets, positions, statistics) and of its embedded schema (field ids,
dictionary offsets and lengths), page-table entries, words at the start of pages, in data
files pylance wrote.  Each edited file is refused (CorruptFileError naming it) or answered
under 100 MiB of added memory (``tests/hostile.py``)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import tests_hostile as H
from lancejit.pb import file_pb2, table_pb2

ROWS = 3000


def _table() -> pa.Table:
    rng = np.random.default_rng(11)
    n = ROWS
    return pa.table({
        "i": pa.array(rng.integers(-(2**40), 2**40, n), pa.int64()),
        "f": pa.array(rng.standard_normal(n), mask=rng.random(n) < 0.2),
        "s": pa.array([None if i % 13 == 0 else f"s{i % 97}-{i}" for i in range(n)]),
        "b": pa.array([bytes([i % 256]) * (i % 9) for i in range(n)], pa.binary()),
        "d": pa.array([f"k{i % 4}" for i in range(n)]).dictionary_encode(),
        "t": pa.array(rng.random(n) < 0.5),
        "l": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
        "st": pa.StructArray.from_arrays([pa.array(np.arange(n, dtype=np.int32)), pa.array([f"y{i}" for i in range(n)])],
                                         names=["x", "y"]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(8 * n).astype(np.float32)), 8),
    })


class LegacyFile:
    """A 0.1 file taken apart: its Metadata, embedded schema (a Manifest) and page table."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        (self.meta_pos,) = struct.unpack_from("<q", data, len(data) - 16)
        self.meta = self._framed(self.meta_pos, file_pb2.Metadata())
        self.schema = self._framed(self.meta.manifest_position, table_pb2.Manifest())
        self.num_batches = len(self.meta.batch_offsets) - 1

    def _framed(self, pos: int, msg):
        (n,) = struct.unpack_from("<I", self.data, pos)
        msg.ParseFromString(self.data[pos + 4 : pos + 4 + n])
        return msg

    def with_meta(self, meta) -> bytes:
        """The file with ``meta`` as its Metadata (the last message: nothing moves)."""
        body = meta.SerializeToString()
        return self.data[: self.meta_pos] + struct.pack("<I", len(body)) + body + self.data[-16:]

    def with_schema(self, schema) -> bytes:
        """The file with ``schema`` as its embedded Manifest (the Metadata after it moves)."""
        mpos = self.meta.manifest_position
        (old,) = struct.unpack_from("<I", self.data, mpos)
        body = schema.SerializeToString()
        delta = len(body) - old
        out = self.data[:mpos] + struct.pack("<I", len(body)) + body + self.data[mpos + 4 + old : -16]
        return out + struct.pack("<q", self.meta_pos + delta) + self.data[-8:]

    def page_entries(self) -> list[tuple[int, int, int]]:
        """``(table position, page position, page length)`` of every page of batch 0."""
        ids = sorted(f.id for f in self.schema.fields)
        out = []
        for i in range(ids[-1] - ids[0] + 1):
            at = self.meta.page_table_position + 16 * (i * self.num_batches)
            pos, length = struct.unpack_from("<qq", self.data, at)
            out.append((at, pos, length))
        return out


def metadata_cases(f: LegacyFile):
    seen = set()
    for path, _, fd in list(H.int_fields(f.meta)):
        for v in H.huge_values(fd):
            if (path, v) in seen:
                continue
            seen.add((path, v))
            meta = file_pb2.Metadata()
            meta.CopyFrom(f.meta)
            target = {q: (m, d) for q, m, d in H.int_fields(meta)}[path]
            H.set_int(target[0], target[1], v)
            yield f"metadata.{path}={v}", f.with_meta(meta)
    # the batch offsets claim more rows, consistently (every later offset moved by the same)
    for v in H.HUGE:
        meta = file_pb2.Metadata()
        meta.CopyFrom(f.meta)
        extra = v - meta.batch_offsets[-1]
        for i in range(1, len(meta.batch_offsets)):
            meta.batch_offsets[i] = min(2**31 - 1, meta.batch_offsets[i] + extra)
        yield f"metadata.rows={v}", f.with_meta(meta)


def schema_cases(f: LegacyFile):
    seen = set()
    for path, _, fd in list(H.int_fields(f.schema)):
        if path.split("[")[0] != "fields":
            continue
        for v in H.huge_values(fd):
            if (path, v) in seen:
                continue
            seen.add((path, v))
            schema = table_pb2.Manifest()
            schema.CopyFrom(f.schema)
            target = {q: (m, d) for q, m, d in H.int_fields(schema)}[path]
            H.set_int(target[0], target[1], v)
            yield f"schema.{path}={v}", f.with_schema(schema)


def page_table_cases(f: LegacyFile):
    for k, (at, pos, length) in enumerate(f.page_entries()):
        if length == 0:
            continue
        for label, new in (("length", (pos, 2**31)), ("length", (pos, 2**40)), ("position", (2**40, length)),
                           ("position", (-1, length)), ("length", (pos, -1))):
            data = bytearray(f.data)
            struct.pack_into("<qq", data, at, *new)
            yield f"page{k}.{label}={new}", bytes(data)


def page_word_cases(f: LegacyFile):
    for k, (_, pos, length) in enumerate(f.page_entries()):
        for fmt, at, v in H.WORDS:
            where = H.word_at(length, fmt, at)
            if where is None:
                continue
            data = bytearray(f.data)
            struct.pack_into(fmt, data, pos + where, v)
            yield f"page{k}@{at}{fmt}={v:#x}", bytes(data)


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    import lance

    ds = tmp_path_factory.mktemp("hostile01") / "ds"
    lance.write_dataset(_table(), str(ds), data_storage_version="legacy", max_rows_per_group=1000)
    (path,) = sorted((ds / "data").glob("*.lance"))
    return path


GENS = {"metadata": metadata_cases, "schema": schema_cases, "pages": page_table_cases, "words": page_word_cases}


@pytest.mark.parametrize("gen", sorted(GENS))
def test_hostile_sizes_legacy(original, tmp_path, gen):
    f = LegacyFile(original.read_bytes())
    cases = [H.Case("warm", "file", str(original), warm=True)]
    for name, data in GENS[gen](f):
        uri = H.write_case(tmp_path, name, data)
        cases.append(H.Case(f"0.1 {name}", "file", uri, (Path(uri).name,)))
    outcomes = H.run_cases(cases)
    H.report(outcomes)
    assert len(outcomes) == len(cases) - 1
    bad = H.failures(outcomes)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} of {len(outcomes)})"
