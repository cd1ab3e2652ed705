"""Take tables of newly opened files built from metadata alone (``take_template``) equal the
ones built through field decoders and chunk tables, and takes through them equal pylance."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# ------------------------------------------------------------------ kernel vs NumPy
def _segments_numpy(raw, pages):
    """``page_segments`` in plain NumPy, page by page (as ``MiniBlockPage._parse_meta`` +
    ``build_column_index`` compute chunks): ``(error page or 0, out)``."""
    cols = []
    for p, (wsize, pos, nseg, rows, key, data, dsize, defw, fixed, maxcount) in enumerate(pages.tolist()):
        if wsize == 0:
            if fixed <= 0 or fixed * rows > dsize:
                return p + 1, None
            cols.append(np.array([[key], [data], [fixed], [fixed], [0], [1], [0]], dtype=np.int64))
            continue
        w = np.frombuffer(raw[pos:pos + nseg * wsize].tobytes(), dtype="<u2" if wsize == 2 else "<u4").astype(np.int64)
        sizes = ((w >> 4) + 1) * 8
        counts = np.left_shift(np.int64(1), w & 0xF)
        counts[-1] = rows - counts[:-1].sum()
        if counts.min() <= 0 or counts.max() > maxcount or sizes.sum() > dsize:
            return p + 1, None
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        n = w.size
        cols.append(np.stack([key + first, data + offsets, np.zeros(n, np.int64), sizes, np.full(n, wsize),
                              counts, np.full(n, defw)]))
    return 0, np.concatenate(cols, axis=1)


@st.composite
def _pages(draw):
    raw = bytearray()
    pages = []
    key = 0
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()) and pages:
            rows = draw(st.integers(1, 300))
            fixed = draw(st.sampled_from([1, 8, 256]))
            slack = draw(st.sampled_from([0, 0, 5, -1]))
            pages.append((0, 0, 1, rows, key, 1000 + key, fixed * rows + slack, 0, fixed, 0))
        else:
            wsize = draw(st.sampled_from([2, 4]))
            logs = draw(st.lists(st.integers(0, 12), min_size=1, max_size=20))
            blocks = draw(st.lists(st.integers(0, 200), min_size=len(logs), max_size=len(logs)))
            words = [(b << 4) | lg for b, lg in zip(blocks, logs)]
            rows = sum(1 << lg for lg in logs[:-1]) + draw(st.integers(-3, 4096))
            maxcount = draw(st.sampled_from([1024, 1 << 16]))
            nbytes = sum((b + 1) * 8 for b in blocks) + draw(st.sampled_from([0, 0, 64, -8]))
            pages.append((wsize, len(raw), len(words), rows, key, 5000 + key, nbytes, draw(st.integers(0, 3)), 0,
                          maxcount))
            raw += np.asarray(words, dtype="<u2" if wsize == 2 else "<u4").tobytes()
        key += pages[-1][3] + draw(st.sampled_from([0, 1]))
    return np.frombuffer(bytes(raw), dtype=np.uint8), np.array(pages, dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(_pages())
def test_page_segments_match_numpy(case):
    from lancejit.encoding.kernels.take_meta import page_segments

    raw, pages = case
    nseg = int(pages[:, 2].sum())
    out = np.empty((7, nseg), dtype=np.int64)
    err = page_segments(raw, pages, out)
    want_err, want = _segments_numpy(raw, pages)
    assert err == want_err
    if not err:
        np.testing.assert_array_equal(out, want)


def test_damaged_chunk_words_never_crash(tmp_path):
    """Random bytes in the chunk metadata words a cold take parses: the take returns rows or
    raises lancejit's errors (the metadata-only path falls back to the decoders, which report
    the damage), never anything else."""
    from lancejit.core.errors import LanceJitError
    from lancejit.file.cache import SearchCache

    rng = np.random.default_rng(8)
    n = 4_000
    path = write_lance(tmp_path / "t.lance", _table(rng, n), "2.2", max_page_bytes=16 * 1024)
    good = path.read_bytes()
    meta = LanceFileReader(str(path), cache=SearchCache()).file_metadata
    words = [(p.buffer_offsets[0], p.buffer_sizes[0]) for c in meta.columns for p in c.pages
             if p.encoding.WhichOneof("layout") == "mini_block_layout"]
    bad_path = tmp_path / "bad.lance"
    for _trial in range(40):
        data = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            off, size = words[int(rng.integers(0, len(words)))]
            if size:
                data[off + int(rng.integers(0, size))] = int(rng.integers(0, 256))
        bad_path.write_bytes(bytes(data))
        idx = rng.integers(0, n, 5)
        try:
            LanceFileReader(str(bad_path), cache=SearchCache()).take_rows(idx, columns=TEMPLATE)
        except LanceJitError:
            pass


def test_two_phase_request_matches_one_call(tmp_path):
    """table_request + one read + table_from (what a multi-file caller batches) builds the same
    table as file_take_table, and a second request returns the cached table."""
    from lancejit.file.cache import SearchCache
    from lancejit.file.take_plan import TableRequest, table_from, table_request

    COLS = ["f64", "s", "vec", "i64"]
    rng = np.random.default_rng(12)
    path = write_lance(tmp_path / "t.lance", _table(rng, 5_000), "2.2", max_page_bytes=16 * 1024)
    data = path.read_bytes()

    async def run():
        reader = BytesReader(data, str(path))
        meta = await open_file_metadata(reader)
        meta = type(meta)(**{f: getattr(meta, f) for f in meta.__dataclass_fields__ if f != "cache"},
                          cache=SearchCache().file(("k", 1, b"")))
        req = table_request(meta, COLS)
        assert isinstance(req, TableRequest) and req.ranges
        calls = reader.calls
        bufs = await reader.read_ranges(req.ranges)
        table = table_from(req, bufs)
        assert reader.calls == calls + 1 and table is not None
        assert table_request(meta, COLS) is table  # cached with the file
        assert table_from(req, bufs[:-1]) is None  # wrong number of buffers
        return table

    table = asyncio.run(run())
    quick, _ = _tables(path, COLS)
    for a in _ARRAYS:
        np.testing.assert_array_equal(getattr(table, a), getattr(quick, a))


@pytest.mark.parametrize("seed", [0, 1])
def test_tables_from_many_files_equal_one_by_one(tmp_path, seed):
    """take_plan.tables_from (one kernel call for the pages of several files, what the
    multi-file take's admission uses) builds for each file the table file_take_table builds
    alone; a file whose words fail a check gets None, the others their tables."""
    from lancejit.file.take_plan import TableRequest, table_request, tables_from

    COLS = ["f64", "s", "vec", "i64"]
    rng = np.random.default_rng(20 + seed)
    files = []
    for k, (rows, pages) in enumerate([(3_000, 16 * 1024), (700, None), (5_000, 8 * 1024), (40, None)]):
        path = write_lance(tmp_path / f"t{k}.lance", _table(rng, rows), "2.2", max_page_bytes=pages)
        files.append(path)

    async def run(bad: int | None):
        reqs, bufs = [], []
        for k, path in enumerate(files):
            reader = BytesReader(path.read_bytes(), str(path))
            meta = await open_file_metadata(reader)
            req = table_request(meta, COLS)
            assert isinstance(req, TableRequest)
            got = list(await reader.read_ranges(req.ranges))
            if k == bad:
                got[0] = bytes(got[0])[:-1]  # a word list that does not add up
            reqs.append(req)
            bufs.append(got)
        return tables_from(reqs, bufs)

    many = asyncio.run(run(None))
    for path, table in zip(files, many):
        alone, _ = _tables(path, COLS)
        assert table is not None and alone is not None
        _assert_same(table, alone)
    damaged = asyncio.run(run(2))
    assert damaged[2] is None
    for k in (0, 1, 3):
        np.testing.assert_array_equal(damaged[k].seg_b0, many[k].seg_b0)


def _assert_same(a, b) -> None:
    """Equal values, arrays compared element-wise, dataclasses and tuples field by field."""
    if hasattr(a, "__dataclass_fields__"):
        for name in a.__dataclass_fields__:
            _assert_same(getattr(a, name), getattr(b, name))
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a == b
