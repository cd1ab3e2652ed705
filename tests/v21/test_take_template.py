"""Take tables of newly opened files built from metadata alone (``take_template``) equal the
ones built through field decoders and chunk tables, and takes through them equal pylance."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lancejit.encoding.v21 import take_template as tt
from lancejit.encoding.v21.field import make_field_decoders
from lancejit.file.container import open_file_metadata
from lancejit.file.take_plan import file_take_table, take_table
from lancejit.file.reader import LanceFileReader
from test_take_index import FAST, _table
from v21support import BytesReader, reference, tables_equal, write_lance

#: Columns whose pages qualify for the metadata-only path (no dictionary, no repetition).
TEMPLATE = [c for c in FAST if c not in ("dict", "ndict", "dint")]

_ARRAYS = ("seg_key", "seg_b0", "seg_stride", "seg_len", "seg_szw", "seg_count", "seg_def", "col_base")
_FIELDS = ("column", "num_rows", "kind", "width", "arrow_type", "list_size", "large_offsets", "nullable")


def _tables(path, names):
    data = path.read_bytes()

    async def run():
        reader = BytesReader(data, str(path))
        meta = await open_file_metadata(reader)
        quick = await file_take_table(meta, names, reader)
        decoders = make_field_decoders(reader, meta, list(names))
        slow = await take_table(decoders, meta.num_rows, None)
        return quick, slow

    return asyncio.run(run())


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("pages", [None, 16 * 1024])
def test_same_table_as_decoders(tmp_path, version, pages):
    rng = np.random.default_rng(5 if pages else 9)
    path = write_lance(tmp_path / "t.lance", _table(rng, 12_000), version, max_page_bytes=pages)
    for names in [TEMPLATE, ["s"], ["vec", "i64"], ["nullable", "ns", "nvec"]]:
        quick, slow = _tables(path, names)
        assert slow is not None
        if quick is None:  # 2.1 may store some of these columns in layouts only decoders read
            assert version == "2.1"
            continue
        for a in _ARRAYS:
            np.testing.assert_array_equal(getattr(quick, a), getattr(slow, a), err_msg=a)
        assert quick.seg0 == slow.seg0
        for q, s in zip(quick.columns, slow.columns):
            for f in _FIELDS:
                assert getattr(q, f) == getattr(s, f), f
            assert (q.fsst is None) == (s.fsst is None)
            if q.fsst is not None:
                for f in ("words", "lens", "enabled", "seg_tab"):
                    np.testing.assert_array_equal(getattr(q.fsst, f), getattr(s.fsst, f))
    if version == "2.2":
        quick, _ = _tables(path, TEMPLATE)
        assert quick is not None


def test_other_columns_fall_back(tmp_path):
    rng = np.random.default_rng(2)
    path = write_lance(tmp_path / "t.lance", _table(rng, 3_000), "2.2")
    for names in (["dict"], ["i64", "lists"], ["ndict", "s"]):
        quick, _ = _tables(path, names)
        assert quick is None


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_cold_takes_equal_pylance(tmp_path, version):
    """Every take on a freshly opened reader (its table built from metadata) equals pylance."""
    from lancejit.file.cache import SearchCache

    rng = np.random.default_rng(4)
    n = 9_000
    path = write_lance(tmp_path / "t.lance", _table(rng, n), version, max_page_bytes=16 * 1024)
    full = reference(path).read_all().to_table()
    for seed in range(4):
        r = np.random.default_rng(seed)
        idx = r.integers(0, n, (1, 5, 200)[seed % 3])
        ours = LanceFileReader(str(path), cache=SearchCache())
        cols = TEMPLATE[seed % 3:] + ["dict"] * (seed == 3)
        tables_equal(ours.take_rows(idx, columns=cols), full.take(pa.array(idx)).select(cols))


# ------------------------------------------------------------------ chunk words vs NumPy per page
def _segments_reference(words_per_page, items, row0s, datas):
    """Per page, as ``MiniBlockPage._parse_meta`` + ``build_column_index`` do it."""
    out = [[] for _ in range(5)]
    for words, n_items, r0, data in zip(words_per_page, items, row0s, datas):
        w = np.asarray(words, dtype=np.int64)
        sizes = ((w >> 4) + 1) * 8
        counts = np.left_shift(np.int64(1), w & 0xF)
        counts[-1] = n_items - counts[:-1].sum()
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        for acc, v in zip(out, (first + r0, offsets + data, sizes, counts, np.full(w.size, 8))):
            acc.append(v)
    return [np.concatenate(a) for a in out]


@st.composite
def _pages(draw):
    npages = draw(st.integers(1, 5))
    wsize = draw(st.sampled_from([2, 4]))
    pages = []
    for _ in range(npages):
        logs = draw(st.lists(st.integers(0, 12), min_size=1, max_size=20))
        blocks = draw(st.lists(st.integers(0, 200), min_size=len(logs), max_size=len(logs)))
        words = [(b << 4) | lg for b, lg in zip(blocks, logs)]
        last = draw(st.integers(1, 4096))
        items = sum(1 << lg for lg in logs[:-1]) + last
        pages.append((words, items))
    return wsize, pages


@settings(max_examples=150, deadline=None)
@given(_pages())
def test_chunk_segments_match_numpy(case):
    wsize, pages = case
    dtype = "<u2" if wsize == 2 else "<u4"
    bufs = [np.asarray(w, dtype=dtype).tobytes() for w, _ in pages]
    items = [n for _, n in pages]
    row0s = list(np.cumsum([0] + items[:-1]))
    bsizes = [int((((np.asarray(w) >> 4) + 1) * 8).sum()) for w, _ in pages]
    datas = list(np.cumsum([100] + [b + 64 for b in bsizes[:-1]]))
    got = tt._chunk_segments(bufs, [len(w) for w, _ in pages], items, row0s, datas, bsizes,
                             [wsize] * len(pages), [8] * len(pages))
    assert got is not None
    row0, b0, length, szw, count, defw, first = got
    want = _segments_reference([w for w, _ in pages], items, row0s, datas)
    for g, w in zip((row0, b0, length, count, defw), want):
        np.testing.assert_array_equal(g, w)
    assert (szw == wsize).all()
    np.testing.assert_array_equal(first, np.cumsum([0] + [len(w) for w, _ in pages]))
    # a data buffer one byte short, or more values claimed than the chunks hold: no table
    short = list(bsizes)
    short[-1] -= 1
    assert tt._chunk_segments(bufs, [len(w) for w, _ in pages], items, row0s, datas, short,
                              [wsize] * len(pages), [8] * len(pages)) is None
    over = list(items)
    over[0] += 1 << 16
    assert tt._chunk_segments(bufs, [len(w) for w, _ in pages], over, row0s, datas, bsizes,
                              [wsize] * len(pages), [8] * len(pages)) is None
