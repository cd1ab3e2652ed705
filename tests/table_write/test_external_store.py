"""External manifest store (``s3+ddb://``) on moto (S3 + DynamoDB on one server): lancejit and
pylance commit to one dataset through one DynamoDB table; concurrent writers from both engines;
a writer killed between staging and finalizing; stores without conditional put."""

from __future__ import annotations

import multiprocessing as mp
import uuid

import numpy as np
import pytest

import lance
import lancejit
from lancejit.core.errors import AlreadyExistsError, InvalidInputError, NotSupportedError
from lancejit.io import open_store, parse_uri
from lancejit.io.sync import run_sync
from lancejit.table.meta import external_store as xs
from lancejit.table.commit.committer import commit_manifest

import xs_workers as W

boto3 = pytest.importorskip("boto3")

LJ_WRITERS = 4
APPENDS = W.APPENDS
ROWS = W.ROWS
_batch = W.batch


@pytest.fixture
def moto(s3_endpoint):
    """moto's server (S3 and DynamoDB on one endpoint)."""
    return s3_endpoint


def _ddb(url: str):
    return boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture
def ddb_ds(moto):
    """``(uri, storage_options, plain s3 uri, table name)`` of a fresh dataset and DynamoDB table."""
    table = f"t{uuid.uuid4().hex[:10]}"
    _ddb(moto.url).create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"},
                   {"AttributeName": "version", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "base_uri", "AttributeType": "S"},
                              {"AttributeName": "version", "AttributeType": "N"}],
        BillingMode="PAY_PER_REQUEST",
    )
    path = f"ds/{uuid.uuid4().hex[:8]}.lance"
    opts = dict(moto.storage_options, dynamodb_endpoint=moto.url)
    return f"s3+ddb://{moto.bucket}/{path}?ddbTableName={table}", opts, f"s3://{moto.bucket}/{path}", table


def _items(url: str, table: str) -> list[dict]:
    items = _ddb(url).scan(TableName=table)["Items"]
    return sorted(items, key=lambda it: int(it["version"]["N"]))


# ------------------------------------------------------------------------------------ URIs
def test_parse_uri_s3_ddb():
    assert parse_uri("s3+ddb://bkt/a/b?ddbTableName=t") == ("s3+ddb", "bkt", "a/b")
    for bad in ("s3+ddb://bkt/a", "s3+ddb://bkt/a?ddbTableName=", "s3+ddb://bkt/a?other=t",
                "s3+ddb://bkt/a?ddbTableName=t&x=1", "s3+ddb:///a?ddbTableName=t"):
        with pytest.raises(InvalidInputError):
            parse_uri(bad)
    with pytest.raises(InvalidInputError):
        open_store("s3://bkt/a", {"conditional_put": "sometimes"})


def test_staged_name_and_item_parsing():
    final = "r/_versions/18446744073709551614.manifest"
    staged = xs.staging_path(final)
    assert staged.startswith(final + "-") and len(staged) == len(final) + 37
    ev = xs.ExternalVersion(1, staged, 10)
    assert ev.staged and not xs.ExternalVersion(1, final).staged
    assert xs._final_path("r", ev)[0] == final


# ------------------------------------------------------------------- one table, two engines
def test_reference_and_lancejit_share_the_table(moto, ddb_ds):
    uri, opts, plain, table = ddb_ds
    lance.write_dataset(_batch(0), uri, storage_options=opts)
    ds = lancejit.write_dataset(_batch(100), uri, mode="append", storage_options=opts)
    assert ds.version == 2
    lance.write_dataset(_batch(200), uri, mode="append", storage_options=opts)
    assert lancejit.write_dataset(_batch(300), uri, mode="append", storage_options=opts).version == 4

    items = _items(moto.url, table)
    assert [int(it["version"]["N"]) for it in items] == [1, 2, 3, 4]
    ref_item, our_item = items[0], items[1]
    assert set(our_item) == set(ref_item)  # base_uri, version, path, size, committer
    base = plain.split("/", 3)[3]
    for it in items:
        assert it["base_uri"]["S"] == base
        assert it["path"]["S"].startswith(base + "/_versions/") and it["path"]["S"].endswith(".manifest")
    assert our_item["committer"]["S"] == xs.COMMITTER_NAME

    ours = lancejit.dataset(uri, storage_options=opts)
    ref = lance.dataset(uri, storage_options=opts)
    assert ours.version == ref.version == 4
    assert ours.to_table().sort_by("id").equals(ref.to_table().sort_by("id"))
    # a reader that does not know the table lists the same, finalized versions
    assert lance.dataset(plain, storage_options=moto.storage_options).version == 4
    assert lancejit.dataset(plain, storage_options=moto.storage_options).version == 4


