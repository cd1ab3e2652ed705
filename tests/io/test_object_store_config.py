"""Object stores (S3, GCS) plan reads with the reference's 16 MiB largest request and cut long
reads into ~8 MiB pieces; local and memory stores keep their settings; options override."""

from __future__ import annotations

from lancejit.core.config import CLOUD_IO, MiB
from lancejit.io import open_store
from lancejit.io.fsspec_store import OBJECT_STORE_IO, PREFERRED_READ_BYTES
from lancejit.io.registry import clear_store_cache

S3_OPTS = {"aws_endpoint": "http://127.0.0.1:9", "allow_http": "true", "aws_access_key_id": "x",
           "aws_secret_access_key": "x", "aws_region": "us-east-1"}


def test_object_store_defaults():
    clear_store_cache()
    s3, _ = open_store("s3://cfg-bucket/a/b.lance", S3_OPTS)
    gcs, _ = open_store("gs://cfg-bucket/a/b.lance", {"gcs_endpoint": "http://127.0.0.1:9", "anonymous": "true"})
    for store in (s3, gcs):
        assert store.config == OBJECT_STORE_IO
        assert store.config.max_request_size == 16 * MiB
        assert store.config.block_size == CLOUD_IO.block_size == 64 * 1024
        assert store.preferred_read_size == PREFERRED_READ_BYTES == 8 * MiB
    mem, _ = open_store("memory://cfg/x.lance", {})
    assert mem.config == CLOUD_IO and getattr(mem, "preferred_read_size", 0) == 0


def test_max_iop_size_option_caps_the_pieces():
    clear_store_cache()
    s3, _ = open_store("s3://cfg-bucket/a/b.lance", {**S3_OPTS, "max_iop_size": str(4 * MiB)})
    assert s3.config.max_request_size == 4 * MiB
    assert s3.preferred_read_size == 4 * MiB
