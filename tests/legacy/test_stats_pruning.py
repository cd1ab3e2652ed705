"""Page statistics of legacy (0.1) files and the pruning of filtered scans with them.

The datasets are written by pylance (``data_storage_version="legacy"``: it still writes 0.1 files
with per-batch null count / min / max).  Every filtered scan must equal pylance's result and the
same scan with pruning switched off, while reading fewer pages when the filter is selective.
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancejit
from lancejit.core import config
from lancejit.table.read.pruning import Condition, batches_may_match, conditions_of

lance = pytest.importorskip("lance")

LONG = "L" * 70  # longer than the 64-byte prefix the writer keeps in string bounds


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    names = np.array([f"{LONG if i % 7 == 0 else ''}n{i:06d}" for i in range(n)], dtype=object)
    label = np.where(rng.random(n) < 0.1, None, rng.choice(["a", "b", "c", "d"], n)).astype(object)
    label[n // 3: n // 3 + 250] = None  # an all-null stretch: whole batches with null_count == rows
    f = rng.normal(size=n)
    f[rng.random(n) < 0.02] = np.nan
    return pa.table({
        "id": ids,
        "r": pa.array(rng.integers(-1000, 1000, n), pa.int32()),
        "f": f,
        "name": pa.array(names, pa.string()),
        "label": pa.array(label, pa.string()),
    })


@pytest.fixture(scope="module", params=[(3000, 1, 100, 1200), (2500, 2, 250, 1000), (700, 3, 64, 700)],
                ids=lambda p: f"n{p[0]}-seed{p[1]}-group{p[2]}")
def legacy_ds(request, tmp_path_factory):
    n, seed, group, per_file = request.param
    uri = str(tmp_path_factory.mktemp("stats") / "ds.lance")
    t = _table(n, seed)
    lance.write_dataset(t, uri, data_storage_version="legacy", max_rows_per_group=group,
                        max_rows_per_file=per_file)
    ref = lance.dataset(uri)
    ref.delete("id % 17 = 3")  # deletion files too
    return uri, n


FILTERS = [
    "id > 2400",
    "id >= 100 AND id < 180",
    "id BETWEEN 1200 AND 1300",
    "id IN (5, 1105, 2999, 99999)",
    "150 > id",
    "id = 7",
    "r > 990",
    "r BETWEEN -5 AND 5 AND id < 1500",
    "name = 'n000123'",
    "name >= 'n0005' AND name < 'n0006'",
    f"name = '{LONG}n000014'",
    "label = 'a' AND id < 900",
    "label IN ('b', 'c') AND id > 2000",
    "f < -3.5",
    "f > 2.5 AND id > 600",
    "f BETWEEN 1.0 AND 1.01",
    "f = 0.5",
    "id < 300 OR id > 2600",  # top-level OR: no pruning
    "NOT (id > 5)",
    "id > 100000",
]


_spec = importlib.util.spec_from_file_location(
    "table_filters", pathlib.Path(__file__).parent.parent / "table" / "filters.py")
_filters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_filters)


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, NaN equal to NaN."""
    return _filters.same_rows(a, b, "id")


def _scan(ds, flt: str, enabled: bool):
    with config.override(page_pruning=enabled):
        ds.io_stats()
        got = ds.to_table(filter=flt)
        return got, ds.io_stats()


@pytest.mark.parametrize("flt", FILTERS)
def test_pruned_scan_equals_reference(legacy_ds, flt):
    uri, _ = legacy_ds
    ref = lance.dataset(uri).to_table(filter=flt)
    if "f " in flt:
        # Both order NaN above every number, but the reference's own legacy page statistics
        # ignore NaN, so it skips some pages holding NaN rows that match (`f > 2.5` returns
        # some NaN rows, not all; the same data in a 2.x file returns all): compare non-NaN rows.
        ref = ref.filter(pc.invert(pc.is_nan(ref.column("f"))))
    plain, plain_stats = _scan(lancejit.dataset(uri), flt, enabled=False)
    pruned, stats = _scan(lancejit.dataset(uri), flt, enabled=True)
    if "f " in flt:
        plain = plain.filter(pc.invert(pc.is_nan(plain.column("f"))))
        pruned = pruned.filter(pc.invert(pc.is_nan(pruned.column("f"))))
    assert _same(pruned, ref)
    assert _same(plain, ref)
    assert plain_stats.pages_pruned == 0
    assert stats.read_bytes <= plain_stats.read_bytes
    assert stats.read_iops <= plain_stats.read_iops