def test_claimed_version_loses(moto, ddb_ds):
    """A writer whose version is already claimed gets AlreadyExistsError and leaves no staged file."""
    uri, opts, _, _ = ddb_ds
    lancejit.write_dataset(_batch(0), uri, storage_options=opts)
    store, root = open_store(uri, opts)
    ext = xs.external_store_of(store)
    before = run_sync(store.list(root + "/_versions"))
    with pytest.raises(AlreadyExistsError):
        run_sync(commit_manifest(store, root, ext, 1, root + "/_versions/18446744073709551614.manifest", b"x"))
    assert run_sync(store.list(root + "/_versions")) == before


# ------------------------------------------------------------------------------ no conditional put
def test_store_without_conditional_put(moto, ddb_ds):
    uri, opts, plain, _ = ddb_ds
    no_cas = dict(opts, conditional_put="disabled")
    with pytest.raises(NotSupportedError):
        lancejit.write_dataset(_batch(0), plain, storage_options=no_cas)
    # ...but the same store commits safely through the external manifest store
    ds = lancejit.write_dataset(_batch(0), uri, storage_options=no_cas)
    assert lancejit.write_dataset(_batch(10), uri, mode="append", storage_options=no_cas).version == 2
    assert ds.version == 1
    assert lance.dataset(uri, storage_options=opts).count_rows() == 2 * ROWS


# -------------------------------------------------------------------------------- concurrency
@pytest.mark.slow
def test_concurrent_writers_both_engines(moto, ddb_ds):
    uri, opts, plain, table = ddb_ds
    lancejit.write_dataset(_batch(-ROWS), uri, storage_options=opts)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    barrier = ctx.Barrier(LJ_WRITERS + 1)
    engines = ["lancejit"] * LJ_WRITERS + ["lance"]
    procs = [ctx.Process(target=W.appender, args=(e, uri, opts, w, barrier, out)) for w, e in enumerate(engines)]
    for p in procs:
        p.start()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    committed = sorted(v for _, _, vs in results for v in vs)
    appends = (LJ_WRITERS + 1) * APPENDS
    assert committed == list(range(2, appends + 2))  # 50 appends -> versions 2..51, each once

    expected = np.sort(np.concatenate(
        [np.arange(-ROWS, 0)] + [np.arange((w * 100 + i) * ROWS, (w * 100 + i + 1) * ROWS)
                                 for w in range(LJ_WRITERS + 1) for i in range(APPENDS)]))
    ours = lancejit.dataset(uri, storage_options=opts)
    ref = lance.dataset(uri, storage_options=opts)
    assert ours.version == ref.version == appends + 1
    for t in (ours.to_table(), ref.to_table()):
        assert np.array_equal(np.sort(t.column("id").to_numpy()), expected)
    assert ours.to_table().sort_by("id").equals(ref.to_table().sort_by("id"))
    assert [int(it["version"]["N"]) for it in _items(moto.url, table)] == list(range(1, appends + 2))
    assert len(lance.dataset(plain, storage_options=moto.storage_options).versions()) == appends + 1


