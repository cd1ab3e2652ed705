"""The data source on object stores (moto S3, fake-gcs-server): options ``storage_options.*``
reach the Python workers, writes commit through the store, reads come back exactly."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancejit
import lancejit.io.sync
import lancejit.spark


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


@pytest.mark.parametrize("store_root", ["s3"], indirect=True)
def test_every_write_mode_on_s3(spark, store_root):
    """``lancejit.spark.write`` in every save mode, tasks writing fragments to S3 and the driver
    committing each job once: pylance reads back exactly what was written, and no file of a job
    is left unreferenced (a failed job's included)."""
    import lance

    from lancejit.core.errors import AlreadyExistsError

    uri = store_root.uri + "/modes.lance"
    so = store_root.storage_options
    first = spark.range(0, 120, numPartitions=3).selectExpr("id", "concat('a', id) AS s")
    lancejit.spark.write(first, uri, mode="errorifexists", storage_options=so, max_rows_per_file=25)
    with pytest.raises(AlreadyExistsError):
        lancejit.spark.write(first, uri, mode="errorifexists", storage_options=so)
    lancejit.spark.write(spark.range(5).selectExpr("id", "'no' AS s"), uri, mode="ignore", storage_options=so)
    more = spark.range(1000, 1050, numPartitions=2).selectExpr("id", "concat('b', id) AS s")
    lancejit.spark.write(more, uri, mode="append", storage_options=so)
    bad = spark.range(0, 100, numPartitions=2).selectExpr(
        "id", "CASE WHEN id = 99 THEN raise_error('boom') ELSE 'x' END AS s")
    with pytest.raises(Exception, match="boom"):
        lancejit.spark.write(bad, uri, mode="overwrite", storage_options=so, max_rows_per_file=10)
    ds = lance.dataset(uri, storage_options=so)
    assert ds.version == 2
    want = pa.concat_tables([first.toArrow(), more.toArrow()]).sort_by("id")
    assert ds.to_table().sort_by("id").to_pylist() == want.to_pylist()
    wider = spark.range(0, 30, numPartitions=3).selectExpr("id", "concat('c', id) AS s", "id * 2.0D AS x")
    lancejit.spark.write(wider, uri, mode="append", storage_options=so, merge_schema=True)
    ds = lance.dataset(uri, storage_options=so)
    assert ds.schema.names == ["id", "s", "x"] and ds.count_rows() == 200
    assert ds.to_table(filter="x IS NOT NULL").sort_by("id").to_pylist() == wider.toArrow().sort_by("id").to_pylist()
    final = spark.range(0, 40, numPartitions=4).selectExpr("id", "concat('d', id) AS s")
    lancejit.spark.write(final, uri, mode="overwrite", storage_options=so)
    ds = lance.dataset(uri, storage_options=so)
    assert ds.to_table().sort_by("id").to_pylist() == final.toArrow().sort_by("id").to_pylist()
    listed = {i.path.rsplit("/", 1)[-1] for i in lancejit.io.sync.run_sync(_list_data(uri, so))}
    referenced = {df.path for v in ds.versions() for f in lance.dataset(uri, version=v["version"],
                                                                        storage_options=so).get_fragments()
                  for df in f.metadata.files}
    assert listed == referenced


async def _list_data(uri, storage_options):
    from lancejit.io import open_store

    store, root = open_store(uri, storage_options)
    return await store.list(root.rstrip("/") + "/data", recursive=False)


class _GetBytes:
    """WSGI wrapper counting, per object path, the GET requests and bytes a server answers."""

    def __init__(self, app) -> None:
        import threading
        from collections import defaultdict

        self.app, self.lock = app, threading.Lock()
        self.gets: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def __call__(self, environ, start_response):
        body = list(self.app(environ, start_response))
        if environ.get("REQUEST_METHOD") == "GET":
            with self.lock:
                got = self.gets[environ.get("PATH_INFO", "")]
                got[0] += 1
                got[1] += sum(len(c) for c in body)
        return body

    def reset(self) -> None:
        with self.lock:
            self.gets.clear()


@pytest.fixture(scope="module")
def counted_s3():
    """A moto S3 server of this module whose GETs are counted server-side (``.log``)."""
    import logging

    from moto.server import ThreadedMotoServer

    from tests_emulators import create_s3_bucket, s3_storage_options

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    log = _GetBytes(server._server.app)
    server._server.app = log
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    create_s3_bucket(url, "spark")
    try:
        yield url, s3_storage_options(url), log
    finally:
        server.stop()


@pytest.mark.s3
def test_tasks_read_only_their_partitions_bytes(spark, counted_s3):
    """A job writes 40 fragments to S3 from executors, another reads them back in 4 tasks: every
    data file is read, and read once (no task reads another partition's files); pylance reads
    what the executors wrote."""
    import lance

    url, so, log = counted_s3
    uri = "s3://spark/counted.lance"
    opts = {f"storage_options.{k}": v for k, v in so.items()}
    df = spark.range(0, 4000, numPartitions=4).selectExpr("id", "concat('v', id) AS s", "id * 0.5D AS x")
    df.write.format("lancejit").options(**opts).option("max_rows_per_file", 100).mode("append").save(uri)
    ref = lance.dataset(uri, storage_options=so)
    assert len(ref.get_fragments()) == 40
    sizes = {f"/spark/counted.lance/data/{df_.path}": df_.file_size_bytes
             for f in ref.get_fragments() for df_ in f.metadata.data_files()}
    log.reset()
    back = (spark.read.format("lancejit").options(**opts).option("minPartitionNum", 4).load(uri))
    assert back.rdd.getNumPartitions() == 4
    log.reset()
    got = back.toArrow().sort_by("id")
    assert got.to_pylist() == df.toArrow().sort_by("id").to_pylist()
    data = {k: v for k, v in log.gets.items() if "/data/" in k}
    assert set(data) == set(sizes)
    for key, (requests, nbytes) in data.items():
        assert nbytes <= sizes[key], (key, requests, nbytes, sizes[key])
    assert sum(b for _, b in data.values()) <= sum(sizes.values())
