"""Zone maps after the reference edits a dataset: lancejit answers every filter as pylance does.

Generated per seed: a dataset written by pylance with ZONEMAP indices (small zones, so fragments
cross several zone boundaries) on columns of every integer width, float32/float64, string, date
and timestamp (naive and UTC) types, holding NULLs (whole zones of them), extremes (int64 past
2**53, uint64 at and past 2**63, NaN, infinities) and sorted runs (so zones prune); then random
edits by pylance: ``merge_insert`` in ``rewrite_columns`` mode (the reference drops the updated
fragments from the index's fragment bitmap while the zone-map file keeps their old zones), a
``DataReplacement`` of a fragment's data file (the same), appends after indexing (fragments the
index never covered), deletes, and sometimes ``optimize_indices`` (the index covers the appended
fragments again).  Every generated filter's ``to_table`` and ``count_rows`` must equal pylance's,
and a ``delete`` with some of them on a copy must leave what pylance's leaves.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import pathlib
import shutil

import numpy as np
import pyarrow as pa
import pytest

import lancejit

lance = pytest.importorskip("lance")
from lance.indices import IndexConfig  # noqa: E402

_spec = importlib.util.spec_from_file_location("table_filters", pathlib.Path(__file__).with_name("filters.py"))
_filters_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_filters_module)

ROWS_PER_ZONE = 64
ROWS_PER_FILE = 300
INDEXED = {
    "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(),
    "u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32(), "u64": pa.uint64(),
    "f32": pa.float32(), "f64": pa.float64(), "s": pa.string(), "d": pa.date32(),
    "ts": pa.timestamp("us"), "tz": pa.timestamp("ms", tz="UTC"),
}
_EPOCH = dt.datetime(1970, 1, 1)


def _extremes(name: str, t: pa.DataType) -> list:
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        out = [int(info.min), int(info.max), int(info.max) - 1, 0]
        if name == "i64":
            out += [2**53 + 1, 2**53 + 2, -(2**53) - 1]
        if name == "u64":
            out += [2**63, 2**63 + 1, 2**64 - 2]
        return out
    if pa.types.is_floating(t):
        return [float("inf"), float("-inf"), float("nan"), -0.0, 0.1, 1e30]
    if t == pa.string():
        return ["", "zzzz", "é", "a" * 70]
    if t == pa.date32():
        return [-1, 0, 2932896, -719162]  # days: 1969-12-31, 1970-01-01, 9999-12-31, 0001-01-01
    return [-1, 0, 253402300799 * 1000, -62135596800 * 1000]  # in the column's unit (small for ms)


def _column(name: str, t: pa.DataType, n: int, rng: np.random.Generator, shifted: bool = False) -> pa.Array:
    """Sorted runs of small values with extremes sprinkled in, NULLs and all-NULL zones;
    ``shifted``: values outside the first ones' range (edits move rows out of their zones)."""
    base = np.sort(rng.integers(0, 120, n)) + (120 if shifted else 0)
    if rng.random() < 0.5:
        base = base[::-1].copy()
    ext = _extremes(name, t)
    values: list = []
    rare = 0.002 if shifted else 0.005  # few zones hold extremes: the others have narrow bounds
    # int64 past 2**53 and uint64 past 2**63 (not exact as doubles) for whole files at times
    big = {"i64": 2**53, "u64": 2**63}.get(name, 0) if rng.random() < 0.5 else 0
    for v in base.tolist():
        if rng.random() < rare:
            values.append(ext[int(rng.integers(0, len(ext)))])
        elif pa.types.is_unsigned_integer(t):
            values.append(big + (int(v) if v < 256 or t != pa.uint8() else 255 - int(v) % 16))
        elif pa.types.is_integer(t):
            values.append(big + (int(v) - 40 if v < 168 or t != pa.int8() else 127 - int(v) % 8))
        elif pa.types.is_floating(t):
            values.append((int(v) - 40) / 4)
        elif t == pa.string():
            values.append(f"k{int(v):03d}")
        else:
            values.append(int(v) * 1000 - 20000)
    for i in range(n):
        if rng.random() < 0.05:
            values[i] = None
    for chunk in range(0, n, ROWS_PER_FILE):  # per file of the first write: a zone of NULLs, often
        rows = min(ROWS_PER_FILE, n - chunk)
        if rows > 2 * ROWS_PER_ZONE and rng.random() < 0.6:
            start = chunk + ROWS_PER_ZONE * int(rng.integers(0, rows // ROWS_PER_ZONE))
            for i in range(start, min(chunk + rows, start + ROWS_PER_ZONE)):
                values[i] = None
    if pa.types.is_integer(t) or pa.types.is_floating(t) or t == pa.string():
        return pa.array(values, t)
    return pa.array(values, pa.int32() if t == pa.date32() else pa.int64()).cast(t)


def _table(ids: np.ndarray, rng: np.random.Generator, shifted: bool = False) -> pa.Table:
    cols = {"id": pa.array(ids, pa.int64())}
    for name, t in INDEXED.items():
        cols[name] = _column(name, t, len(ids), rng, shifted)
    return pa.table(cols)


def _literal(t: pa.DataType, v) -> str:
    if pa.types.is_floating(t):
        return repr(float(np.float32(v))) if t == pa.float32() else repr(float(v))
    if t == pa.string():
        return "'" + v.replace("'", "''") + "'"
    if t == pa.date32():
        return f"DATE '{v.isoformat()}'"
    if pa.types.is_timestamp(t):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    return str(v)


def _values(table: pa.Table, name: str) -> list:
    col = table.column(name)
    t = INDEXED[name]
    if pa.types.is_timestamp(t):
        raw = col.cast(pa.int64()).to_pylist()
        per = 1000 if t.unit == "ms" else 1_000_000
        return [None if r is None else _EPOCH + dt.timedelta(seconds=r // per, microseconds=(r % per) * (10**6 // per))
                for r in raw]
    vals = col.to_pylist()
    if pa.types.is_floating(t):
        vals = [v for v in vals if v is None or np.isfinite(v)]  # NaN and infinities have no literal
    if t == pa.date32():
        vals = [v for v in vals if v is None or v.year > 1]
    if t == pa.int64():
        vals = [v for v in vals if v != -(2**63)]  # its digits are no int64: the reference refuses it
    return vals


def _filters(table: pa.Table, rng: np.random.Generator, count: int, edited: pa.Table | None,
             columns: list[str] | None = None, kinds: tuple[int, ...] = tuple(range(7))) -> list[str]:
    """Filters on values of ``table``, half of them on values an edit wrote (``edited``; all
    of them, on its ``columns``, when given)."""
    out = []
    names = columns or list(INDEXED)
    for _ in range(count):
        name = names[int(rng.integers(0, len(names)))]
        t = INDEXED[name]
        use_edited = edited is not None and name in edited.column_names and (columns or rng.random() < 0.5)
        source = edited if use_edited else table
        vals = [v for v in _values(source, name) if v is not None]
        if pa.types.is_timestamp(t):
            vals = [v for v in vals if 1 < v.year < 9999]
        if not vals:
            continue
        pick = [vals[int(i)] for i in rng.integers(0, len(vals), int(rng.integers(1, 5)))] * 4
        lits = [_literal(t, v) for v in pick]
        lo, hi = sorted(pick[:2], key=lambda v: (v != v, v))
        kind = kinds[int(rng.integers(0, len(kinds)))]
        if kind == 0:
            out.append(f"{name} = {lits[0]}")
        elif kind == 1:
            out.append(f"{name} IN ({', '.join(lits)})")
        elif kind == 2:
            out.append(f"{name} {['<', '<=', '>', '>='][int(rng.integers(0, 4))]} {lits[0]}")
        elif kind == 3:
            out.append(f"{name} BETWEEN {_literal(t, lo)} AND {_literal(t, hi)}")
        elif kind == 4:
            out.append(f"{name} = {lits[0]} AND id >= {int(rng.integers(0, 400))}")
        elif kind == 5:
            other = names[int(rng.integers(0, len(names)))]
            ovals = [v for v in _values(table, other) if v is not None and not (
                pa.types.is_timestamp(INDEXED[other]) and not 1 < v.year < 9999)]
            if ovals:
                out.append(f"{name} >= {lits[0]} AND {other} <= {_literal(INDEXED[other], ovals[0])}")
        else:
            out.append(f"{name} IS NULL OR {name} = {lits[0]}")
    return out


def _edit(path: str, rng: np.random.Generator, next_id: int) -> tuple[int, pa.Table | None]:
    """One random edit by pylance; returns the next unused id and the rows it wrote."""
    ds = lance.dataset(path)
    kind = int(rng.choice(5, p=[0.3, 0.25, 0.2, 0.15, 0.1]))
    live = ds.to_table(columns=["id"]).column("id").to_numpy()
    if kind == 0 and len(live):  # merge_insert rewriting indexed columns in place (rows of one fragment,
        frags = ds.get_fragments()  # so the index keeps covering the others)
        pool = frags[int(rng.integers(0, len(frags)))].to_table(columns=["id"]).column("id").to_numpy()
        pool = pool if len(pool) else live
        ids = rng.choice(pool, size=min(len(pool), int(rng.integers(1, 40))), replace=False)
        cols = list(rng.choice(list(INDEXED), size=int(rng.integers(1, 5)), replace=False))
        src = _table(np.sort(ids), rng, shifted=True).select(["id"] + cols)
        ds.merge_insert("id").when_matched_update_all().write_mode("rewrite_columns").execute(src)
        return next_id, src
    elif kind == 1:  # DataReplacement of a whole one-file fragment
        frags = [f for f in ds.get_fragments() if len(f.data_files()) == 1]
        if frags:
            frag = frags[int(rng.integers(0, len(frags)))]
            n = frag.physical_rows
            old = frag.to_table(columns=["id"], with_row_address=True)
            ids = np.full(n, -1, dtype=np.int64)
            ids[(old.column("_rowaddr").to_numpy() & 0xFFFFFFFF).astype(np.int64)] = old.column("id").to_numpy()
            new = _table(ids, rng, shifted=True).select(ds.schema.names)
            made = lance.fragment.LanceFragment.create(path, new)
            op = lance.LanceOperation.DataReplacement([lance.LanceOperation.DataReplacementGroup(
                frag.fragment_id, made.files[0])])
            lance.LanceDataset.commit(path, op, read_version=ds.version)
            return next_id, new
    elif kind == 2:  # append rows the index does not cover
        n = int(rng.integers(50, 250))
        new = _table(np.arange(next_id, next_id + n), rng, shifted=bool(rng.integers(0, 2)))
        lance.write_dataset(new, path, mode="append", max_rows_per_file=ROWS_PER_FILE)
        return next_id + n, new
    elif kind == 3 and len(live):
        k = int(rng.integers(3, 9))
        ds.delete(f"id % {k} = {int(rng.integers(0, k))} AND id < {int(rng.integers(100, next_id + 1))}")
    else:
        ds.optimize.optimize_indices()
    return next_id, None


def _same(a: pa.Table, b: pa.Table) -> bool:
    return _filters_module.same_rows(a, b, "id")


@pytest.mark.parametrize("seed", range(6))
def test_zone_maps_after_edits_match_reference(tmp_path, seed):
    rng = np.random.default_rng(seed)
    path = str(tmp_path / "ds")
    n = int(rng.integers(500, 800))
    lance.write_dataset(_table(np.arange(n), rng), path, max_rows_per_file=ROWS_PER_FILE)
    ds = lance.dataset(path)
    for name in INDEXED:
        ds.create_scalar_index(name, IndexConfig(index_type="zonemap", parameters={"rows_per_zone": ROWS_PER_ZONE}))
    next_id = n
    written = []
    for _ in range(int(rng.integers(3, 6))):
        next_id, rows = _edit(path, rng, next_id)
        if rows is not None:
            written.append(rows)
    ref, ours = lance.dataset(path), lancejit.dataset(path)
    table = ref.to_table()
    edited = pa.concat_tables(written, promote_options="default") if written else None
    filters = _filters(table, rng, 30, edited)
    filters += _filters(table, rng, 8, None, ["i64", "u64"], (0, 1, 1, 1))  # past 2**53 / 2**63
    for rows in written:  # values each edit wrote, on the columns it wrote
        filters += _filters(table, rng, 4, rows, [c for c in rows.column_names if c != "id"])
    for flt in filters:
        want = ref.to_table(filter=flt)
        got = ours.to_table(filter=flt)
        assert _same(got, want), flt
        assert ours.count_rows(flt) == want.num_rows, flt
    for flt in filters[:2]:
        mine, theirs = str(tmp_path / "mine"), str(tmp_path / "theirs")
        shutil.copytree(path, mine)
        shutil.copytree(path, theirs)
        lancejit.dataset(mine).delete(flt)
        lance.dataset(theirs).delete(flt)
        assert _same(lance.dataset(mine).to_table(), lance.dataset(theirs).to_table()), flt
        shutil.rmtree(mine)
        shutil.rmtree(theirs)