@pytest.mark.parametrize("flt", ["id > 2400", "id BETWEEN 100 AND 150", "id IN (5, 599)", "name = 'n002400'"])
def test_selective_filters_read_fewer_pages(legacy_ds, flt):
    uri, n = legacy_ds
    if n < 2000:
        pytest.skip("small dataset: one batch per file")
    plain, plain_stats = _scan(lancejit.dataset(uri), flt, enabled=False)
    pruned, stats = _scan(lancejit.dataset(uri), flt, enabled=True)
    assert _same(pruned, plain)
    assert stats.pages_pruned > 0 and stats.rows_pruned > 0
    assert stats.read_bytes < plain_stats.read_bytes
    assert stats.read_iops < plain_stats.read_iops


def test_count_rows_with_filter_prunes(legacy_ds):
    uri, _ = legacy_ds
    ds = lancejit.dataset(uri)
    for flt in ("id > 2400", "id IN (1, 2, 3)", "label = 'a' AND id < 900"):
        assert ds.count_rows(flt) == lance.dataset(uri).count_rows(flt)


def test_statistics_match_the_data(legacy_ds):
    """Decoded statistics bound every batch's values (numbers exactly: min and max are attained)."""
    uri, _ = legacy_ds
    ds = lancejit.dataset(uri)
    for frag in ds.context.manifest.fragments:
        path = ds.context.data_file_path(frag.files[0])
        md = lancejit.LanceFileReader(path).file_metadata.legacy
        st = md.statistics
        assert st is not None and np.array_equal(st.batch_offsets, md.batch_offsets)
        table = lancejit.LanceFileReader(path).read_all()  # the file's physical rows
        by_name = {f.name: f.id for f in ds.context.top_fields}
        for name in ("id", "r", "f", "name"):
            col = st.columns[by_name[name]]
            for b in range(st.num_batches):
                vals = table.column(name).slice(st.batch_offsets[b], st.batch_offsets[b + 1] - st.batch_offsets[b])
                if name == "f":
                    vals = pc.filter(vals, pc.invert(pc.is_nan(vals)))
                mn, mx = pc.min_max(vals).values()
                if name == "name":
                    assert col.min_value[b].as_py() <= mn.as_py() and col.max_value[b].as_py() >= mx.as_py()
                else:
                    assert col.min_value[b].as_py() == mn.as_py() and col.max_value[b].as_py() == mx.as_py()


def test_conditions_extracted():
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("st", pa.struct([("x", pa.int32())]))])
    got = [c.as_py() for c in conditions_of(
        "a > 5 AND 3 <= a AND s IN ('x', 'y') AND a BETWEEN -2 AND 9 AND st.x = 1 AND a + 1 = 3", schema)]
    assert ("a", "gt", [5]) in got
    assert ("a", "ge", [3]) in got
    assert ("a", "between", [-2, 9]) in got
    assert ("s", "in", ["x", "y"]) in got
    assert len(got) == 4
    assert conditions_of("a > 5 OR a < 1", schema) == ()
    assert conditions_of("a NOT IN (1, 2)", schema) == ()
    assert conditions_of("garbage ((", schema) == ()
    assert conditions_of("a > 1.5", schema) == ()  # refused, as the reference does
    (c,) = conditions_of("a IN (1, 9223372036854775807)", schema)
    assert c.values.type == pa.int64() and c.as_py() == ("a", "in", [1, 9223372036854775807])


def _cond(op, values, typ=None):
    return Condition("c", op, pa.array(list(values), typ or pa.int64()))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batches_may_match_never_drops_a_match(seed):
    """Brute force: a batch holding a value that satisfies the condition is always kept."""
    rng = np.random.default_rng(seed)
    nb = 200
    vals = [np.sort(rng.integers(-50, 50, rng.integers(1, 6))) for _ in range(nb)]
    mins = pa.array([v.min() for v in vals], pa.int64())
    maxs = pa.array([v.max() for v in vals], pa.int64())
    lits = rng.integers(-60, 60, 4).tolist()
    conds = [_cond(op, (lits[0],)) for op in ("eq", "lt", "le", "gt", "ge")]
    conds += [_cond("between", sorted(lits[:2])), _cond("in", lits), _cond("in", ())]
    py = {"eq": lambda x, v: x == v[0], "lt": lambda x, v: x < v[0], "le": lambda x, v: x <= v[0],
          "gt": lambda x, v: x > v[0], "ge": lambda x, v: x >= v[0],
          "between": lambda x, v: (x >= v[0]) & (x <= v[1]), "in": lambda x, v: np.isin(x, list(v))}
    for cond in conds:
        keep = batches_may_match(cond, mins, maxs)
        values = cond.values.to_pylist()
        truth = np.array([bool(np.any(py[cond.op](v, values))) for v in vals])
        assert not np.any(truth & ~keep), cond
    # unbounded (null) bounds keep everything; float literals never prune an integer column
    keep = batches_may_match(_cond("gt", (10**6,)), pa.nulls(3, pa.int64()), pa.nulls(3, pa.int64()))
    assert keep.all()
    assert batches_may_match(_cond("gt", (1.5,), pa.float64()), mins, maxs) is None


