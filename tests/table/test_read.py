"""Reading datasets written by pylance 14 and comparing every result with pylance's."""

from __future__ import annotations

import asyncio
import glob
import importlib.util
import os
import pathlib
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lancejit.core.errors import InvalidInputError, NotFoundError, RowIndexError
from lancejit.table import Dataset, dataset

lance = pytest.importorskip("lance")

_spec = importlib.util.spec_from_file_location("table_filters", pathlib.Path(__file__).with_name("filters.py"))
_filters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_filters)

VERSIONS = ["legacy", "2.0", "2.1", "2.2"]
_FILE_VERSION = {"legacy": "0.1"}


@pytest.fixture(params=VERSIONS)
def version(request, need_decoders):
    need_decoders(_FILE_VERSION.get(request.param, request.param))
    return request.param


def _assert_equal(ours: pa.Table, ref: pa.Table, what: str = "") -> None:
    assert ours.schema.equals(ref.schema), f"{what}: schema\n{ours.schema}\n!=\n{ref.schema}"
    if not ours.equals(ref):
        for name in ref.column_names:
            assert ours[name].equals(ref[name]), f"{what}: column {name} differs"
        raise AssertionError(f"{what}: tables differ")


@pytest.mark.parametrize("kind", ["evolving", "stable"])
def test_every_version(make_dataset, version, kind):
    _check_every_version(make_dataset(kind, version))


def test_every_version_v1_names(make_dataset, need_decoders):
    need_decoders("2.1")
    _check_every_version(make_dataset("v1names", "2.1"))


def _check_every_version(path: str) -> None:
    latest = lance.dataset(path).version
    base = dataset(path)
    for v in range(1, latest + 1):
        ref = lance.dataset(path, version=v)
        ours = base.checkout_version(v)
        assert ours.schema.equals(ref.schema, check_metadata=True)
        _assert_equal(ours.to_table(with_row_id=True, with_row_address=True),
                      ref.to_table(with_row_id=True, with_row_address=True), f"v{v}")
        assert ours.count_rows() == ref.count_rows()


@pytest.mark.parametrize(
    "columns",
    [["a"], ["st", "a"], ["l"], ["c", "s"], ["b"], ["f", "st", "l", "b"], []],
)
def test_projections(make_dataset, version, columns):
    path = make_dataset("evolving", version)
    ref, ours = lance.dataset(path), dataset(path)
    for v in (3, 4, ref.version):
        cols = [c for c in columns if c in lance.dataset(path, version=v).schema.names]
        r = lance.dataset(path, version=v).to_table(columns=cols, with_row_address=True)
        _assert_equal(ours.checkout_version(v).to_table(columns=cols, with_row_address=True), r, f"v{v} {cols}")
    if version != "legacy":
        r = ref.to_table(columns=["z", "a"])
        assert r["z"].null_count == r.num_rows
        _assert_equal(ours.to_table(columns=["z", "a"]), r, "all-null column")


@pytest.mark.parametrize("text", _filters.FILTERS + _filters.EVOLVED_FILTERS)
def test_filters(make_dataset, version, text):
    path = make_dataset("evolving", version)
    ref, ours = lance.dataset(path), dataset(path)
    try:
        expected = ref.to_table(filter=text)
    except (OSError, ValueError):
        with pytest.raises(InvalidInputError):
            ours.to_table(filter=text)
        return
    _assert_equal(ours.to_table(filter=text), expected, text)
    cols = ["a", "st"]
    _assert_equal(ours.to_table(filter=text, columns=cols, with_row_id=True),
                  ref.to_table(filter=text, columns=cols, with_row_id=True), text)
    assert ours.count_rows(text) == ref.count_rows(text)


def test_filters_on_older_versions_and_small_batches(make_dataset, version):
    path = make_dataset("stable", version)
    for v in (2, 5):
        ref = lance.dataset(path, version=v)
        ours = dataset(path, version=v)
        for text in ["a % 4 = 1", "s LIKE 's2%' OR a > 990", "f IS NULL", "st.x BETWEEN 280 AND 340"]:
            _assert_equal(ours.to_table(filter=text, batch_size=37, with_row_id=True),
                          ref.to_table(filter=text, with_row_id=True), f"v{v} {text}")