# ------------------------------------------------------------------------------ killed writer
@pytest.mark.parametrize("repairer", ["lancejit", "reference"])
def test_writer_killed_between_staging_and_finalizing(moto, ddb_ds, repairer):
    uri, opts, plain, table = ddb_ds
    lancejit.write_dataset(_batch(0), uri, storage_options=opts)
    lance.write_dataset(_batch(100), uri, mode="append", storage_options=opts)
    p = mp.get_context("spawn").Process(target=W.die_before_finalize, args=(uri, opts, 500))
    p.start()
    p.join(timeout=300)
    assert p.exitcode == 3

    items = _items(moto.url, table)
    assert int(items[-1]["version"]["N"]) == 3
    staged = items[-1]["path"]["S"]
    assert not staged.endswith(".manifest")  # claimed, never finalized
    # readers that do not know the table are one version behind
    assert lance.dataset(plain, storage_options=moto.storage_options).version == 2
    assert lancejit.dataset(plain, storage_options=moto.storage_options).version == 2

    if repairer == "lancejit":
        assert lancejit.write_dataset(_batch(600), uri, mode="append", storage_options=opts).version == 4
    else:
        assert lance.write_dataset(_batch(600), uri, mode="append", storage_options=opts).version == 4
    items = _items(moto.url, table)
    assert [int(it["version"]["N"]) for it in items] == [1, 2, 3, 4]
    assert all(it["path"]["S"].endswith(".manifest") for it in items)
    store, root = open_store(plain, moto.storage_options)
    assert not run_sync(store.exists(staged))

    expected = np.concatenate([np.arange(0, ROWS), np.arange(100, 100 + ROWS), np.arange(500, 500 + ROWS),
                               np.arange(600, 600 + ROWS)])
    for ds in (lance.dataset(uri, storage_options=opts), lance.dataset(plain, storage_options=moto.storage_options),
               lancejit.dataset(uri, storage_options=opts)):
        assert ds.version == 4
        assert np.array_equal(np.sort(ds.to_table().column("id").to_numpy()), expected)
    ref_v3 = lance.dataset(plain, version=3, storage_options=moto.storage_options).to_table()
    assert np.array_equal(np.sort(ref_v3.column("id").to_numpy()), expected[:3 * ROWS])


def test_reader_finalizes_staged_version(moto, ddb_ds):
    """Opening the dataset (no write) through the table also repairs a staged latest version."""
    uri, opts, plain, table = ddb_ds
    lancejit.write_dataset(_batch(0), uri, storage_options=opts)
    p = mp.get_context("spawn").Process(target=W.die_before_finalize, args=(uri, opts, 500))
    p.start()
    p.join(timeout=300)
    assert p.exitcode == 3
    assert lance.dataset(plain, storage_options=moto.storage_options).version == 1
    ds = lancejit.dataset(uri, storage_options=opts)
    assert ds.version == 2 and ds.count_rows() == 2 * ROWS
    assert lance.dataset(plain, storage_options=moto.storage_options).version == 2
    assert _items(moto.url, table)[-1]["path"]["S"].endswith(".manifest")


def test_dataset_without_items_falls_back_to_listing(moto, ddb_ds):
    """A dataset written through plain s3:// (no items) is read through the table by listing;
    the next s3+ddb:// commit continues its history, and the reference follows."""
    uri, opts, plain, table = ddb_ds
    lance.write_dataset(_batch(0), plain, storage_options=moto.storage_options)
    lancejit.write_dataset(_batch(10), plain, mode="append", storage_options=moto.storage_options)
    assert _items(moto.url, table) == []
    assert lancejit.dataset(uri, storage_options=opts).version == 2
    assert lancejit.write_dataset(_batch(20), uri, mode="append", storage_options=opts).version == 3
    assert [int(it["version"]["N"]) for it in _items(moto.url, table)] == [3]
    ref = lance.dataset(uri, storage_options=opts)
    assert ref.version == 3 and ref.count_rows() == 3 * ROWS


def test_update_of_a_missing_item_is_not_found(moto, ddb_ds):
    from lancejit.core.errors import NotFoundError

    uri, opts, _, _ = ddb_ds
    store, root = open_store(uri, opts)
    ext = xs.external_store_of(store)
    with pytest.raises(NotFoundError):
        run_sync(ext.put_if_exists(root, 7, root + "/_versions/x.manifest", 1))
    assert run_sync(ext.get(root, 7)) is None and run_sync(ext.get_latest(root)) is None
    run_sync(ext.put_if_not_exists(root, 7, root + "/_versions/x.manifest-1", 1))
    run_sync(ext.put_if_exists(root, 7, root + "/_versions/x.manifest", 5))
    assert run_sync(ext.get_latest(root)) == xs.ExternalVersion(7, root + "/_versions/x.manifest", 5)
