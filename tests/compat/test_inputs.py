"""Issue 24 item 4: the data and URIs the reference's ``write_dataset`` accepts, side by side."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancejit
from compat_helpers import assert_same

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string())])


def _rows(ds):
    return ds.version, ds.schema, ds.to_table().to_pylist()


def _batches32():
    for i in range(3):
        yield pa.record_batch({"a": pa.array([i, i + 10], pa.int32()), "b": ["x", "y"]})


INPUTS = {
    "list_of_dicts": lambda lance: [{"a": 1, "b": "x"}, {"a": 2, "b": None}],
    "dict_of_columns": lambda lance: {"a": [1, 2], "b": ["x", "y"]},
    "record_batch_reader": lambda lance: pa.RecordBatchReader.from_batches(
        SCHEMA, [pa.record_batch({"a": [1], "b": ["x"]}, schema=SCHEMA)] * 3),
    "record_batch": lambda lance: pa.record_batch({"a": [1, 2], "b": ["x", "y"]}),
    "pandas": lambda lance: pytest.importorskip("pandas").DataFrame({"a": [1, 2], "b": ["x", "y"]}),
}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_data_kinds(tmp_path, name):
    def case(lance, base):
        return _rows(lance.write_dataset(INPUTS[name](lance), f"{base}/ds"))

    assert_same(case, tmp_path)


def test_polars(tmp_path):
    pl = pytest.importorskip("polars")

    def case(lance, base):
        return _rows(lance.write_dataset(pl.DataFrame({"a": [1, 2], "b": ["x", "y"]}), f"{base}/ds"))

    assert_same(case, tmp_path)


def test_iterator_with_schema_casts(tmp_path):
    def case(lance, base):
        return _rows(lance.write_dataset(_batches32(), f"{base}/ds", SCHEMA))

    assert_same(case, tmp_path)


def test_schema_is_the_third_positional_argument(tmp_path):
    def case(lance, base):
        t = pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", "y"]})
        ds = lance.write_dataset(t.to_batches(), f"{base}/ds", SCHEMA, "create")
        return _rows(ds), _rows(lance.write_dataset(t.cast(SCHEMA), f"{base}/ds", SCHEMA, "append"))

    assert_same(case, tmp_path)


def test_dataset_object_as_uri(tmp_path):
    def case(lance, base):
        ds = lance.write_dataset(pa.table({"a": [1], "b": ["x"]}), f"{base}/ds")
        out = lance.write_dataset(pa.table({"a": [2], "b": ["y"]}), ds, mode="append")
        return _rows(out), ds.version

    assert_same(case, tmp_path)


def test_dataset_and_scanner_as_data(tmp_path):
    def case(lance, base):
        src = lance.write_dataset(pa.table({"a": list(range(10)), "b": ["x"] * 10}), f"{base}/src",
                                  max_rows_per_file=3)
        copy = lance.write_dataset(src, f"{base}/copy")
        part = lance.write_dataset(src.scanner(filter="a > 5", columns=["a"]), f"{base}/part")
        batches = lance.write_dataset(src.to_batches(), f"{base}/batches", src.schema)
        return _rows(copy), _rows(part), _rows(batches)

    assert_same(case, tmp_path)


def test_memory_uris_each_call_its_own_store(tmp_path):
    def case(lance, base):
        out = []
        for _ in range(2):  # the same URI twice: each write starts empty
            ds = lance.write_dataset(pa.table({"a": [1], "b": ["x"]}), "memory://compat")
            ds.insert(pa.table({"a": [2], "b": ["y"]}))
            out.append(_rows(ds))
        return out

    assert_same(case, tmp_path)


def test_write_from_scan_on_object_store_loop(tmp_path):
    """Writing to an object store (lancejit's I/O loop thread) from a lancejit scan's batches."""
    src = lancejit.write_dataset(pa.table({"a": list(range(20))}), str(tmp_path / "src"), max_rows_per_file=7)
    out = lancejit.write_dataset(src.to_batches(batch_size=4), "memory://from-scan", src.schema)
    assert out.to_table().equals(src.to_table())
    gen = (b for b in src.to_batches())
    out = lancejit.write_dataset(gen, "memory://from-gen", src.schema)
    assert out.to_table().equals(src.to_table())


def test_rejected_inputs(tmp_path):
    for bad in (42, "text", [1, 2, 3]):
        def case(lance, base, bad=bad):
            return lance.write_dataset(bad, f"{base}/ds")

        assert_same(case, tmp_path / type(bad).__name__)
