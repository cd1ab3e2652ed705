"""Hostile sizes in 2.1/2.2 files (issue 21 item 3): every integer of every page layout, page
lengths, buffer sizes and words inside page buffers set to counts up to 2**40, in files written
by pylance and by lancejit's writer.  Each edited file is refused (CorruptFileError naming it)
or answered, under 100 MiB of added memory (see ``tests/hostile.py``)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import tests_hostile as H
import v21data as D

N = 3000
WIDE_N = 300


def corpus_tables(seed: int = 3) -> dict[str, pa.Table]:
    """One column per layout and compression: bit-packed, plain, float, FSST, dictionary, RLE,
    constant, all-null, lists, structs, lists of strings (``narrow``, N rows); full-zip
    binaries, vectors and blobs (``wide``, fewer rows)."""
    rng = np.random.default_rng(seed)
    narrow = pa.table({
        "bp": pa.array(rng.integers(0, 100, N), pa.int64()),
        "plain": D.ints(rng, N, pa.int64()),
        "f32": D.floats(rng, N, pa.float32()),
        "fsst": pa.array([f"prefix-{i * 7919}-common-suffix-{i % 7}" for i in range(N)]),
        "dict": D.strings(rng, N, card=5),
        "rle": pa.array(np.repeat(np.arange(N // 100, dtype=np.int32), 100)),
        "const": pa.array(np.full(N, 7, np.int32)),
        "nulls": pa.nulls(N, pa.int64()),
        "lst": D.lists(rng, N, D.ints(rng, 5 * N, pa.int32())),
        "st": D.structs(rng, N, {"x": D.ints(rng, N), "y": D.bools(rng, N)}),
        "ls": D.lists(rng, N, D.strings(rng, 5 * N)),
    })
    n = WIDE_N
    big = [bytes(rng.integers(0, 256, size=int(rng.integers(300, 400)), dtype=np.uint8)) for _ in range(n)]
    wide = pa.table(
        [pa.array(big, pa.large_binary()), D.vectors(rng, n, 64), pa.array(big, pa.large_binary())],
        schema=pa.schema([pa.field("big", pa.large_binary()), pa.field("vec", pa.list_(pa.float32(), 64)),
                          pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})]))
    return {"narrow": narrow, "wide": wide}


def write_pylance(path: Path, table: pa.Table, version: str) -> Path:
    from lance.file import LanceFileWriter

    with LanceFileWriter(str(path), table.schema, version=version) as w:
        step = table.num_rows // 3
        for a in range(0, table.num_rows, step):
            # take() gives offset-0 arrays (pylance mis-handles sliced struct validity)
            w.write_batch(table.take(pa.array(np.arange(a, min(a + step, table.num_rows)))))
    return path


def write_lancejit(path: Path, table: pa.Table, version: str) -> Path:
    import lancejit

    with lancejit.LanceFileWriter(str(path), table.schema, version=version) as w:
        w.write_batch(table)
    return path


WRITERS = {"pylance": write_pylance, "lancejit": write_lancejit}


def _first_pages(f: H.V2File):
    for c, cm in enumerate(f.columns):
        if len(cm.pages):
            yield c, 0


def layout_cases(f: H.V2File):
    """(name, edited bytes): every integer field of each column's first page layout."""
    for c, p in _first_pages(f):
        url, enc = f.page_encoding(c, p)
        seen = set()
        for path, msg, fd in list(H.int_fields(enc)):
            for v in H.huge_values(fd):
                if (path, v) in seen:
                    continue
                seen.add((path, v))
                g = H.V2File.parse(f.data)
                url2, enc2 = g.page_encoding(c, p)
                target = dict((q, (m, d)) for q, m, d in H.int_fields(enc2))[path]
                H.set_int(target[0], target[1], v)
                g.set_page_encoding(c, p, url2, enc2)
                yield f"c{c}.{path}={v}", g.build()


def page_meta_cases(f: H.V2File):
    """Page lengths, buffer offsets and sizes; the descriptor's row count (alone and with
    every column's pages made to agree)."""
    for c, p in _first_pages(f):
        page = f.columns[c].pages[p]
        for v in H.HUGE:
            g = H.V2File.parse(f.data)
            g.columns[c].pages[p].length = v
            yield f"c{c}.length={v}", g.build()
            for b in range(len(page.buffer_sizes)):
                for fieldname in ("buffer_sizes", "buffer_offsets"):
                    g = H.V2File.parse(f.data)
                    getattr(g.columns[c].pages[p], fieldname)[b] = v
                    yield f"c{c}.{fieldname}[{b}]={v}", g.build()
    for v in H.HUGE:
        g = H.V2File.parse(f.data)
        d = g.descriptor()
        d.length = v
        g.set_descriptor(d)
        yield f"descriptor.length={v}", g.build()


