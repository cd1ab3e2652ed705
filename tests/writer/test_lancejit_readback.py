"""lancejit's own reader reads lancejit-written files back equal to the input (acceptance 1)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import writer_datagen as g

from lancejit.file.writer import LanceFileWriter

reader_mod = pytest.importorskip("lancejit.file.reader")


def _families(rng, n):
    return {
        "int32": g.ints(rng, n, np.int32, nulls=0.1),
        "int64": g.ints(rng, n, np.int64, lo=-(1 << 40), hi=1 << 40),
        "lowcard": pa.array(rng.integers(0, 50, n) * 1000003),
        "f64": g.floats(rng, n, np.float64),
        "bool": g.bools(rng, n, nulls=0.2),
        "str": g.strings(rng, n, nulls=0.1),
        "str_lowcard": g.strings(rng, n, card=7, nulls=0.05),
        "bin": g.binaries(rng, n, nulls=0.1),
        "vec": g.vectors(rng, n),
        "list": g.lists(rng, n, item_nulls=0.1),
        "struct": g.structs(rng, n, nulls=0.0),
        "const": pa.array(np.full(n, 3, dtype=np.int32)),
        "nulls": pa.nulls(n, pa.int32()),
    }


@pytest.mark.parametrize("version", ["2.2", "2.1", "2.0"])
@pytest.mark.parametrize("seed,n", [(0, 10), (1, 3000)])
def test_lancejit_reads_back(tmp_path, version, seed, n):
    t = pa.table(_families(np.random.default_rng(seed), n))
    p = tmp_path / "r.lance"
    with LanceFileWriter(str(p), t.schema, version=version, max_page_bytes=32 * 1024) as w:
        w.write_batch(t)
    got = reader_mod.LanceFileReader(str(p)).read_all()
    for name in t.column_names:
        exp = t[name].combine_chunks()
        act = got[name].combine_chunks()
        assert act.equals(exp), name


@pytest.mark.parametrize("version", ["2.2", "2.1"])
@pytest.mark.parametrize("seed,n", [(2, 2000)])
def test_lancejit_reads_back_all_families(tmp_path, version, seed, n):
    rng = np.random.default_rng(seed)
    fams = {**g.flat_families(rng, n), **g.nested_families(rng, n)}
    t = pa.table(fams)
    p = tmp_path / "all.lance"
    with LanceFileWriter(str(p), t.schema, version=version, max_page_bytes=16 * 1024) as w:
        w.write_batch(t.slice(0, n // 3))
        w.write_batch(t.slice(n // 3))
    got = reader_mod.LanceFileReader(str(p)).read_all()
    for name in t.column_names:
        assert got[name].combine_chunks().equals(t[name].combine_chunks()), name
