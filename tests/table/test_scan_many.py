"""Scans as one pipeline over many fragments, and filtered scans with and without late
materialization, equal to the reference (pylance 14) on 1, 7 and ~200 fragments with deletions.

The filter table is ``filters.py``'s (every operator the README lists, NULLs, nested fields)
plus strings with quotes and unicode (:data:`TEXT_FILTERS`), on data holding such strings.
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import lancejit.table as lt
from lancejit.core import config
import lancejit.table.read.scan as scan_module

lance = pytest.importorskip("lance")

_spec = importlib.util.spec_from_file_location("table_filters", pathlib.Path(__file__).with_name("filters.py"))
_filters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_filters)

#: Strings with quotes and unicode (the data below holds them).
TEXT_FILTERS = [
    "s = 'it''s'",
    "s IN ('it''s', 'naïve', '日本語')",
    "s LIKE '%é%'",
    "s LIKE '日本%'",
    "s > 'z'",
    "s = 'a, b'",
    "st.y = 'y''7'",
    "s NOT IN ('it''s', 's10') AND a < 40",
    "s LIKE '%''%'",
    "s ILIKE 'NAÏVE'",
]
ALL_FILTERS = _filters.FILTERS + TEXT_FILTERS
_SPECIAL = ["it's", "naïve", "日本語", "café", "a, b", "zürich", "x'y"]


def _table(n: int) -> pa.Table:
    a = np.arange(n, dtype=np.int64)
    s = [None if i % 11 == 5 else (_SPECIAL[i % 7] if i % 9 == 4 else f"s{i}") for i in range(n)]
    f = pa.array([None if i % 7 == 2 else float(i) * 0.5 for i in a], pa.float64())
    st = pa.StructArray.from_arrays(
        [pa.array(a.astype(np.int32)), pa.array([f"y'{i % 13}" if i % 5 == 0 else f"y{i % 13}" for i in a])],
        names=["x", "y"],
    )
    return pa.table({"a": a, "s": pa.array(s, pa.string()), "f": f, "st": st})


@pytest.fixture(scope="module", params=[1, 7, 200])
def many(request, tmp_path_factory):
    frags = request.param
    n = 1000
    path = str(tmp_path_factory.mktemp(f"many{frags}") / "ds")
    lance.write_dataset(_table(n), path, max_rows_per_file=-(-n // frags), data_storage_version="2.1")
    ds = lance.dataset(path)
    ds.delete("a % 17 = 3 OR (a >= 300 AND a < 330)")
    ds = lance.dataset(path)
    assert len(ds.get_fragments()) >= frags * 0.9  # whole fragments may be deleted
    return path


@pytest.fixture(params=[True, False], ids=["late", "early"])
def late(knobs, request, monkeypatch):
    knobs(late_materialization=request.param)
    return request.param


def test_filter_table_matches_reference(many, late):
    ref, ours = lance.dataset(many), lt.dataset(many)
    assert len(ALL_FILTERS) >= 40
    few = len(ours.get_fragments()) < 100
    for text in ALL_FILTERS:
        expected = ref.to_table(filter=text)
        got = ours.to_table(filter=text)
        assert got.equals(expected), text
        if not few:
            continue  # many fragments: the whole table once (keeps the test fast)
        cols = ["st", "a"]
        assert ours.to_table(filter=text, columns=cols, with_row_id=True).equals(
            ref.to_table(filter=text, columns=cols, with_row_id=True)), text
        assert ours.count_rows(text) == ref.count_rows(text), text


def test_batches_span_fragments(many):
    ref, ours = lance.dataset(many), lt.dataset(many)
    expected = ref.to_table(with_row_id=True)
    for size in (1, 37, 256, 5000):
        batches = list(ours.to_batches(batch_size=size, with_row_id=True))
        assert all(b.num_rows <= size for b in batches)
        if size >= 256:  # fragments smaller than a batch are gathered: all but the last are full
            assert all(b.num_rows == size for b in batches[:-1]), [b.num_rows for b in batches]
        assert pa.Table.from_batches(batches).equals(expected)
    for limit, offset in ((10, 0), (100, 333), (None, 900), (5, 10_000)):
        got = pa.Table.from_batches(list(ours.to_batches(batch_size=64, limit=limit, offset=offset)),
                                    schema=ours.schema)
        assert got.equals(ref.to_table(limit=limit, offset=offset)), (limit, offset)


def test_fragment_ids_order(many):
    ref, ours = lance.dataset(many), lt.dataset(many)
    ids = [f.fragment_id for f in ref.get_fragments()][::-1][:5]
    got = ours.to_table(fragment_ids=ids + ids[:1])
    expected = pa.concat_tables([ref.get_fragment(i).to_table() for i in ids])
    assert got.equals(expected)


def test_readahead_is_bounded_by_bytes(knobs, many, monkeypatch):
    """Many small units run ahead together; never more than ``scan_units_in_flight``."""
    seen = []
    original = scan_module.read_unit_table
    live = {"now": 0}

    async def counting(*args, **kwargs):
        live["now"] += 1
        seen.append(live["now"])
        try:
            return await original(*args, **kwargs)
        finally:
            live["now"] -= 1

    monkeypatch.setattr(scan_module, "read_unit_table", counting)
    knobs(scan_units_in_flight=16)
    ours = lt.dataset(many)
    assert ours.to_table().num_rows == lance.dataset(many).count_rows()
    assert max(seen) <= 16
    if len(ours.get_fragments()) > 16:
        assert max(seen) > config.settings().scan_readahead  # small units: more than the unit minimum


def test_page_pruning_hook(many, monkeypatch):
    """A pruner that keeps only the first half of each fragment: rows outside are not read."""
    from lancejit.table.read import pruning

    ref, ours = lance.dataset(many), lt.dataset(many)
    calls = []

    class Half:
        def fragment_ids(self):
            return np.array([f.fragment_id for f in ours.get_fragments()], dtype=np.int64)

        def kept(self, fragment_id, lo, hi):
            calls.append(fragment_id)
            return np.array([[lo, lo + (hi - lo) // 2]], dtype=np.int64), 1, hi - lo - (hi - lo) // 2

    async def prepare(ctx, filt):
        return Half()

    with monkeypatch.context() as m:
        m.setattr(pruning, "prepare", prepare)
        got = ours.to_table(filter="a >= 0", with_row_address=True)
    assert calls
    addr = got["_rowaddr"].to_numpy()
    local = addr & 0xFFFFFFFF
    phys = {f.fragment_id: f.physical_rows for f in ours.get_fragments()}
    assert all(local[i] < phys[int(addr[i] >> 32)] // 2 for i in range(len(addr)))
    assert got.num_rows < ref.count_rows()
    assert ours.to_table(filter="a >= 0").num_rows == ref.count_rows()  # pruner gone


def test_late_materialization_reads_less(knobs, tmp_path, monkeypatch):
    knobs(whole_file_bytes=0)
    path = str(tmp_path / "ds")
    n = 50_000
    rng = np.random.default_rng(2)
    lance.write_dataset(pa.table({"id": np.arange(n), "x": rng.uniform(-1, 1, n),
                                  "s": pa.array([f"user-{i}-{'p' * (i % 40)}" for i in range(n)])}),
                        path, data_storage_version="2.1")
    read = {}
    for flag in (True, False):
        knobs(late_materialization=flag)
        ours = lt.dataset(path)
        ours.io_stats()
        got = ours.to_table(filter="id % 1000 = 0")
        read[flag] = ours.io_stats().read_bytes
        assert got.equals(lance.dataset(path).to_table(filter="id % 1000 = 0"))
    assert read[True] < read[False]


_STREAM = textwrap.dedent(
    """
    import sys
    import lancejit.table as lt

    def hwm_kib():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])

    ds = lt.dataset(sys.argv[1])
    rows = batches = 0
    for b in ds.to_batches(batch_size=1000):
        rows += b.num_rows
        batches += 1
    print(rows, batches, hwm_kib())
    """
)


@pytest.mark.slow
def test_streaming_many_fragments_bounded_memory(tmp_path):
    """10,000 fragments stream through to_batches in a child process with bounded memory."""
    path = str(tmp_path / "ds")
    n = 10_000
    lance.write_dataset(pa.table({"id": np.arange(n), "s": pa.array([f"v{i}" for i in range(n)])}), path,
                        max_rows_per_file=1, data_storage_version="2.1")
    res = subprocess.run([sys.executable, "-c", _STREAM, path], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    rows, batches, hwm = (int(v) for v in res.stdout.split())
    assert rows == n and batches == 10
    assert hwm < 1024 * 1024  # KiB: under 1 GiB
