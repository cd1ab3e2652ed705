"""Blob layouts: v1 (descriptors + values elsewhere in the file), v2 descriptors and sidecars,
packed structs (fixed and variable), empty structs."""

from __future__ import annotations

import asyncio
import glob
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import v21data as D
from lancejit.encoding.v21.blob import blob_v2_sidecar_name, read_blobs_v2
from v21support import BytesReader, Opened, check_file, tables_equal, write_lance


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("seed", [1, 2])
def test_blob_v1_and_packed(tmp_path, version, seed):
    rng = np.random.default_rng(seed)
    n = 120
    vals = [
        None if i % 7 == 0 else (b"" if i % 5 == 0 else bytes(rng.integers(0, 256, size=int(rng.integers(1, 3000)), dtype=np.uint8)))
        for i in range(n)
    ]
    st = D.structs(rng, n, {"a": D.ints(rng, n, pa.int32(), nulls=0), "b": D.floats(rng, n, nulls=0)})
    fields = [
        pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        pa.field("packed", st.type, metadata={"lance-encoding:packed": "true"}),
        pa.field("x", pa.int64()),
    ]
    arrays = [pa.array(vals, pa.large_binary()), st, D.ints(rng, n, pa.int64())]
    if version != "2.1":  # variable packed structs are 2.2-only
        stv = D.structs(rng, n, {"k": D.ints(rng, n, pa.int16(), nulls=0), "s": D.strings(rng, n, nulls=0)})
        fields.append(pa.field("packedv", stv.type, metadata={"lance-encoding:packed": "true"}))
        arrays.append(stv)
    sb_type = pa.struct([pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"}), pa.field("k", pa.int32())])
    fields.append(pa.field("sb", sb_type))
    arrays.append(pa.StructArray.from_arrays([pa.array(vals, pa.large_binary()), D.ints(rng, n)], fields=list(sb_type), mask=pa.array(D._mask(rng, n, 0.2))))
    # (lists of blobs: pylance 14 writes them but cannot read them back; lancejit refuses them)
    # the empty struct goes last: pylance 14 misreads fields that follow one (see below)
    fields.append(pa.field("es", pa.struct([])))
    arrays.append(pa.array([{}] * n, pa.struct([])))
    t = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    path = write_lance(tmp_path / "b.lance", t, version, 32 * 1024)
    check_file(path, rng, n_takes=3)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_empty_struct_owns_a_column(tmp_path, version):
    """The writer gives an empty struct a column (an all-null page); lancejit reads the fields
    after it from the right columns.  (pylance 14's own reader does not: it returns nulls for
    the field that follows, so this compares with the data written.)"""
    n = 10
    t = pa.table({"es": pa.array([{}] * n, pa.struct([])), "x": pa.array(range(n)), "y": pa.array([str(i) for i in range(n)])})
    path = write_lance(tmp_path / "es.lance", t, version)
    op = Opened(path)
    assert len(op.meta.columns) == 3
    tables_equal(op.read_all(), t)
    tables_equal(op.take(np.array([7, 1, 1])), t.take(pa.array([7, 1, 1])))


def test_blob_v2_descriptors_and_sidecars(tmp_path, monkeypatch):
    import lance
    from lance.blob import blob_array

    vals = [b"small", None, b"", b"x" * 100_000, bytes(range(256)) * 20_000]
    t = pa.table({"id": pa.array(range(5)), "b": blob_array(vals)})
    ds = lance.write_dataset(t, str(tmp_path / "ds"), data_storage_version="2.2")
    ref = ds.to_table()
    data_file = Path(glob.glob(str(tmp_path / "ds" / "data" / "*.lance"))[0])

    op = Opened(data_file)
    got = op.read_all()
    tables_equal(got, ref)
    idx = np.array([0, 1, 3, 4])
    tables_equal(op.take(idx), ref.take(pa.array(idx)))

    sidecar_dir = data_file.with_suffix("")

    async def open_sidecar(name):
        return BytesReader((sidecar_dir / name).read_bytes(), str(sidecar_dir / name))

    blobs = asyncio.run(read_blobs_v2(got.column("b").combine_chunks(), op.reader, open_sidecar))
    assert blobs.to_pylist() == vals
    assert blob_v2_sidecar_name(1) == "1" + "0" * 31 + ".blob"
