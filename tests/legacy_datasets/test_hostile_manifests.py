"""Acceptance 3 of issue 14: hostile manifest edits never make lancejit read outside the dataset.

Each edit is applied to a copy of a reference-written dataset (3 fragments, deletions) whose
parent directory also holds another dataset (``other/``, the "other tenant").  For every edit,
opening, ``count_rows``, ``to_table`` and ``take`` must give the reference's result or raise a
``LanceJitError``; and every path the local store is asked to read, size or list lies inside
the dataset root (checked by recording the store's calls).
"""

from __future__ import annotations

import json
import os
import sys
import uuid

import numpy as np
import pyarrow as pa
import pytest

import lancejit
from lancejit.core.errors import CorruptFileError, InvalidInputError, LanceJitError
from lancejit.io.local import LocalStore
from lancejit.pb import table_pb2
from lancejit.table.meta.paths import check_relative, confined_join, unsafe_reason

lance = pytest.importorskip("lance")
medit = sys.modules["tests_manifest_edit"]

_RECORDED = ("read_ranges", "read_tail", "read_all", "size", "exists", "list")


@pytest.fixture
def recorded_paths(monkeypatch):
    """Every path the local store is asked about (normalised), in call order."""
    seen: list[str] = []
    for name in _RECORDED:
        orig = getattr(LocalStore, name)

        def make(orig=orig):
            async def wrapper(self, path, *args, **kwargs):
                seen.append(os.path.normpath(path))
                return await orig(self, path, *args, **kwargs)
            return wrapper

        monkeypatch.setattr(LocalStore, name, make())
    return seen


@pytest.fixture(scope="module")
def other_tenant(tmp_path_factory):
    """A directory with ``ds_src`` (the dataset to edit) and ``other`` (another dataset)."""
    base = tmp_path_factory.mktemp("tenants")
    lance.write_dataset(pa.table({"a": np.arange(10**6, 10**6 + 50), "s": ["secret"] * 50,
                                  "f": np.zeros(50)}), str(base / "other"), data_storage_version="2.1")
    return base


def _outside(paths: list[str], base) -> list[str]:
    """Paths not inside one of the edited datasets: outside ``base`` (the tenants' directory,
    which holds only the datasets under test) or inside the other tenant's dataset.  (A read
    still in flight from the previous test's dataset is inside its own root.)"""
    base, other = str(base), str(base / "other")
    return [p for p in paths if not p.startswith(base + os.sep) or p == other or p.startswith(other + os.sep)]


def _other_file(base) -> str:
    return sorted(os.listdir(base / "other" / "data"))[0]


def _set_path(path: str):
    def fn(pb):
        pb.fragments[0].files[0].path = path
    return fn


def _edits(base):
    other = _other_file(base)
    abs_other = str(base / "other" / "data" / other)

    def frag0(**kw):
        def fn(pb):
            for k, v in kw.items():
                setattr(pb.fragments[0], k, v)
        return fn

    def dup_ids(pb):
        pb.fragments[1].id = pb.fragments[0].id

    def dup_deletion(pb):
        pb.fragments[2].deletion_file.CopyFrom(pb.fragments[0].deletion_file)

    def base_id(pb):
        pb.fragments[0].files[0].base_id = 7

    def deletion_base_id(pb):
        pb.fragments[0].deletion_file.base_id = 9

    def huge_size(pb):
        pb.fragments[0].files[0].file_size_bytes = 1 << 50

    def tiny_size(pb):
        pb.fragments[0].files[0].file_size_bytes = 3

    def bad_column(pb):
        del pb.fragments[0].files[0].column_indices[:]
        pb.fragments[0].files[0].column_indices.extend([2**31 - 1] * len(pb.fragments[0].files[0].fields))

    def bad_fields(pb):
        f = pb.fragments[0].files[0]
        del f.fields[:]
        f.fields.extend([-7] * len(f.column_indices))

    def txn(pb):
        pb.transaction_file = "../../other/_transactions/x.txn"

    def huge_deleted(pb):
        pb.fragments[0].deletion_file.num_deleted_rows = 1 << 63

    def small_max_id(pb):
        pb.max_fragment_id = 0

    def no_files(pb):
        del pb.fragments[1].files[:]

    return [
        ("data: ../../other/data/x", _set_path(f"../../other/data/{other}")),
        ("data: a/../../../other/data/x", _set_path(f"a/../../../other/data/{other}")),
        ("data: absolute path", _set_path(abs_other)),
        ("data: file:// URI", _set_path("file://" + abs_other)),
        ("data: s3:// other bucket", _set_path("s3://other-bucket/data/x.lance")),
        ("data: gs:// other bucket", _set_path("gs://other-bucket/x.lance")),
        ("data: backslash traversal", _set_path(f"..\\..\\other\\data\\{other}")),
        ("data: ~/ home", _set_path("~/x.lance")),
        ("data: empty path", _set_path("")),
        ("data: ./ prefix", _set_path(f"./{other}")),
        ("data: NUL byte", _set_path("x\x00.lance")),
        ("data: percent-encoded ..", _set_path(f"%2e%2e%2f%2e%2e%2fother%2fdata%2f{other}")),
        ("data: undeclared base id", base_id),
        ("deletion: undeclared base id", deletion_base_id),
        ("transaction: ../ path", txn),
        ("count: physical_rows 2^40", frag0(physical_rows=1 << 40)),
        ("count: physical_rows u64 max (-1)", frag0(physical_rows=(1 << 64) - 1)),
        ("count: num_deleted_rows 2^63", huge_deleted),
        ("count: file_size_bytes 2^50", huge_size),
        ("count: file_size_bytes 3", tiny_size),
        ("ids: two fragments with one id", dup_ids),
        ("ids: one deletion file in two fragments", dup_deletion),
        ("ids: max_fragment_id below ids", small_max_id),
        ("columns: column index 2^31-1", bad_column),
        ("columns: field ids -7", bad_fields),
        ("fragment without data files", no_files),
    ]




