"""Hostile sizes in 2.1/2.2 files (issue 21 item 3): every integer of every page layout, page
lengths, buffer sizes and words inside page buffers set to counts up to 2**40, in files written
by pylance and by lancejit's writer.  Each edited file is refused (CorruptFileError naming it)
or answered, under 100 MiB of added memory (see ``tests/hostile.py``)."""

from __future__ import annotations


import pytest

import tests_hostile as H



@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile21")
    out = {}
    for name, table in H.corpus_tables().items():
        for writer, fn in H.WRITERS.items():
            for version in ("2.1", "2.2"):
                out[(name, writer, version)] = fn(tmp / f"{name}_{writer}_{version}.lance", table, version)
    return out


@pytest.fixture(scope="module")
def single_columns(tmp_path_factory):
    """One file per field of the corpora (all its columns), for claims that every page of the
    file must agree with."""
    tmp = tmp_path_factory.mktemp("hostile21cols")
    out = []
    for table in H.corpus_tables().values():
        for field in table.schema.names:
            one = table.select([field])
            for writer, fn in H.WRITERS.items():
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
        cases += H.build_cases(tmp_path, key, f, [H.claim_cases])
    outcomes = H.run_cases(cases)
    H.report(outcomes)
    bad = H.failures(outcomes)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} of {len(outcomes)})"
    answered = {o.name for o in outcomes if o.status == "answered"}
    assert any(n.startswith("nulls-") for n in answered), sorted(answered)


@pytest.mark.parametrize("gens", ["layouts", "pages", "words"])
@pytest.mark.parametrize("corpus", ["narrow", "wide"])
@pytest.mark.parametrize("writer", sorted(H.WRITERS))
@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_hostile_sizes_v21(originals, tmp_path, corpus, writer, version, gens):
    gen = {"layouts": [H.layout_cases], "pages": [H.page_meta_cases], "words": [H.buffer_word_cases]}[gens]
    src = originals[(corpus, writer, version)]
    f = H.V2File.parse(src.read_bytes())
    cases = [H.Case("warm", "file", str(src), warm=True)]
    cases += H.build_cases(tmp_path, f"{corpus}-{writer}-{version}", f, gen)
    outcomes = H.run_cases(cases)
    H.report(outcomes)
    assert len(outcomes) == len(cases) - 1
    bad = H.failures(outcomes)
    assert not bad, "\n".join(bad[:40]) + f"\n({len(bad)} of {len(outcomes)})"
