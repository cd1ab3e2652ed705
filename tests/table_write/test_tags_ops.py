"""Tags in pylance 14's file format; operations <-> Transaction protobufs; committer argument errors."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
import tw_helpers as H

import lance
from lancejit.core.errors import (
    AlreadyExistsError,
    InvalidInputError,
    NotFoundError,
    NotSupportedError,
)
from lancejit.table.commit import (
    Append,
    Delete,
    Merge,
    Overwrite,
    Project,
    ReserveFragments,
    Restore,
    Transaction,
    Update,
    UpdateConfig,
    commit,
    create_tag,
    delete_tag,
    list_tags,
    load_manifest,
    new_fragment,
    schema_fields,
    update_tag,
)
from lancejit.table.commit.manifest_writer import parse_manifest_file, serialize_manifest


async def _two_versions(local_ds):
    store, root, uri = local_ds
    t = H.make_table(0, 10)
    fields, meta = schema_fields(t.schema)
    df = await H.write_data_file(store, root, t)
    await commit(store, root, Overwrite((new_fragment([df], 10),), fields, meta), 0)
    await H.append_rows(store, root, H.make_table(10, 3))
    return store, root, uri


async def test_tag_files_like_pylance(local_ds):
    store, root, uri = await _two_versions(local_ds)
    await create_tag(store, root, "mine", 1)
    lance.dataset(uri).tags.create("theirs", 1)
    read = lambda n: open(os.path.join(uri, "_refs", "tags", f"{n}.json")).read()  # noqa: E731
    mine, theirs = json.loads(read("mine")), json.loads(read("theirs"))
    assert list(mine) == list(theirs)
    assert {k: mine[k] for k in ("branch", "version", "manifestSize", "metadata")} == \
        {k: theirs[k] for k in ("branch", "version", "manifestSize", "metadata")}
    # same layout apart from the timestamps
    strip = lambda s: [ln for ln in s.splitlines() if "At\"" not in ln]  # noqa: E731
    assert strip(read("mine")) == strip(read("theirs"))
    with pytest.raises(AlreadyExistsError):
        await create_tag(store, root, "mine", 2)
    with pytest.raises(NotFoundError):
        await create_tag(store, root, "nope", 9)
    with pytest.raises(InvalidInputError):
        await create_tag(store, root, "a/b", 1)
    moved = await update_tag(store, root, "mine", 2)
    assert moved.version == 2 and moved.created_at == mine["createdAt"]
    assert lance.dataset(uri).tags.list()["mine"]["version"] == 2
    await delete_tag(store, root, "theirs")
    with pytest.raises(NotFoundError):
        await delete_tag(store, root, "theirs")
    assert [t.name for t in await list_tags(store, root)] == ["mine"]


def H_df():
    from lancejit.table.commit import data_file

    return data_file("x.lance", [0, 1], [0, 1], file_size_bytes=123)


@pytest.mark.parametrize("op", [
    Append((new_fragment([H_df()], 5),)),
    Overwrite((new_fragment([H_df()], 5),), schema_fields(pa.schema([("a", pa.int64())]))[0],
              {"k": b"v"}, {"c": "1"}),
    Delete((new_fragment([H_df()], 5),), (3, 4), "a > 1"),
    Update((1,), (new_fragment([H_df()], 5),), (new_fragment([H_df()], 2),), (0,), 1, (2,)),
    Merge((new_fragment([H_df()], 5),), schema_fields(pa.schema([("a", pa.int64())]))[0], {}),
    Project(schema_fields(pa.schema([("a", pa.int64())]))[0]),
    Restore(3),
    ReserveFragments(4),
    UpdateConfig({"a": "b"}, ("c",)),
], ids=lambda op: op.name)
def test_operation_roundtrip(op):
    txn = Transaction(7, op, tag="t", transaction_properties={"p": "q"})
    back = Transaction.parse(txn.serialize())
    assert type(back.operation) is type(op)
    assert back.to_pb() == txn.to_pb()
    assert back.read_version == 7 and back.uuid == txn.uuid and back.file_name == f"7-{txn.uuid}.txn"


async def test_commit_argument_errors(local_ds):
    store, root, uri = await _two_versions(local_ds)
    with pytest.raises(InvalidInputError):
        await commit(store, root, Append(()), 5)  # read version from the future
    t = H.make_table(0, 1)
    fields, meta = schema_fields(t.schema)
    with pytest.raises(AlreadyExistsError):
        await commit(store, root, Overwrite((), fields, meta), 0, create_only=True)
    with pytest.raises(NotSupportedError):
        await commit(store, root, Append(()), 2, enable_stable_row_ids=True)
    with pytest.raises(NotFoundError):
        await commit(store, root, Restore(42), 2)
    # a dataset needing writer features we do not know is refused
    lm = await load_manifest(store, root)
    m = lm.manifest
    m.writer_feature_flags |= 128
    m.version = 3
    from lancejit.table.meta.naming import NamingScheme, manifest_name

    data = serialize_manifest(m, transaction=lm.transaction, index_section=None)
    await store.put(os.path.join(root, "_versions", manifest_name(3, NamingScheme.V2)), data)
    with pytest.raises(NotSupportedError):
        await H.append_rows(store, root, H.make_table(50, 1))
    assert parse_manifest_file(data, "x").manifest.writer_feature_flags == 128


async def test_transaction_files_disabled(local_ds):
    """A dataset whose writer flags say "no transaction files" (32) keeps getting none."""
    store, root, uri = await _two_versions(local_ds)
    lm = await load_manifest(store, root)
    m = lm.manifest
    m.writer_feature_flags |= 32
    m.version = 3
    from lancejit.table.meta.naming import NamingScheme, manifest_name

    await store.put(os.path.join(root, "_versions", manifest_name(3, NamingScheme.V2)),
                    serialize_manifest(m, transaction=lm.transaction, index_section=None))
    before = set(os.listdir(os.path.join(uri, "_transactions")))
    assert await H.append_rows(store, root, H.make_table(50, 2)) == 4
    assert set(os.listdir(os.path.join(uri, "_transactions"))) == before
    m4 = (await load_manifest(store, root)).manifest
    assert m4.transaction_file == "" and m4.writer_feature_flags & 32
    assert (await load_manifest(store, root)).transaction is not None  # still inline
    assert lance.dataset(uri).count_rows() == 15