def claim_cases(f: H.V2File):
    """A file that claims more rows than it holds, consistently: every column's first page and
    the descriptor claim ``v - held`` more rows, and every count in the page layouts equal to
    the page's row count says the same (all-null/constant pages hold nothing per row, so
    such a file can be valid: reads must allocate for the rows asked)."""
    held = f.descriptor().length
    for v in H.HUGE:
        g = H.V2File.parse(f.data)
        for c, p in _first_pages(g):
            page = g.columns[c].pages[p]
            old = page.length
            page.length = old + v - held
            url, enc = g.page_encoding(c, p)
            for _, msg, fd in H.int_fields(enc):
                if not fd.is_repeated and getattr(msg, fd.name) == old:
                    try:
                        setattr(msg, fd.name, page.length)
                    except ValueError:  # a 32-bit count: as large as it goes
                        setattr(msg, fd.name, 2**32 - 1)
            g.set_page_encoding(c, p, url, enc)
        d = g.descriptor()
        d.length = v
        g.set_descriptor(d)
        yield f"claims={v}", g.build()


WORDS = [("<H", 0, 0xFFFF), ("<H", 2, 0xFFFF), ("<I", 0, 0xFFFFFFF0), ("<I", 4, 0xFFFFFFF0),
         ("<I", 8, 0xFFFFFFF0), ("<Q", 0, 2**40), ("<Q", 8, 2**40)]


def buffer_word_cases(f: H.V2File):
    """Counts inside page buffers: words at the start of each buffer of each first page."""
    for c, p in _first_pages(f):
        page = f.columns[c].pages[p]
        for b, (off, size) in enumerate(zip(page.buffer_offsets, page.buffer_sizes)):
            for fmt, at, v in WORDS:
                if at + struct.calcsize(fmt) > size:
                    continue
                data = bytearray(f.data)
                struct.pack_into(fmt, data, off + at, v)
                yield f"c{c}.buf{b}@{at}{fmt}={v:#x}", bytes(data)


def build_cases(tmp: Path, key: str, f: H.V2File, gens) -> list[H.Case]:
    cases = []
    for gen in gens:
        for name, data in gen(f):
            uri = H.write_case(tmp, f"{key}-{name}", data)
            cases.append(H.Case(f"{key} {name}", "file", uri, (Path(uri).name,)))
    return cases


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile21")
    out = {}
    for name, table in corpus_tables().items():
        for writer, fn in WRITERS.items():
            for version in ("2.1", "2.2"):
                out[(name, writer, version)] = fn(tmp / f"{name}_{writer}_{version}.lance", table, version)
    return out


@pytest.fixture(scope="module")
def single_columns(tmp_path_factory):
    """One file per field of the corpora (all its columns), for claims that every page of the
    file must agree with."""
    tmp = tmp_path_factory.mktemp("hostile21cols")
    out = []
    for name, table in corpus_tables().items():
        for field in table.schema.names:
            one = table.select([field])
            for writer, fn in WRITERS.items():
                for version in ("2.1", "2.2"):
                    out.append(((field, writer, version), fn(tmp / f"{field}_{writer}_{version}.lance", one, version)))
    return out


def test_hostile_claims_v21(single_columns, tmp_path):
    """Files of one field claiming 2**31..2**40 rows: reading 5 rows of an all-null or
    constant page answers them without allocating for the page; other layouts refuse."""
    cases = []
    for (field, writer, version), src in single_columns:
        f = H.V2File.parse(src.read_bytes())
        key = f"{field}-{writer}-{version}"
        cases.append(H.Case(f"warm {key}", "file", str(src), warm=True))
        cases += build_cases(tmp_path, key, f, [claim_cases])
    outcomes = H.run_cases(cases)
    H.report(outcomes)
    bad = H.failures(outcomes)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} of {len(outcomes)})"
    answered = {o.name for o in outcomes if o.status == "answered"}
    assert any(n.startswith("nulls-") for n in answered), sorted(answered)


@pytest.mark.parametrize("gens", ["layouts", "pages", "words"])
@pytest.mark.parametrize("corpus", ["narrow", "wide"])
@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_hostile_sizes_v21(originals, tmp_path, corpus, writer, version, gens):
    gen = {"layouts": [layout_cases], "pages": [page_meta_cases], "words": [buffer_word_cases]}[gens]
    src = originals[(corpus, writer, version)]
    f = H.V2File.parse(src.read_bytes())
    cases = [H.Case("warm", "file", str(src), warm=True)]
    cases += build_cases(tmp_path, f"{corpus}-{writer}-{version}", f, gen)
    outcomes = H.run_cases(cases)
    H.report(outcomes)
    assert len(outcomes) == len(cases) - 1
    bad = H.failures(outcomes)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} of {len(outcomes)})"
