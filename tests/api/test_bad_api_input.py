"""Acceptance 4 of issue 14: bad input to the public API raises a LanceJitError subclass whose
message names the argument (never a bare ValueError/TypeError, never a silent answer)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.core.errors import LanceJitError

lance = pytest.importorskip("lance")


@pytest.fixture(scope="module")
def ds_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("api") / "ds")
    lance.write_dataset(pa.table({"a": np.arange(100), "s": [f"s{i}" for i in range(100)]}), path,
                        max_rows_per_file=40)
    lance.dataset(path).tags.create("t1", 1)
    return path


def _open(path, **kw):
    return lancejit.dataset(path, **kw)


CASES = [
    # (id, call(path), word the message must contain)
    ("version-huge", lambda p: _open(p, version=10**30), "version"),
    ("version-negative", lambda p: _open(p, version=-1), "version"),
    ("version-float", lambda p: _open(p, version=1.5), "version"),
    ("version-bool", lambda p: _open(p, version=True), "version"),
    ("version-list", lambda p: _open(p, version=[1]), "version"),
    ("version-missing", lambda p: _open(p, version=99), "version"),
    ("version-tag-missing", lambda p: _open(p, version="nope"), "tag"),
    ("version-tag-traversal", lambda p: _open(p, version="../../x"), "tag"),
    ("checkout-negative", lambda p: _open(p).checkout_version(-4), "version"),
    ("uri-none", lambda p: lancejit.dataset(None), "uri"),
    ("uri-int", lambda p: lancejit.dataset(123), "uri"),
    ("uri-empty", lambda p: lancejit.dataset(""), "uri"),
    ("uri-scheme", lambda p: lancejit.dataset("ftp://host/x"), "scheme"),
    ("options-not-dict", lambda p: _open(p, storage_options=["a"]), "storage_options"),
    ("options-unknown-key", lambda p: _open(p, storage_options={"no_such_option": "1"}), "no_such_option"),
    ("options-key-not-str", lambda p: _open(p, storage_options={1: "x"}), "storage option"),
    ("options-value-dict", lambda p: _open("s3://bkt/ds", storage_options={"aws_region": {"x": 1}}), "aws_region"),
    ("options-value-float", lambda p: _open(p, storage_options={"block_size": 1.5}), "block_size"),
    ("options-bad-int", lambda p: _open(p, storage_options={"io_parallelism": "many"}), "io_parallelism"),
    ("options-bad-bool", lambda p: _open("s3://bkt/ds", storage_options={"allow_http": "maybe"}), "allow_http"),
    ("take-2d", lambda p: _open(p).take(np.array([[0, 1], [2, 3]])), "indices"),
    ("take-2d-list", lambda p: _open(p).take([[0, 1], [2, 3]]), "indices"),
    ("take-float", lambda p: _open(p).take([0.5, 1.0]), "indices"),
    ("take-str", lambda p: _open(p).take(["a"]), "indices"),
    ("take-none", lambda p: _open(p).take(None), "indices"),
    ("take-negative", lambda p: _open(p).take([-1]), "-1"),
    ("take-out-of-range", lambda p: _open(p).take([10**12]), "1000000000000"),
    ("take-rows-2d", lambda p: _open(p).take_rows(np.zeros((2, 2), dtype=np.uint64)), "row id"),
    ("take-rows-float", lambda p: _open(p).take_rows([1.5]), "row id"),
    ("take-columns-int", lambda p: _open(p).take([0], columns=[3]), "column"),
    ("columns-int", lambda p: _open(p).to_table(columns=5), "columns"),
    ("columns-unknown", lambda p: _open(p).to_table(columns=["nope"]), "nope"),
    ("columns-item-int", lambda p: _open(p).to_table(columns=[1]), "column"),
    ("filter-int", lambda p: _open(p).to_table(filter=5), "filter"),
    ("filter-syntax", lambda p: _open(p).to_table(filter="a >>> 3"), "filter"),
    ("filter-unknown-column", lambda p: _open(p).to_table(filter="nope > 3"), "nope"),
    ("count-filter-list", lambda p: _open(p).count_rows(filter=["a > 1"]), "filter"),
    ("limit-negative", lambda p: _open(p).to_table(limit=-1), "limit"),
    ("limit-str", lambda p: _open(p).to_table(limit="10"), "limit"),
    ("limit-float", lambda p: _open(p).to_table(limit=1.5), "limit"),
    ("limit-bool", lambda p: _open(p).to_table(limit=True), "limit"),
    ("offset-negative", lambda p: _open(p).to_table(offset=-3), "offset"),
    ("offset-str", lambda p: _open(p).to_table(offset="3"), "offset"),
    ("batch-size-zero", lambda p: _open(p).to_table(batch_size=0), "batch_size"),
    ("batch-size-str", lambda p: _open(p).to_table(batch_size="x"), "batch_size"),
    ("batch-size-float", lambda p: list(_open(p).to_batches(batch_size=2.5)), "batch_size"),
    ("fragment-ids-str", lambda p: _open(p).to_table(fragment_ids=["a"]), "fragment_ids"),
    ("fragment-ids-int", lambda p: _open(p).to_table(fragment_ids=3), "fragment_ids"),
]


@pytest.mark.parametrize("call,word", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_lancejit_error(call, word, ds_path):
    with pytest.raises(LanceJitError) as info:
        call(ds_path)
    assert word.lower() in str(info.value).lower(), str(info.value)


def test_at_least_thirty_kinds():
    assert len(CASES) >= 30