def _brute(op: str, values: list[int], zone: tuple[int, int]) -> bool:
    """May a value of ``zone`` (``[min, max]``, inclusive) satisfy ``op`` with ``values``?"""
    lo, hi = zone
    if op == "eq":
        return lo <= values[0] <= hi
    if op in ("lt", "le"):
        return lo < values[0] if op == "lt" else lo <= values[0]
    if op in ("gt", "ge"):
        return hi > values[0] if op == "gt" else hi >= values[0]
    if op == "between":
        return hi >= values[0] and lo <= values[1]
    return any(lo <= v <= hi for v in values)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("typ", [pa.int64(), pa.uint64()])
def test_bounds_compare_in_their_own_type(seed, typ):
    """Bounds beyond 2**53 (int64) and 2**63 (uint64), with all-null zones (null bounds) among
    them: every condition keeps exactly the zones a brute-force test over the zones' values
    keeps (no float64 rounding)."""
    rng = np.random.default_rng(seed)
    base = (1 << 53) + 1 if typ == pa.int64() else (1 << 63) + 1
    span = 40
    zones = []
    for _ in range(60):
        if rng.random() < 0.2:
            zones.append(None)  # all null
        else:
            lo = base + int(rng.integers(0, span))
            zones.append((lo, lo + int(rng.integers(0, 3))))
    mins = pa.array([z[0] if z else None for z in zones], typ)
    maxs = pa.array([z[1] if z else None for z in zones], typ)
    lits = [base + int(v) for v in rng.integers(-2, span + 2, 5)]
    for op, values in [("eq", lits[:1]), ("lt", lits[:1]), ("le", lits[:1]), ("gt", lits[:1]), ("ge", lits[:1]),
                       ("between", sorted(lits[:2])), ("in", lits)]:
        keep = batches_may_match(_cond(op, values, typ), mins, maxs)
        for z, k in zip(zones, keep):
            if z is None:
                assert k  # null bounds: unbounded (the caller drops all-null zones by null count)
                continue
            assert bool(k) == _brute(op, values, z), (op, values, z)


