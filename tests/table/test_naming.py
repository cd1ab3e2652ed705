"""Manifest naming schemes (V1, V2 inverted 20-digit, detached)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from lancejit.core.errors import CorruptFileError
from lancejit.table.meta.naming import (
    U64_MAX,
    NamingScheme,
    check_single_scheme,
    detect_scheme,
    is_detached,
    manifest_name,
    parse_manifest_name,
)


def test_known_names():
    assert manifest_name(1, NamingScheme.V2) == "18446744073709551614.manifest"
    assert manifest_name(0, NamingScheme.V2) == "18446744073709551615.manifest"
    assert manifest_name(42, NamingScheme.V2) == "18446744073709551573.manifest"
    assert manifest_name(42, NamingScheme.V1) == "42.manifest"
    assert parse_manifest_name("18446744073709551573.manifest") == (42, NamingScheme.V2, False)
    assert parse_manifest_name("7.manifest") == (7, NamingScheme.V1, False)
    # an inverted name of a huge version is still 20 digits long
    assert manifest_name(U64_MAX >> 1, NamingScheme.V2) == f"{U64_MAX - (U64_MAX >> 1):020d}.manifest"


def test_non_manifest_names_are_ignored():
    for name in ["latest_version_hint.json", ".tmp_7.manifest_9c100374", "3.manifest-0d4f", "x.manifest", "", "manifest"]:
        assert detect_scheme(name) is None
        assert parse_manifest_name(name) is None


def test_detached():
    v = (1 << 63) | 5
    assert is_detached(v)
    name = manifest_name(v, NamingScheme.V1)
    assert name == f"d{v}.manifest"
    assert parse_manifest_name(name) == (v, NamingScheme.V2, True)


@given(st.integers(min_value=0, max_value=(1 << 63) - 1), st.sampled_from(list(NamingScheme)))
def test_roundtrip(version, scheme):
    parsed = parse_manifest_name(manifest_name(version, scheme))
    if scheme is NamingScheme.V1 and len(str(version)) == 20:
        return  # a 20-digit V1 name is indistinguishable from V2 (the reference has the same rule)
    assert parsed == (version, scheme, False)


@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=20, unique=True))
def test_v2_names_sort_newest_first(versions):
    names = sorted(manifest_name(v, NamingScheme.V2) for v in versions)
    assert [parse_manifest_name(n)[0] for n in names] == sorted(versions, reverse=True)


def test_mixture_is_an_error():
    assert check_single_scheme(["1.manifest", "2.manifest", "latest_version_hint.json"], "x") is NamingScheme.V1
    assert check_single_scheme([manifest_name(3, NamingScheme.V2)], "x") is NamingScheme.V2
    assert check_single_scheme([], "x") is None
    with pytest.raises(CorruptFileError, match="both naming schemes"):
        check_single_scheme(["1.manifest", manifest_name(2, NamingScheme.V2)], "root/_versions")
