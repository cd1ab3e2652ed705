"""Issue 24 item 7: what a dataset tells about itself (versions, statistics, config and metadata,
schemas, samples, tags, indices), side by side with pylance."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lance as ref_lance
import lancejit
from compat_helpers import assert_same


def _ds(lance, base, **kw):
    t = pa.table({"a": np.arange(3000, dtype=np.int64), "s": [f"v{i % 7}" for i in range(3000)],
                  "st": [{"x": i, "y": str(i)} for i in range(3000)]})
    return lance.write_dataset(t, f"{base}/ds", max_rows_per_file=1000, **kw)


def test_versions_and_latest(tmp_path):
    def case(lance, base):
        ds = _ds(lance, base)
        ds.delete("a < 10")
        old = ds.checkout_version(1)
        # file sizes are left out: the two writers encode differently
        meta = [{k: v for k, v in x["metadata"].items() if k != "total_files_size"} for x in ds.versions()]
        return (old.version, old.latest_version, ds.latest_version, [v["version"] for v in ds.versions()],
                meta, ds.data_storage_version, ds.has_stable_row_ids, ds.max_field_id)

    assert_same(case, tmp_path)


def test_stats(tmp_path):
    """On files the reference wrote (the writers encode differently: bytes differ)."""
    def case(lance, base):
        ref = _ds(ref_lance, base)
        ref.delete("a % 2 = 0")
        ref.insert(pa.table({"a": [1], "s": ["q"], "st": [{"x": 1, "y": "1"}]}))
        ds = lance.dataset(f"{base}/ds")
        data = ds.stats.data_stats()
        return ds.stats.dataset_stats(), ds.stats.dataset_stats(max_rows_per_group=2000), [
            (f.id, f.bytes_on_disk) for f in data.fields]

    assert_same(case, tmp_path)


def test_config_and_metadata(tmp_path):
    def case(lance, base):
        ds = _ds(lance, base)
        out = [ds.update_config({"a.b": "1", "c": "2"}), ds.update_metadata({"k": "v", "j": "w"}),
               ds.update_metadata({"j": None}), ds.update_schema_metadata({"m": "1"}),
               ds.update_schema_metadata({"n": "2"}, replace=True)]
        ds.update_field_metadata({"st.x": {"f": "1"}, "a": {"g": "2"}})
        ds.delete_config_keys(["c"])
        again = lance.dataset(f"{base}/ds")
        return (out, ds.config(), ds.metadata, ds.schema_metadata, again.config(), again.metadata,
                again.schema, again.schema.field("st").type.field("x").metadata, ds.version)

    assert_same(case, tmp_path)


def test_lance_schema_field_ids(tmp_path):
    def case(lance, base):
        ds = _ds(lance, base)
        ds.drop_columns(["s"])
        ds.add_columns({"z": "a + 1"})
        return ds.lance_schema.to_pyarrow(), ds.max_field_id

    assert_same(case, tmp_path)


def test_sample_and_head(tmp_path):
    def case(lance, base):
        ds = _ds(lance, base)
        s = ds.sample(50, columns=["a", "s"])
        ordered = ds.sample(20, columns=["a"], randomize_order=False)
        a = ordered["a"].to_pylist()
        return (s.num_rows, s.schema.names, len(set(s["a"].to_pylist())), a == sorted(a),
                ds.head(3, columns=["a"]).to_pylist(), ds.head(2, filter="a > 100").num_rows)

    assert_same(case, tmp_path)


def test_tags_ordered(tmp_path):
    def case(lance, base):
        ds = _ds(lance, base)
        ds.delete("a = 1")
        ds.delete("a = 2")
        ds.tags.create("old", 1)
        ds.tags.create("new", 3)
        ds.tags.create("mid", 2)
        strip = lambda pairs: [(n, t["version"]) for n, t in pairs]  # noqa: E731
        return (strip(ds.tags.list_ordered()), strip(ds.tags.list_ordered("asc")),
                strip(ds.tags.list_ordered("desc")), sorted(ds.tags.list()), ds.tags.get_version("mid"))

    assert_same(case, tmp_path)


def test_indices_listed(tmp_path):
    """No index: an empty list; indices the reference built: listed the same way."""
    def case(lance, base):
        return _ds(lance, base).list_indices(), _ds(lance, f"{base}/x").has_index

    assert_same(case, tmp_path)
    uri = str(tmp_path / "idx")
    _ds(ref_lance, str(tmp_path / "idx")).create_scalar_index("a", "BTREE")
    ref = ref_lance.dataset(uri + "/ds")
    ref.create_scalar_index("s", "ZONEMAP", name="zs")
    ref = ref_lance.dataset(uri + "/ds")
    ours = lancejit.dataset(uri + "/ds")
    want = [dict(i, fragment_ids=set(i["fragment_ids"])) for i in ref.list_indices()]
    assert ours.list_indices() == want and ours.has_index


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_data_storage_version(tmp_path, version):
    def case(lance, base):
        return _ds(lance, base, data_storage_version=version).data_storage_version

    assert_same(case, tmp_path)