def test_explain_scan_shows_pruned_pages(legacy_ds, capsys):
    import json

    from lancejit.cli import main

    uri, n = legacy_ds
    flt = "id BETWEEN 100 AND 150"
    assert main(["explain", "scan", uri, "--filter", flt, "--run", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    expected = lance.dataset(uri).count_rows(flt)
    assert report["measured"]["pruned"]["rows"] == report["measured"]["not pruned"]["rows"] == expected
    assert report["measured"]["not pruned"]["pages_pruned"] == 0
    assert report["measured"]["pruned"]["pages_pruned"] == report["pages_pruned"]
    assert [s["source"] for s in report["statistics"]] == ["page statistics"] * len(report["conditions"])
    assert report["pages"] >= report["pages_pruned"]
    if n >= 2000:
        assert report["pages_pruned"] > 0
        assert report["measured"]["pruned"]["read_bytes"] <= report["measured"]["not pruned"]["read_bytes"]
    assert main(["explain", "scan", uri, "--filter", flt]) == 0
    assert "pages pruned" in capsys.readouterr().out


# ------------------------------------------------------------------------ zone maps (2.x)
@pytest.fixture(scope="module", params=[(30000, 4, 12000), (20000, 5, 20000)], ids=lambda p: f"n{p[0]}-seed{p[1]}")
def zonemap_ds(request, tmp_path_factory):
    """A 2.x dataset written by pylance with ZONEMAP indices on ``id``, ``f`` and ``name``, then
    more rows appended (not covered by the index) and some rows deleted."""
    n, seed, per_file = request.param
    uri = str(tmp_path_factory.mktemp("zonemap") / "ds.lance")
    t = _table(n, seed)
    ds = lance.write_dataset(t, uri, max_rows_per_file=per_file)
    for col in ("id", "f", "name"):
        ds.create_scalar_index(col, index_type="ZONEMAP")
    extra = _table(3000, seed + 10)
    extra = extra.set_column(0, "id", pa.array(np.arange(n, n + 3000, dtype=np.int64)))
    ds = lance.write_dataset(extra, uri, mode="append")
    ds.delete("id % 23 = 5")
    return uri, n


ZONE_FILTERS = [
    "id > 25000", "id BETWEEN 9000 AND 9100", "id IN (3, 17000, 31000)", "id < 50", "id >= 31500",
    "f > 3.0", "f < -3.2 AND id > 1000", "f BETWEEN 0.1 AND 0.1001", "name = 'n012345'",
    "name >= 'n02' AND id < 29000", "label = 'a' AND id > 28000", "id > 5 OR id < 2",
]


@pytest.mark.parametrize("flt", ZONE_FILTERS)
def test_zone_map_pruning_equals_reference(zonemap_ds, flt):
    uri, _ = zonemap_ds
    ref = lance.dataset(uri).to_table(filter=flt)
    plain, plain_stats = _scan(lancejit.dataset(uri), flt, enabled=False)
    pruned, stats = _scan(lancejit.dataset(uri), flt, enabled=True)
    assert _same(pruned, ref)
    assert _same(plain, ref)
    if stats.pages_pruned:
        assert stats.read_bytes < plain_stats.read_bytes


@pytest.mark.parametrize("flt", ["id > 25000", "id BETWEEN 9000 AND 9100", "name = 'n012345'",
                                 "id IN (3, 17000)"])
def test_zone_maps_skip_zones(zonemap_ds, flt):
    uri, _ = zonemap_ds
    plain, plain_stats = _scan(lancejit.dataset(uri), flt, enabled=False)
    pruned, stats = _scan(lancejit.dataset(uri), flt, enabled=True)
    assert _same(pruned, plain)
    assert stats.pages_pruned > 0 and stats.rows_pruned > 0
    assert stats.read_bytes < plain_stats.read_bytes


def test_zone_maps_loaded(zonemap_ds):
    from lancejit.io.sync import run_sync
    from lancejit.table.indices.coverage import index_coverage
    from lancejit.table.indices.zonemap import zone_maps

    uri, n = zonemap_ds
    ds = lancejit.dataset(uri)
    zm = run_sync(zone_maps(ds.context))
    by_name = {t.name: t.id for t in ds.context.top_fields}
    assert set(zm.by_field) == {by_name["id"], by_name["f"], by_name["name"]}
    (z,) = zm.by_field[by_name["id"]]
    assert int(z.zone_length.sum()) == n  # the rows the index was built on
    frag0 = ds.context.manifest.fragments[0]
    zones = zm.zones_of(by_name["id"], frag0.id, frag0.physical_rows)
    assert zones is not None and zones.offsets[0] == 0 and zones.offsets[-1] == frag0.physical_rows
    appended = ds.context.manifest.fragments[-1]
    assert zm.zones_of(by_name["id"], appended.id, appended.physical_rows) is None  # not covered by the index
    cov = run_sync(index_coverage(ds.context))
    (seg,) = cov.of_field(by_name["id"], "ZoneMapIndexDetails")
    ids = np.array([f.id for f in ds.context.manifest.fragments])
    assert cov.covered([seg], ids).tolist() == [f.id in set(seg.fragments.tolist()) for f in ds.context.manifest.fragments]
    assert not seg.covers(appended.id) and seg.covers(frag0.id)
    assert cov.segment_for(by_name["id"], appended.id, "ZoneMapIndexDetails") is None
    assert cov.segment_for(by_name["id"], frag0.id, "ZoneMapIndexDetails") is seg


@pytest.mark.parametrize("seed", range(4))
def test_garbled_statistics_never_crash(tmp_path, seed):
    """Bytes of the statistics region overwritten at random: the file still opens (statistics
    dropped or kept, never an unexpected exception) and filtered scans still equal plain ones."""
    import glob
    import shutil
    import struct

    from lancejit.core.errors import LanceJitError
    from lancejit.pb import file_pb2

    src = str(tmp_path / "src.lance")
    lance.write_dataset(_table(1500, seed), src, data_storage_version="legacy", max_rows_per_group=100)
    (path,) = glob.glob(src + "/data/*.lance")
    data = bytearray(open(path, "rb").read())
    meta_pos = struct.unpack("<q", data[-16:-8])[0]
    (n,) = struct.unpack("<I", data[meta_pos:meta_pos + 4])
    md = file_pb2.Metadata()
    md.ParseFromString(bytes(data[meta_pos + 4:meta_pos + 4 + n]))
    lo, hi = md.page_table_position, md.statistics.page_table_position + 16 * 32
    rng = np.random.default_rng(seed)
    for _ in range(5):
        dst = str(tmp_path / f"d{_}.lance")
        shutil.copytree(src, dst)
        (p2,) = glob.glob(dst + "/data/*.lance")
        garbled = bytearray(data)
        at = rng.integers(lo + 8, hi, 6)
        for a in at:
            garbled[a] = int(rng.integers(0, 256))
        open(p2, "wb").write(garbled)
        try:
            ds = lancejit.dataset(dst)
            pruned, _ = _scan(ds, "id BETWEEN 200 AND 300", enabled=True)
            plain, _ = _scan(lancejit.dataset(dst), "id BETWEEN 200 AND 300", enabled=False)
        except LanceJitError:
            continue  # a garbled page table of the data itself is reported, fine
        assert pruned.num_rows <= plain.num_rows