def test_expression_filter(make_dataset, version):
    path = make_dataset("evolving", version)
    expr = (pc.field("a") > 400) & (pc.field("s") != "s500")
    _assert_equal(dataset(path).to_table(filter=expr), lance.dataset(path).to_table(filter=expr))
    # the reference refuses nested references in expressions; lancejit takes them (same as SQL)
    nested = (pc.field("a") > 400) & (pc.field(("st", "x")) < 700)
    _assert_equal(dataset(path).to_table(filter=nested), lance.dataset(path).to_table(filter="a > 400 AND st.x < 700"))


@pytest.mark.parametrize(
    "limit,offset,text",
    [(10, None, None), (10, 295, None), (1000, 500, None), (0, 3, None), (5, 10_000, None),
     (None, 250, None), (7, 20, "a % 2 = 0"), (None, 100, "s IS NOT NULL"), (3, 0, "a > 990")],
)
def test_limit_offset(make_dataset, version, limit, offset, text):
    path = make_dataset("evolving", version)
    ref, ours = lance.dataset(path), dataset(path)
    _assert_equal(ours.to_table(limit=limit, offset=offset, filter=text, with_row_id=True),
                  ref.to_table(limit=limit, offset=offset, filter=text, with_row_id=True),
                  f"limit={limit} offset={offset} filter={text}")
    batches = list(ours.to_batches(limit=limit, offset=offset, filter=text, batch_size=64))
    got = pa.Table.from_batches(batches, schema=ours.to_table(limit=0).schema)
    _assert_equal(got, ref.to_table(limit=limit, offset=offset, filter=text))


@pytest.mark.parametrize("seed", [0, 1])
def test_take(make_dataset, version, seed):
    path = make_dataset("evolving", version)
    ref, ours = lance.dataset(path), dataset(path)
    n = ref.count_rows()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=60)
    idx[:3] = [n - 1, 0, idx[5]]  # ends and a duplicate
    _assert_equal(ours.take(idx), ref.take(idx))
    _assert_equal(ours.take(idx.tolist(), columns=["st", "a"]), ref.take(idx.tolist(), columns=["st", "a"]))
    _assert_equal(ours.take(pa.array(np.sort(idx)), columns=["l"]), ref.take(np.sort(idx), columns=["l"]))
    old = ours.checkout_version(2)
    _assert_equal(old.take([0, 5, 999]), lance.dataset(path, version=2).take([0, 5, 999]))
    with pytest.raises(RowIndexError):
        ours.take([n])
    with pytest.raises(RowIndexError):
        ours.take([-1])
    assert ours.take([]).num_rows == 0


@pytest.mark.parametrize("kind", ["evolving", "stable"])
def test_take_rows(make_dataset, version, kind):
    path = make_dataset(kind, version)
    ref, ours = lance.dataset(path), dataset(path)
    ids = ref.to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()
    rng = np.random.default_rng(3)
    want = rng.choice(ids, size=50, replace=True)
    _assert_equal(ours.take_rows(want), ref._take_rows(want.tolist()))
    _assert_equal(ours.take_rows(want, columns=["a", "st"]), ref._take_rows(want.tolist(), columns=["a", "st"]))
    # a deleted row is skipped, as by the reference
    all_ids = lance.dataset(path, version=1).to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()
    deleted = np.setdiff1d(all_ids, ids)[:3]
    mixed = np.concatenate([want[:5], deleted, want[5:8]])
    _assert_equal(ours.take_rows(mixed, columns=["a"]), ref._take_rows(mixed.tolist(), columns=["a"]))
    got = ours.take_rows(want[:10], columns=["a"], with_row_id=True)
    np.testing.assert_array_equal(got["_rowid"].to_numpy(), want[:10])