#: Edits where lancejit recounts from the deletion file instead of trusting the manifest.
_RECOUNTED = {"count: num_deleted_rows 2^63"}


def _ops(mod, path, version=None):
    out = {}
    for name, fn in (
        ("open", lambda ds: ds.version),
        ("count_rows", lambda ds: ds.count_rows()),
        ("to_table", lambda ds: ds.to_table()),
        ("take", lambda ds: ds.take([0, 1, 5])),
    ):
        try:
            ds = mod.dataset(path, version=version) if version is not None else mod.dataset(path)
            out[name] = ("ok", fn(ds))
        except LanceJitError as exc:
            out[name] = ("lancejit-error", exc)
        except Exception as exc:
            out[name] = ("error", exc)
    return out


def _judge(ref: dict, mine: dict) -> str:
    """'error' (lancejit refused everything the reference refused, with LanceJitError), or
    'same' when every answered op equals the reference's; raises AssertionError otherwise."""
    words = set()
    for op, (kind, value) in mine.items():
        assert kind != "error", f"{op}: not a LanceJitError: {type(value).__name__}: {value}"
        rkind, rvalue = ref[op]
        if kind == "lancejit-error":
            words.add("refused")
            continue
        assert rkind == "ok", f"{op}: lancejit answered {value!r:.80} where the reference refused: {rvalue}"
        if isinstance(value, pa.Table):
            assert value.equals(rvalue), op
        else:
            assert value == rvalue, (op, value, rvalue)
        words.add("same")
    return "/".join(sorted(words))


def _edit_ids():
    return [
        "data-dotdot", "data-nested-dotdot", "data-absolute", "data-file-uri", "data-s3-uri",
        "data-gs-uri", "data-backslash", "data-home", "data-empty", "data-dot", "data-nul",
        "data-percent", "data-base-id", "deletion-base-id", "transaction-dotdot", "phys-2^40",
        "phys-u64max", "deleted-2^63", "size-2^50", "size-3", "dup-frag-id", "dup-deletion",
        "max-frag-id", "column-index", "field-ids", "no-files",
    ]


@pytest.mark.parametrize("index", range(len(_edit_ids())), ids=_edit_ids())
def test_hostile_edit(index, other_tenant, history_src, tmp_path, recorded_paths):
    name, fn = _edits(other_tenant)[index]
    root = medit.copy_dataset(history_src["2.1"], str(other_tenant / f"e{uuid.uuid4().hex[:8]}"))
    medit.edit_latest(root, fn)
    # where the reference answers from a statistic it cannot vouch for (a deleted count above
    # the fragment's rows wraps around in u64), lancejit recounts: the unedited dataset's rows
    ref = _ops(lance, history_src["2.1"] if name in _RECOUNTED else root)
    recorded_paths.clear()
    mine = _ops(lancejit, root)
    outcome = _judge(ref, mine)
    outside = _outside(recorded_paths, other_tenant)
    assert not outside, f"{name}: read outside the dataset root: {outside}"
    print(f"HOSTILE | {name} | lancejit: {outcome} | reference: "
          f"{'/'.join(sorted({'ok' if k == 'ok' else 'refused' for k, _ in ref.values()}))}")


