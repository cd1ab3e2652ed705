"""open_store: scheme dispatch, reference-style options, store caching."""

from __future__ import annotations

import os

import pytest

from lancejit.core.config import CLOUD_IO, LOCAL_IO
from lancejit.core.errors import InvalidInputError
from lancejit.io import LocalStore, MemoryStore, open_store, parse_uri, run_sync
from lancejit.io.gcs_store import GCSStore
from lancejit.io.s3_store import S3Store


def test_parse_uri(tmp_path):
    assert parse_uri("s3://bkt/a/b.lance") == ("s3", "bkt", "a/b.lance")
    assert parse_uri("gs://bkt/x/") == ("gs", "bkt", "x")
    assert parse_uri("gcs://bkt") == ("gs", "bkt", "")
    assert parse_uri("memory://ns/k") == ("memory", "ns", "k")
    assert parse_uri(str(tmp_path / "d")) == ("file", "", str(tmp_path / "d"))
    assert parse_uri(f"file://{tmp_path}/d%20e") == ("file", "", f"{tmp_path}/d e")
    assert parse_uri("relative/dir")[2] == os.path.abspath("relative/dir")
    for bad in ("", "ftp://x/y", "s3:///key", "file://host/x", "s3://b/k?versionId=1"):
        with pytest.raises(InvalidInputError):
            parse_uri(bad)


def test_local_and_memory(tmp_path):
    store, path = open_store(str(tmp_path / "f.bin"))
    assert isinstance(store, LocalStore) and path == str(tmp_path / "f.bin")
    assert store.config == LOCAL_IO
    same, _ = open_store(f"file://{tmp_path}/g.bin")
    assert same is store  # cached
    mem, key = open_store("memory://ns-reg/a/b")
    assert isinstance(mem, MemoryStore) and key == "a/b" and mem.config == CLOUD_IO
    assert mem.uri(key) == "memory://ns-reg/a/b"
    run_sync(store.put(path, b"abc"))
    assert bytes(run_sync(store.read_all(path))) == b"abc"


def test_config_overrides_from_string_options(tmp_path):
    store, _ = open_store(str(tmp_path), {"block_size": "1024", "io_parallelism": "3", "max_iop_size": "65536"})
    assert (store.config.block_size, store.config.io_parallelism, store.config.max_request_size) == (1024, 3, 65536)
    default, _ = open_store(str(tmp_path))
    assert default is not store
    with pytest.raises(InvalidInputError):
        open_store(str(tmp_path), {"io_parallelism": "many"})
    with pytest.raises(InvalidInputError):
        open_store(str(tmp_path), {"no_such_option": "1"})


def test_s3_options():
    opts = {
        "aws_endpoint": "http://127.0.0.1:1", "aws_access_key_id": "k", "aws_secret_access_key": "s",
        "aws_session_token": "t", "aws_region": "eu-west-1", "allow_http": "true",
    }
    store, key = open_store("s3://bucket-a/ds/data.lance", opts)
    assert isinstance(store, S3Store)
    assert (store.bucket, key, store.endpoint, store.region) == ("bucket-a", "ds/data.lance", "http://127.0.0.1:1", "eu-west-1")
    assert store._creds == ("k", "s", "t")
    assert store.uri(key) == "s3://bucket-a/ds/data.lance"
    assert open_store("s3://bucket-a/other", opts)[0] is store
    assert open_store("s3://bucket-b/other", opts)[0] is not store
    alias = {"endpoint": "http://127.0.0.1:1", "region": "eu-west-1", "allow_http": True}
    assert open_store("s3://bucket-a/x", alias)[0].endpoint == "http://127.0.0.1:1"
    with pytest.raises(InvalidInputError, match="allow_http"):
        open_store("s3://bucket-a/x", {"aws_endpoint": "http://127.0.0.1:1"})
    with pytest.raises(InvalidInputError):
        open_store("s3://bucket-a/x", {"aws_endpoint": "http://127.0.0.1:1", "allow_http": "maybe"})
    assert open_store("s3://bucket-a/x", {"anonymous": "true"})[0].anonymous


def test_gcs_options():
    store, key = open_store("gs://gbucket/a", {"gcs_endpoint": "http://127.0.0.1:2", "anonymous": "true"})
    assert isinstance(store, GCSStore) and store.token == "anon" and key == "a"
    assert open_store("gcs://gbucket/b", {"gcs_endpoint": "http://127.0.0.1:2", "anonymous": "true"})[0] is store
    sa, _ = open_store("gs://gbucket/a", {"google_service_account": "/path/sa.json", "endpoint": "http://x"})
    assert sa.token == "/path/sa.json" and sa.endpoint == "http://x"
    with pytest.raises(InvalidInputError):
        open_store("gs://gbucket/a", {"part_size": "1000"})  # not a multiple of 256 KiB


def test_sessions_reused_across_calls(s3_endpoint):
    store, _ = open_store(s3_endpoint.uri("reuse/x"), s3_endpoint.storage_options)

    async def fs_id():
        return id(await store.filesystem())

    assert run_sync(fs_id()) == run_sync(fs_id())