def test_take_rows_bad_addresses(make_dataset, version):
    ours = dataset(make_dataset("evolving", version))
    with pytest.raises(RowIndexError):
        ours.take_rows([(99 << 32) | 1])
    with pytest.raises(RowIndexError):
        ours.take_rows([(0 << 32) | 100_000])


async def test_async_take(make_dataset, version):
    path = make_dataset("stable", version)
    ref = lance.dataset(path)
    ours = await Dataset.open_async(path)
    idx = [5, 1, 700, 5, 3]
    ids = ref.to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()[[4, 2, 600]]
    t1, t2 = await asyncio.gather(ours.take_async(idx), ours.take_rows_async(ids))
    _assert_equal(t1, ref.take(idx))
    _assert_equal(t2, ref._take_rows(ids.tolist()))
    older = await ours.checkout_version_async(3)
    _assert_equal(await older.take_async([0, 1]), lance.dataset(path, version=3).take([0, 1]))


def test_scanner_reader_and_batches(make_dataset, version):
    path = make_dataset("evolving", version)
    ref, ours = lance.dataset(path), dataset(path)
    reader = ours.scanner(columns=["a", "s"], filter="a > 100", batch_size=50).to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    _assert_equal(reader.read_all(), ref.to_table(columns=["a", "s"], filter="a > 100"))
    sizes = [b.num_rows for b in ours.to_batches(batch_size=64)]
    assert max(sizes) <= 64 and sum(sizes) == ref.count_rows()


def test_big_deletes_both_kinds(make_dataset, version):
    path = make_dataset("bigdel", version)
    ref, ours = lance.dataset(path), dataset(path)
    _assert_equal(ours.to_table(with_row_address=True), ref.to_table(with_row_address=True))
    idx = [0, 599, 600, 6597, 1234]
    _assert_equal(ours.take(idx), ref.take(idx))
    assert ours.count_rows("a >= 6000") == ref.count_rows("a >= 6000")
    _assert_equal(ours.to_table(filter="a % 10 = 0 AND a < 3000", with_row_id=True),
                  ref.to_table(filter="a % 10 = 0 AND a < 3000", with_row_id=True))


def test_mixed_file_versions(make_dataset, need_decoders):
    for v in ("2.0", "2.1", "2.2"):
        need_decoders(v)
    path = make_dataset("mixed")
    ref, ours = lance.dataset(path), dataset(path)
    versions = {(df.file_major_version, df.file_minor_version) for f in ours.get_fragments() for df in f.files}
    assert versions == {(2, 0), (2, 1), (2, 2)}
    _assert_equal(ours.to_table(with_row_address=True), ref.to_table(with_row_address=True))
    _assert_equal(ours.take([0, 250, 310, 500]), ref.take([0, 250, 310, 500]))
    _assert_equal(ours.to_table(filter="a % 3 = 0", columns=["l", "a"]), ref.to_table(filter="a % 3 = 0", columns=["l", "a"]))


def test_io_stats_are_incremental(make_dataset, version):
    ours = dataset(make_dataset("evolving", version))
    ours.io_stats()
    ours.take([1, 500])
    first = ours.io_stats()
    assert first.read_iops > 0 and first.read_bytes > 0
    assert ours.io_stats().read_iops == 0
    ours.take([1, 500])  # files are open and cached now: fewer requests
    warm = ours.io_stats()
    assert warm.read_iops <= first.read_iops - 1
    small = all(
        df.file_size_bytes and df.file_size_bytes <= 64 * 1024
        for f in ours.context.manifest.fragments for df in f.files
    )
    if small:  # files the open's 64 KiB tail read holds entirely are read from memory
        assert warm.read_iops == 0
    else:
        assert warm.read_iops > 0
    # stats are per dataset, not per store: another dataset's reads are not counted here
    other = dataset(make_dataset("stable", version))
    other.to_table()
    assert ours.io_stats().read_iops == 0 and other.io_stats().read_iops > 0
    ours.checkout_version(2).take([3])  # checkouts count in the dataset they came from
    assert ours.io_stats().read_iops > 0


