"""Hostile sizes in the metadata of 2.x files (issue 21 item 3): the footer's counts and
positions, the column-metadata and global-buffer offset tables, every integer of the file
descriptor (schema, row count) and of a column's metadata, set to values up to 2**40 and the
fields' maxima, in files by pylance and by lancejit.  Each edited file is refused
(CorruptFileError naming it) or answered under 100 MiB of added memory (``tests/hostile.py``)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import tests_hostile as H

FOOTER = [("<Q", 0, "column_meta_start"), ("<Q", 8, "column_meta_offsets"), ("<Q", 16, "global_buffer_offsets"),
          ("<I", 24, "num_global_buffers"), ("<I", 28, "num_columns")]


def footer_cases(f: H.V2File):
    n = len(f.data)
    for fmt, at, name in FOOTER:
        values = [2**32 - 1, 2**31] if fmt == "<I" else [2**40, 2**63, 2**64 - 1]
        for v in values:
            data = bytearray(f.data)
            struct.pack_into(fmt, data, n - 40 + at, v)
            yield f"footer.{name}={v}", bytes(data)
    cm_start, cmo, gbo, n_gb, n_col = struct.unpack_from("<QQQII", f.data, n - 40)
    for table, count, name in ((cmo, n_col, "column_meta"), (gbo, n_gb, "global_buffer")):
        for i in sorted({0, count - 1}):
            for delta, what in ((0, "position"), (8, "size")):
                for v in (2**31, 2**40, 2**64 - 1):
                    data = bytearray(f.data)
                    struct.pack_into("<Q", data, table + 16 * i + delta, v)
                    yield f"{name}[{i}].{what}={v}", bytes(data)


def descriptor_cases(f: H.V2File):
    seen = set()
    for path, _, fd in list(H.int_fields(f.descriptor())):
        for v in H.huge_values(fd):
            if (path, v) in seen:
                continue
            seen.add((path, v))
            g = H.V2File.parse(f.data)
            d = g.descriptor()
            target = {q: (m, x) for q, m, x in H.int_fields(d)}[path]
            H.set_int(target[0], target[1], v)
            g.set_descriptor(d)
            yield f"descriptor.{path}={v}", g.build()


def column_meta_cases(f: H.V2File):
    for c in sorted({0, len(f.columns) - 1}):
        seen = set()
        for path, _, fd in list(H.int_fields(f.columns[c])):
            for v in H.huge_values(fd):
                if (path, v) in seen:
                    continue
                seen.add((path, v))
                g = H.V2File.parse(f.data)
                target = {q: (m, x) for q, m, x in H.int_fields(g.columns[c])}[path]
                H.set_int(target[0], target[1], v)
                yield f"column{c}.{path}={v}", g.build()


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile_meta")
    out = {}
    for version in ("2.0", "2.1", "2.2"):
        table = H.corpus_tables(struct_nulls=version != "2.0")["narrow"]
        for writer, fn in H.WRITERS.items():
            out[(writer, version)] = fn(tmp / f"{writer}_{version}.lance", table, version)
    return out


GENS = {"footer": footer_cases, "descriptor": descriptor_cases, "columns": column_meta_cases}


@pytest.mark.parametrize("gen", sorted(GENS))
@pytest.mark.parametrize("writer", sorted(H.WRITERS))
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_hostile_metadata(originals, tmp_path, version, writer, gen):
    src = originals[(writer, version)]
    f = H.V2File.parse(src.read_bytes())
    cases = [H.Case("warm", "file", str(src), warm=True)]
    for name, data in GENS[gen](f):
        uri = H.write_case(tmp_path, f"{writer}-{version}-{name}", data)
        cases.append(H.Case(f"{writer}-{version} {name}", "file", uri, (Path(uri).name,)))
    outcomes = H.run_cases(cases)
    H.report(outcomes)
    assert len(outcomes) == len(cases) - 1
    bad = H.failures(outcomes)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} of {len(outcomes)})"
