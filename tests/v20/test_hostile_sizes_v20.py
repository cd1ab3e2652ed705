"""Hostile sizes in 2.0 files (issue 21 item 3): every integer of each column's first page
encoding and column encoding, page lengths, page and column buffer offsets/sizes, the
descriptor's row count, words at the start of page buffers and consistent claims of 2**31..2**40
rows, in files written by pylance and by lancejit.  Each edited file is refused
(CorruptFileError naming it) or answered under 100 MiB of added memory (``tests/hostile.py``)."""

from __future__ import annotations

import pytest

import tests_hostile as H


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile20")
    out = {}
    for name, table in H.corpus_tables(struct_nulls=False).items():
        for writer, fn in H.WRITERS.items():
            out[(name, writer)] = fn(tmp / f"{name}_{writer}.lance", table, "2.0")
    return out


def column_encoding_cases(f: H.V2File):
    """Every integer of each column's ColumnEncoding (2.0 column-level descriptions)."""
    for c, cm in enumerate(f.columns):
        if not cm.encoding.HasField("direct"):
            continue
        url, enc = H.unwrap(cm.encoding.direct.encoding)
        for path, _, fd in list(H.int_fields(enc)):
            for v in H.huge_values(fd):
                g = H.V2File.parse(f.data)
                url2, enc2 = H.unwrap(g.columns[c].encoding.direct.encoding)
                target = {q: (m, d) for q, m, d in H.int_fields(enc2)}[path]
                H.set_int(target[0], target[1], v)
                g.columns[c].encoding.direct.encoding = H.wrap(url2, enc2)
                yield f"c{c}.column.{path}={v}", g.build()


GENS = {"layouts": [H.layout_cases, column_encoding_cases], "pages": [H.page_meta_cases, H.claim_cases],
        "words": [H.buffer_word_cases]}


@pytest.mark.parametrize("gens", sorted(GENS))
@pytest.mark.parametrize("corpus", ["narrow", "wide"])
@pytest.mark.parametrize("writer", sorted(H.WRITERS))
def test_hostile_sizes_v20(originals, tmp_path, corpus, writer, gens):
    src = originals[(corpus, writer)]
    f = H.V2File.parse(src.read_bytes())
    cases = [H.Case("warm", "file", str(src), warm=True)]
    cases += H.build_cases(tmp_path, f"{corpus}-{writer}-2.0", f, GENS[gens])
    outcomes = H.run_cases(cases)
    H.report(outcomes)
    assert len(outcomes) == len(cases) - 1
    bad = H.failures(outcomes)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} of {len(outcomes)})"