def test_filter_reads_less(knobs, make_dataset, need_decoders, monkeypatch):
    """A selective filter reads the other columns only for matching rows."""
    knobs(whole_file_bytes=0)  # small files: keep reading ranges
    need_decoders("2.1")
    ours = dataset(make_dataset("bigdel", "2.1"))
    ours.to_table(columns=["a"])  # open files
    ours.io_stats()
    ours.to_table(columns=["a", "v"], filter="a = 11000")
    selective = ours.io_stats().read_bytes
    ours.to_table(columns=["a", "v"])
    full = ours.io_stats().read_bytes
    assert selective < full
    assert ours.count_rows("a = 11000") == 1  # reads only the filter's column
    assert ours.io_stats().read_bytes < full


def test_limit_reads_only_the_fragments_it_needs(knobs, make_dataset, version):
    """Without a filter, fragments past offset + limit are not read (``head``, ``limit=``):
    the first fragment only for a limit inside it; answers equal the reference's."""
    knobs(whole_file_bytes=0)  # small files: keep reading ranges
    path = make_dataset("evolving", version)
    ref, ours = lance.dataset(path), dataset(path)
    ours.to_table()  # open files
    ours.io_stats()
    ours.to_table()
    full = ours.io_stats().read_bytes
    _assert_equal(ours.head(5), ref.head(5), "head")
    first = ours.io_stats().read_bytes
    assert 0 < first < full / 3
    for limit, offset in [(5, 240), (30, 240), (1, 0), (300, 0), (10, 900)]:
        _assert_equal(ours.to_table(limit=limit, offset=offset), ref.to_table(limit=limit, offset=offset),
                      f"limit={limit} offset={offset}")


def test_missing_data_file(make_dataset, version, tmp_path):
    path = str(tmp_path / "ds")
    shutil.copytree(make_dataset("evolving", version), path)
    ours = dataset(path)
    victim = ours.get_fragments()[1].files[0].path
    os.remove(os.path.join(path, "data", victim))
    with pytest.raises(NotFoundError) as info:
        ours.to_table()
    msg = str(info.value)
    assert path in msg and f"version {ours.version}" in msg and victim in msg
    assert ours.take([0]).num_rows == 1  # fragment 0 is intact


def test_missing_deletion_file(make_dataset, tmp_path):
    path = str(tmp_path / "ds")
    shutil.copytree(make_dataset("bigdel", "2.1"), path)
    for f in glob.glob(os.path.join(path, "_deletions", "*.arrow")):
        os.remove(f)
    with pytest.raises(NotFoundError) as info:
        dataset(path).to_table()
    assert "_deletions" in str(info.value) and "version 3" in str(info.value)


def test_bad_arguments(make_dataset):
    ours = dataset(make_dataset("evolving", "2.1"))
    with pytest.raises(InvalidInputError):
        ours.to_table(columns=["nope"])
    with pytest.raises(InvalidInputError):
        ours.to_table(limit=-1)
    with pytest.raises(InvalidInputError):
        ours.to_table(filter="nope > 1")
    with pytest.raises(InvalidInputError):
        ours.take(["x"])


@pytest.mark.parametrize(
    "columns",
    [["_rowid", "a"], ["st.x", "a"], ["st.y", "_rowaddr", "st"], ["a", "_rowid"], ["st.y", "a", "st.x"]],
)
def test_nested_and_meta_projections(make_dataset, version, columns):
    path = make_dataset("stable", version)
    ref, ours = lance.dataset(path), dataset(path)
    for text in (None, "st.x > 500"):
        _assert_equal(ours.to_table(columns=columns, filter=text), ref.to_table(columns=columns, filter=text),
                      f"{columns} {text}")
    # take returns nested columns as pruned structs, like the reference
    idx = [3, 1, 500, 3]
    _assert_equal(ours.take(idx, columns=columns), ref.take(idx, columns=columns), f"take {columns}")
    ids = ref.to_table(columns=["a"], with_row_id=True)["_rowid"].to_numpy()[[7, 2, 400]]
    _assert_equal(ours.take_rows(ids, columns=columns), ref._take_rows(ids.tolist(), columns=columns))


