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
