"""Hostile sizes in manifests, deletion files and row-id sequences (issue 21 item 3): every
integer of a manifest's header, its first fragment and data file, deletion bitmaps naming
2**30..2**32 rows of a small fragment, Arrow deletion files claiming 2**31 entries, row-id
sequences claiming 2**40 ids.  Each edited dataset is refused (CorruptFileError naming the
edited file) or answered, under 100 MiB of added memory (see ``tests/hostile.py``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap

import tests_hostile as H
from lancejit.pb import rowids_pb2, table_pb2


def _manifest_edit():
    name = "tests_manifest_edit"
    if name not in sys.modules:
        path = Path(__file__).parents[1] / "legacy_datasets" / "manifest_edit.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


ME = _manifest_edit()

ROWS = 24_000  # two fragments of 12,000 rows


def _table() -> pa.Table:
    ids = np.arange(ROWS, dtype=np.int64)
    return pa.table({"id": ids, "s": pa.array([f"v{i % 101}" for i in range(ROWS)])})


def _pylance(uri: str, **kw) -> None:
    import lance

    lance.write_dataset(_table(), uri, max_rows_per_file=ROWS // 2, **kw)
    ds = lance.dataset(uri)
    ds.delete("id < 12000 AND id % 7 = 0")  # 1,715 rows of fragment 0: an Arrow file
    ds.delete("id >= 12000 AND id % 2 = 0")  # 6,000 rows of fragment 1: a roaring bitmap


def _lancejit(uri: str) -> None:
    import lancejit

    lancejit.write_dataset(_table(), uri, max_rows_per_file=ROWS // 2)
    ds = lancejit.dataset(uri)
    ds.delete("id < 12000 AND id % 7 = 0")
    ds.delete("id >= 12000 AND id % 2 = 0")


MAKERS = {
    "pylance": lambda uri: _pylance(uri),
    "pylance-stable": lambda uri: _pylance(uri, enable_stable_row_ids=True),
    "pylance-legacy": lambda uri: _pylance(uri, data_storage_version="legacy"),
    "lancejit": _lancejit,
}


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile_ds")
    out = {}
    for name, make in MAKERS.items():
        uri = str(tmp / name)
        make(uri)
        out[name] = uri
    return out


def _copy(src: str, dst: Path) -> str:
    shutil.copytree(src, dst)
    return str(dst)


def _latest(uri: str) -> str:
    return ME.manifest_paths(uri)[-1]


def _deletion_path(uri: str, frag: table_pb2.DataFragment) -> str:
    d = frag.deletion_file
    suffix = "arrow" if d.file_type == 0 else "bin"
    return os.path.join(uri, "_deletions", f"{frag.id}-{d.read_version}-{d.id}.{suffix}")


def _first_fragment_path(path: str) -> bool:
    """Integer fields of the header, of fragment 0 and of its first data file only."""
    import re

    return not re.search(r"fragments\[[1-9]", path) and not re.search(r"files\[[1-9]", path)


#: Manifest fields that name things (files, versions) rather than count them: a huge value
#: names a file that is not there.
NAMING_FIELDS = {"id", "read_version", "base_id", "version", "max_fragment_id"}


def _allowed(path: str) -> tuple[str, ...]:
    """The errors a refusal of an edit of manifest field ``path`` may raise."""
    leaf = path.rsplit(".", 1)[-1].split("[")[0]
    if leaf in NAMING_FIELDS:
        return ("CorruptFileError", "NotFoundError")
    if leaf.endswith("feature_flags"):  # unknown flags: a newer format lancejit does not read
        return ("CorruptFileError", "NotSupportedError")
    return ("CorruptFileError",)


def manifest_cases(src: str, tmp: Path, key: str):
    pb = ME.read_pb(_latest(src))
    seen = set()
    for path, _, fd in H.int_fields(pb):
        if not _first_fragment_path(path):
            continue
        for v in H.huge_values(fd):
            if (path, v) in seen:
                continue
            seen.add((path, v))
            name = f"{key} manifest.{path}={v}"
            uri = _copy(src, tmp / f"m{len(seen)}")
            manifest = _latest(uri)

            def edit(m, path=path, v=v):
                target = {q: (msg, d) for q, msg, d in H.int_fields(m)}[path]
                H.set_int(target[0], target[1], v)

            ME.edit(manifest, edit)
            yield H.Case(name, "dataset", uri, (os.path.basename(manifest), os.path.basename(uri)),
                         allowed=_allowed(path))


def _bitmap(lo: int, hi: int) -> bytes:
    bm = BitMap()
    bm.add_range(lo, hi)
    bm.run_optimize()
    return bm.serialize()


def deletion_cases(src: str, tmp: Path, key: str):
    pb = ME.read_pb(_latest(src))
    for fi, frag in enumerate(pb.fragments):
        if not frag.HasField("deletion_file"):
            continue
        rel = _deletion_path(src, frag)
        data = open(rel, "rb").read()
        variants = []
        if frag.deletion_file.file_type == 1:
            variants += [(f"bitmap[0,2**{k})", _bitmap(0, 2**k)) for k in (30, 32)]
            variants += [("bitmap{2**31}", BitMap([1, 2**31]).serialize())]
        else:
            n = struct.pack("<q", frag.deletion_file.num_deleted_rows)
            for k in (31, 40):
                variants.append((f"arrow-length=2**{k}", data.replace(n, struct.pack("<q", 2**k))))
            variants.append(("arrow->bitmap[0,2**30)", None))
        for label, new in variants:
            uri = _copy(src, tmp / f"d{fi}-{label.replace('*', '').replace('[', '').replace(')', '').replace(',', '-')}")
            if new is None:  # the manifest now says bitmap; the file is a 2**30-row bitmap
                def to_bitmap(m, fi=fi):
                    m.fragments[fi].deletion_file.file_type = 1
                ME.edit(_latest(uri), to_bitmap)
                new = _bitmap(0, 2**30)
                target = _deletion_path(uri, ME.read_pb(_latest(uri)).fragments[fi])
            else:
                target = _deletion_path(uri, frag)
            with open(target, "wb") as f:
                f.write(new)
            yield H.Case(f"{key} fragment {fi} deletion {label}", "dataset", uri,
                         (os.path.basename(target), os.path.basename(uri)))


def rowid_cases(src: str, tmp: Path, key: str):
    pb = ME.read_pb(_latest(src))
    frag = pb.fragments[0]
    if frag.WhichOneof("row_id_sequence") != "inline_row_ids":
        return
    seq = rowids_pb2.RowIdSequence()
    seq.ParseFromString(frag.inline_row_ids)
    seen = 0
    for path, _, fd in list(H.int_fields(seq)):
        for v in H.huge_values(fd):
            seen += 1
            uri = _copy(src, tmp / f"r{seen}")

            def edit(m, path=path, v=v):
                s = rowids_pb2.RowIdSequence()
                s.ParseFromString(m.fragments[0].inline_row_ids)
                target = {q: (msg, d) for q, msg, d in H.int_fields(s)}[path]
                H.set_int(target[0], target[1], v)
                m.fragments[0].inline_row_ids = s.SerializeToString()

            ME.edit(_latest(uri), edit)
            yield H.Case(f"{key} row ids.{path}={v}", "dataset", uri, (os.path.basename(_latest(uri)), os.path.basename(uri)))
    # a whole fragment of row ids claimed by one range
    for v in H.HUGE:
        seen += 1
        uri = _copy(src, tmp / f"r{seen}")

        def edit(m, v=v):
            s = rowids_pb2.RowIdSequence()
            s.segments.add().range.end = v
            m.fragments[0].inline_row_ids = s.SerializeToString()

        ME.edit(_latest(uri), edit)
        yield H.Case(f"{key} row ids one range [0, {v})", "dataset", uri, (os.path.basename(_latest(uri)), os.path.basename(uri)))


@pytest.mark.parametrize("gen", ["manifest", "deletions", "rowids"])
@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_hostile_datasets(originals, tmp_path, maker, gen):
    fn = {"manifest": manifest_cases, "deletions": deletion_cases, "rowids": rowid_cases}[gen]
    src = originals[maker]
    cases = [H.Case("warm", "dataset", src, warm=True)] + list(fn(src, tmp_path, maker))
    if len(cases) == 1:
        pytest.skip(f"{maker} has no {gen} to edit")
    outcomes = H.run_cases(cases)
    H.report(outcomes)
    assert len(outcomes) == len(cases) - 1
    bad = H.failures(outcomes)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} of {len(outcomes)})"