def test_shallow_clone_reads_through_base_paths(make_dataset, version, tmp_path):
    """A shallow clone's manifest points at the source dataset through base paths (flag 16)."""
    source = make_dataset("evolving", version)
    clone_path = str(tmp_path / "clone")
    ref = lance.dataset(source).shallow_clone(clone_path, "evolved")
    ours = dataset(clone_path)
    assert ours.manifest.base_paths and ours.manifest.fragments[0].files[0].base_id is not None
    assert not os.path.exists(os.path.join(clone_path, "data"))
    _assert_equal(ours.to_table(with_row_address=True), ref.to_table(with_row_address=True))
    _assert_equal(ours.take([0, 3, 700]), ref.take([0, 3, 700]))
    _assert_equal(ours.to_table(filter="a % 4 = 0", columns=["b"]), ref.to_table(filter="a % 4 = 0", columns=["b"]))


def test_small_units_cross_boundaries(knobs, make_dataset, version, monkeypatch):
    """Fragments split into many small units (deletions, filters, offsets across unit edges)."""
    knobs(scan_unit_rows=257)
    path = make_dataset("bigdel", version)
    ref, ours = lance.dataset(path), dataset(path)
    _assert_equal(ours.to_table(batch_size=10, with_row_id=True), ref.to_table(with_row_id=True))
    for text in ("a % 7 = 3", "a > 5990 AND a < 6010", "v > 2000"):
        _assert_equal(ours.to_table(filter=text, batch_size=10), ref.to_table(filter=text), text)
        _assert_equal(ours.to_table(filter=text, limit=17, offset=9, batch_size=5),
                      ref.to_table(filter=text, limit=17, offset=9), text)
    _assert_equal(ours.to_table(limit=50, offset=590, batch_size=7), ref.to_table(limit=50, offset=590))
    sizes = [b.num_rows for b in ours.scanner(batch_size=10, readahead=3).to_batches()]
    assert max(sizes) <= 10 and sum(sizes) == ref.count_rows()


@pytest.mark.parametrize("damage", ["truncated", "garbage_tail"])
def test_damaged_data_file(make_dataset, version, tmp_path, damage):
    from lancejit.core.errors import CorruptFileError

    path = str(tmp_path / "ds")
    shutil.copytree(make_dataset("evolving", version), path)
    ours = dataset(path)
    victim = ours.get_fragments()[0].files[0].path
    full = os.path.join(path, "data", victim)
    data = bytearray(open(full, "rb").read())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        data[-40:] = b"\xab" * 40
    open(full, "wb").write(bytes(data))
    with pytest.raises(CorruptFileError) as info:
        ours.to_table()
    msg = str(info.value)
    assert path in msg and f"version {ours.version}" in msg and victim in msg


def test_alter_columns_rename_and_cast(make_dataset, version, tmp_path):
    """Renamed columns are found by field id; a cast column lives in a new file with a new id."""
    path = str(tmp_path / "ds")
    shutil.copytree(make_dataset("evolving", version), path)
    ref = lance.dataset(path)
    ref.alter_columns({"path": "b", "name": "bb"})
    ref = lance.dataset(path)
    ref.alter_columns({"path": "a", "data_type": pa.int32()})
    ref = lance.dataset(path)
    ours = dataset(path)
    assert ours.schema.equals(ref.schema)
    _assert_equal(ours.to_table(with_row_address=True), ref.to_table(with_row_address=True))
    _assert_equal(ours.take([3, 400], columns=["a", "bb"]), ref.take([3, 400], columns=["a", "bb"]))
    _assert_equal(ours.to_table(filter="bb > 1000 AND a < 700"), ref.to_table(filter="bb > 1000 AND a < 700"))
