"""Acceptance of issue 24: ``docs/COMPAT.md`` lists every public name of the installed reference
once, and what it says holds: names marked "same" exist in lancejit and take every parameter the
reference's take; the others say how or why."""

from __future__ import annotations

import os

import api_names as names

TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "COMPAT.md")


def test_every_reference_name_is_listed_once():
    rows = names.read_table(TABLE)
    listed = [n for n, _ in names.reference_names()]
    assert len(listed) == len(set(listed))
    missing = sorted(set(listed) - set(rows))
    stale = sorted(set(rows) - set(listed))
    assert not missing, f"reference names not in docs/COMPAT.md (run tests/compat/api_names.py): {missing}"
    assert not stale, f"docs/COMPAT.md lists names the reference no longer has: {stale}"


def test_statuses_and_notes():
    rows = names.read_table(TABLE)
    for name, (status, notes) in rows.items():
        assert status in names.STATUSES, (name, status)
        if status != "same":
            assert notes, f"{name} is {status}: the note must say how or why"
    with open(TABLE, encoding="utf-8") as fh:
        assert names.summary(rows) in fh.read(), "the summary counts are stale"


def test_same_names_exist_with_the_reference_parameters():
    rows = names.read_table(TABLE)
    bad = []
    for name, ref in names.reference_names():
        if rows[name][0] != "same":
            continue
        ours = names.lancejit_object(name)
        if ours is None:
            bad.append(f"{name}: absent from lancejit")
            continue
        gap = names.signature_gap(ref, ours)
        if gap:
            bad.append(f"{name}: lancejit does not take {gap}")
    assert not bad, "\n".join(bad)


def test_not_supported_names_are_absent_or_refuse():
    """A name marked "not supported" that lancejit has must raise NotSupportedError (checked
    for the dataset methods that take no argument)."""
    import pyarrow as pa

    import lancejit
    from lancejit.core.errors import NotSupportedError

    rows = names.read_table(TABLE)
    ds = lancejit.write_dataset(pa.table({"a": [1]}), "memory://compat-table")
    prefix = "lance.dataset.LanceDataset."
    for name, (status, _) in rows.items():
        if status != "not supported" or not name.startswith(prefix):
            continue
        member = getattr(type(ds), name[len(prefix):], None)
        if member is None or not callable(member):
            continue
        try:
            member(ds)
        except NotSupportedError:
            continue
        except TypeError:
            continue  # needs arguments: not checked here
        raise AssertionError(f"{name} is marked not supported but ran")
