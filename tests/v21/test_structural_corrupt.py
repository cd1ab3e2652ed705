"""Flipped bytes and truncated pages raise lancejit errors (never a crash, hang or foreign error)."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pyarrow as pa
import pytest

import v21data as D
from lancejit.core.errors import LanceJitError
from lancejit.encoding.v21 import make_field_decoders
from lancejit.file.container import open_file_metadata
from v21support import BytesReader, write_lance


def _table(rng, n):
    big = [bytes(rng.integers(0, 256, size=int(rng.integers(260, 400)), dtype=np.uint8)) for _ in range(n)]
    return pa.table(
        {
            "i": D.ints(rng, n, pa.int64()),
            "f": D.floats(rng, n, pa.float32()),
            "s": D.strings(rng, n),
            "card": D.strings(rng, n, card=4),
            "l": D.lists(rng, n, D.ints(rng, 5 * n, pa.int32())),
            "st": D.structs(rng, n, {"x": D.ints(rng, n), "y": D.bools(rng, n)}),
            "vec": D.vectors(rng, n, 64),
            "big": pa.array(D._with_nulls(big, rng), pa.large_binary()),
            "ls": D.lists(rng, n, D.strings(rng, 5 * n)),
        }
    )


async def _read_everything(data: bytes, meta, rng, column: int | None = None) -> None:
    reader = BytesReader(data)
    decs = make_field_decoders(reader, meta, [f.name for f in meta.arrow_schema])
    if column is not None:  # only the field owning that column
        decs = [d for d in decs if any(lc.ctx.column_index == column for lc in d.leaves)]
    n = meta.num_rows
    idx = np.unique(rng.integers(0, n, size=20))
    for d in decs:
        await d.read_range(0, n)
        await d.take(idx)


def _data_end(meta) -> int:
    return min(p for p, _ in meta.global_buffers)


def _read_with_page(good: bytes, meta, col, page_index: int, page, rng) -> Exception | None:
    """Read column ``col`` of ``good`` with its page ``page_index`` replaced by ``page``: the
    exception raised if it is not lancejit's own, else None."""
    pages = list(col.pages)
    pages[page_index] = page
    cols = list(meta.columns)
    cols[col.index] = dataclasses.replace(col, pages=tuple(pages))
    m2 = dataclasses.replace(meta, columns=tuple(cols), cache=None)
    try:
        asyncio.run(_read_everything(good, m2, rng, col.index))
    except LanceJitError:
        pass
    except Exception as exc:  # noqa: BLE001
        return exc
    return None


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_flipped_bytes(tmp_path, version):
    rng = np.random.default_rng(5)
    path = write_lance(tmp_path / "c.lance", _table(rng, 700), version, 16 * 1024)
    good = path.read_bytes()
    meta = dataclasses.replace(asyncio.run(open_file_metadata(BytesReader(good))), cache=None)
    end = _data_end(meta)
    foreign = []
    for _trial in range(40):
        data = bytearray(good)
        for _ in range(int(rng.integers(1, 6))):
            pos = int(rng.integers(0, end))
            data[pos] ^= int(rng.integers(1, 256))
        try:
            asyncio.run(asyncio.wait_for(_read_everything(bytes(data), meta, rng), timeout=60))
        except LanceJitError:
            pass
        except Exception as exc:  # noqa: BLE001 - what the test is about
            foreign.append(repr(exc)[:300])
    assert not foreign, foreign


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_truncated_pages(tmp_path, version):
    rng = np.random.default_rng(6)
    path = write_lance(tmp_path / "t.lance", _table(rng, 500), version, 16 * 1024)
    good = path.read_bytes()
    meta = asyncio.run(open_file_metadata(BytesReader(good)))
    foreign = []
    for col in meta.columns:
        for pi, page in enumerate(col.pages):
            for bi, size in enumerate(page.buffer_sizes):
                if size == 0:
                    continue
                for cut in {size // 2, size - 1, 1}:
                    sizes = list(page.buffer_sizes)
                    sizes[bi] = cut
                    exc = _read_with_page(good, meta, col, pi, dataclasses.replace(page, buffer_sizes=tuple(sizes)), rng)
                    if exc is not None:
                        foreign.append(f"col {col.index} page {pi} buf {bi} cut {cut}: {exc!r}"[:300])
    assert not foreign, foreign


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_mutated_page_messages(tmp_path, version):
    """Nonsense values in the page layout messages (counts, widths, flags) raise lancejit errors."""
    rng = np.random.default_rng(8)
    path = write_lance(tmp_path / "m.lance", _table(rng, 400), version, 16 * 1024)
    good = path.read_bytes()
    meta = asyncio.run(open_file_metadata(BytesReader(good)))
    mutations = {
        "mini_block_layout": [("num_items", [0, 1, 10**9]), ("num_buffers", [0, 3]), ("repetition_index_depth", [0, 2]),
                              ("has_large_chunk", [True, False]), ("num_dictionary_items", [0, 10**6])],
        "full_zip_layout": [("bits_def", [0, 7, 16]), ("bits_rep", [0, 3]), ("bits_per_value", [8, 24]), ("bits_per_offset", [32, 64])],
        "all_null_layout": [("num_def_values", [0, 5, 10**7]), ("num_rep_values", [3])],
    }
    foreign = []
    for col in meta.columns:
        for pi, page in enumerate(col.pages):
            which = page.encoding.WhichOneof("layout")
            for fname, values in mutations.get(which, []):
                for v in values:
                    enc = type(page.encoding)()
                    enc.CopyFrom(page.encoding)
                    setattr(getattr(enc, which), fname, v)
                    exc = _read_with_page(good, meta, col, pi, dataclasses.replace(page, encoding=enc), rng)
                    if exc is not None:
                        foreign.append(f"col {col.index} {which}.{fname}={v}: {exc!r}"[:300])
    assert not foreign, foreign
