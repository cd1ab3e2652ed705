"""The data source on object stores (moto S3, fake-gcs-server): options ``storage_options.*``
reach the Python workers, writes commit through the store, reads come back exactly."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancejit


@pytest.mark.parametrize("store_root", ["s3", "gcs"], indirect=True)
def test_write_then_read_on_object_store(spark, store_root):
    uri = store_root.uri + "/spark.lance"
    opts = {f"storage_options.{k}": v for k, v in store_root.storage_options.items()}
    df = spark.range(0, 300, numPartitions=4).selectExpr(
        "id", "concat('v', id) AS s", "array(id, id + 1) AS arr", "named_struct('x', id * 2) AS st")
    df.write.format("lancejit").options(**opts).mode("append").save(uri)

    ds = lancejit.dataset(uri, storage_options=store_root.storage_options)
    assert ds.version == 1
    assert ds.count_rows() == 300

    back = (spark.read.format("lancejit").options(**opts).option("filter", "id >= 20")
            .option("rows_per_partition", 40).load(uri))
    got = back.toArrow().sort_by("id")
    want = df.where("id >= 20").toArrow().sort_by("id")
    assert got.to_pylist() == want.to_pylist()