def test_hostile_index_section(other_tenant, history_src, recorded_paths):
    """An index entry with a traversal name, a short uuid, a garbage fragment bitmap and an
    undeclared base id: ignored by reads (indices are used only when asked for)."""
    root = medit.copy_dataset(history_src["2.1"], str(other_tenant / f"i{uuid.uuid4().hex[:8]}"))
    sec = table_pb2.IndexSection()
    idx = sec.indices.add()
    idx.uuid.uuid = b"../../other"
    idx.name = "../../other/_indices/x"
    idx.fields.append(0)
    idx.dataset_version = 1
    idx.fragment_bitmap = b"\xff\x00garbage"
    idx.base_id = 42
    medit.add_index_section(medit.manifest_paths(root)[-1], sec.SerializeToString())
    recorded_paths.clear()
    mine = _ops(lancejit, root)
    # the reference refuses to open it (it decodes the garbage bitmap eagerly); lancejit reads
    # the data as the unedited dataset holds it, the index entry unused
    ref = _ops(lance, history_src["2.1"])
    assert _judge(ref, mine) == "same"
    assert not _outside(recorded_paths, other_tenant)


def test_hostile_tags(other_tenant, history_src, recorded_paths):
    root = medit.copy_dataset(history_src["2.1"], str(other_tenant / f"t{uuid.uuid4().hex[:8]}"))
    os.makedirs(os.path.join(root, "_refs", "tags"), exist_ok=True)
    for name, body in (("huge", {"version": 10**30}), ("neg", {"version": -3}),
                       ("str", {"version": "../../other"}), ("nan", {"version": 1.5})):
        with open(os.path.join(root, "_refs", "tags", f"{name}.json"), "w") as f:
            json.dump(body, f)
        with pytest.raises(LanceJitError):
            lancejit.dataset(root, version=name)
    for bad in ("../../other/_refs/tags/x", "/etc/passwd", "a/b", "..", ""):
        with pytest.raises(LanceJitError):
            lancejit.dataset(root, version=bad)
    assert not _outside(recorded_paths, other_tenant)


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/abs", "s3://b/k", "gs://b/k", "file:///x",
                                  "C:/x", "a\\..\\b", "", ".", "a//b", "~/x", "x\x00", "a/./b"])
def test_unsafe_paths_refused(path):
    assert unsafe_reason(path) is not None
    with pytest.raises(CorruptFileError):
        check_relative(path, "data file path", "manifest m")
    with pytest.raises(CorruptFileError):
        confined_join("/root", "_transactions", path, what="transaction file")


@pytest.mark.parametrize("path", ["x.lance", "0101-uuid.lance", "sub/x.lance", "a..b.lance", "%2e%2e"])
def test_safe_paths_kept(path):
    assert check_relative(path, "data file path") == path
    assert confined_join("/root", "data", path, what="data file path") == f"/root/data/{path}"


def test_store_keys_with_dot_segments_refused():
    from lancejit.io.s3_store import S3Store

    store = S3Store("bkt", endpoint="http://127.0.0.1:1", key="x", secret="x")
    for key in ("a/../b", "../x", "a/./b", ".."):
        with pytest.raises(InvalidInputError):
            store._key(key)
    assert store._key("/a/b/") == "a/b"


@pytest.mark.parametrize("bad", ["../../other/_rowids/x.bin", "/etc/hosts", "s3://other/x"])
def test_hostile_external_row_ids(bad, other_tenant, history_src, recorded_paths):
    """A fragment's row-id sequence moved to an "external file" outside the dataset: refused
    (stable row ids are read for take_rows and with_row_id scans)."""
    root = medit.copy_dataset(history_src["stable"], str(other_tenant / f"r{uuid.uuid4().hex[:8]}"))

    def fn(pb):
        f = pb.fragments[0]
        size = len(f.inline_row_ids)
        f.external_row_ids.path = bad
        f.external_row_ids.offset = 0
        f.external_row_ids.size = size

    medit.edit_latest(root, fn)
    recorded_paths.clear()
    with pytest.raises(LanceJitError):
        lancejit.dataset(root).to_table(with_row_id=True)
    with pytest.raises(LanceJitError):
        lancejit.dataset(root).take_rows([0, 1])
    outside = _outside(recorded_paths, other_tenant)
    assert not outside, outside
