"""Finding the latest version from ``_versions/`` entry names (local stores list names only):
equal to parsing every name (``list_manifests``' rules) on generated directories - V1, V2,
detached, temporary and foreign names, numbers beyond u64, mixed schemes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancejit
from lancejit.core.errors import CorruptFileError
from lancejit.table.meta.naming import U64_MAX, NamingScheme, manifest_name, parse_manifest_name
from lancejit.table.meta.versions import latest_of_names


class _Store:
    @staticmethod
    def uri(path: str) -> str:
        return "file://" + path


def expected(names: list[str]):
    parsed = [p for p in map(parse_manifest_name, names) if p is not None and not p[2]]
    if len({p[1] for p in parsed}) > 1:
        return "mixed"
    return max(parsed, default=None)


versions = st.one_of(st.integers(0, 50), st.integers(0, U64_MAX), st.just(U64_MAX))
names = st.one_of(
    st.builds(lambda v: manifest_name(v, NamingScheme.V2), versions),
    st.builds(lambda v: manifest_name(v, NamingScheme.V1), versions),
    st.builds(lambda v: f"d{v}.manifest", versions),
    st.builds(lambda v: f"{v}.manifest", st.integers(U64_MAX + 1, 10**25)),
    st.builds(lambda v: f".{v}.manifest.tmp-0123456789abcdef", versions),
    st.builds(lambda v: f"00{v}.manifest", st.integers(0, 99)),
    st.sampled_from(["latest_version_hint.json", "x.manifest", ".manifest", "٣.manifest",
                     "99999999999999999999.manifest", "3.manifest-6f9c"]),
)


@settings(max_examples=300, deadline=None)
@given(entries=st.lists(names, max_size=8))
def test_latest_of_names_matches_parsing_every_name(entries):
    want = expected(entries)
    if want == "mixed":
        with pytest.raises(CorruptFileError):
            latest_of_names(entries, "/ds/_versions", _Store())
        return
    got = latest_of_names(entries, "/ds/_versions", _Store())
    if want is None:
        assert got is None
    else:
        assert (got.version, got.scheme) == (want[0], want[1])
        assert parse_manifest_name(got.path.rsplit("/", 1)[1])[:2] == want[:2]
        assert got.path.rsplit("/", 1)[1] in entries


def test_many_versions_open_latest(tmp_path):
    """A dataset of many appends (V2 and V1 names): the latest version opens, equal to the reference."""
    import lance
    import numpy as np
    import pyarrow as pa

    for v2 in (True, False):
        path = str(tmp_path / f"ds{v2}")
        lance.write_dataset(pa.table({"a": np.arange(3)}), path, enable_v2_manifest_paths=v2)
        for i in range(11):
            lance.write_dataset(pa.table({"a": np.arange(i + 1)}), path, mode="append")
        ds = lancejit.dataset(path)
        assert ds.version == lance.dataset(path).version == 12
        assert ds.count_rows() == lance.dataset(path).count_rows()
        assert ds.io_stats().list_iops == 1
