"""Manifest wire-format kernels (``encoding/kernels/pbwire.py`` via ``table/manifest_scan.py``)
against protobuf's own decoding (upb): generated manifests, merged duplicate fields, unknown
fields, and damaged bytes.  Whatever the kernels accept, protobuf decodes to the same values;
what they do not vouch for they hand back (None), never crash or read out of bounds."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lancejit.pb import table_pb2
from lancejit.table.meta.manifest_scan import scan_manifest

U64 = (1 << 64) - 1
ascii_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
u64 = st.one_of(st.integers(0, 1000), st.integers(0, U64))
i32 = st.integers(-(1 << 31), (1 << 31) - 1)


@st.composite
def data_files(draw):
    f = table_pb2.DataFile(path=draw(ascii_text), file_major_version=draw(st.integers(0, 3)),
                           file_minor_version=draw(st.integers(0, 3)), file_size_bytes=draw(u64))
    f.fields.extend(draw(st.lists(i32, max_size=5)))
    f.column_indices.extend(draw(st.lists(i32, max_size=5)))
    if draw(st.booleans()):
        f.base_id = draw(st.integers(0, (1 << 32) - 1))
    return f


@st.composite
def fragments(draw):
    frag = table_pb2.DataFragment(id=draw(u64), physical_rows=draw(u64))
    frag.files.extend(draw(st.lists(data_files(), max_size=3)))
    if draw(st.booleans()):
        d = frag.deletion_file
        d.file_type = draw(st.integers(0, 1))
        d.read_version = draw(u64)
        d.id = draw(u64)
        d.num_deleted_rows = draw(u64)
        if draw(st.booleans()):
            d.base_id = draw(st.integers(0, 100))
    which = draw(st.integers(0, 2))
    if which == 1:
        frag.inline_row_ids = draw(st.binary(max_size=20))
    elif which == 2:
        frag.external_row_ids.path = draw(ascii_text)
        frag.external_row_ids.offset = draw(u64)
        frag.external_row_ids.size = draw(u64)
    if draw(st.booleans()):
        frag.inline_created_at_versions = draw(st.binary(max_size=8))
    if draw(st.booleans()):
        frag.external_last_updated_at_versions.path = draw(ascii_text)
    return frag


@st.composite
def manifests(draw):
    m = table_pb2.Manifest(version=draw(u64), tag=draw(ascii_text), reader_feature_flags=draw(u64))
    for name in draw(st.lists(ascii_text, max_size=3)):
        m.fields.add(name=name, id=draw(i32))
    m.fragments.extend(draw(st.lists(fragments(), max_size=6)))
    if draw(st.booleans()):
        m.writer_version.library = "lance"
    if draw(st.booleans()):
        m.max_fragment_id = draw(st.integers(0, (1 << 32) - 1))
    m.schema_metadata["k"] = draw(st.binary(max_size=10))
    m.config["c"] = draw(ascii_text)
    return m


def expected(pb: table_pb2.Manifest) -> dict:
    """What the kernels must report, read from protobuf's decoding."""
    frags = list(pb.fragments)
    return {
        "ids": [f.id for f in frags],
        "physical_rows": [f.physical_rows for f in frags],
        "has_deletion": [f.HasField("deletion_file") for f in frags],
        "num_deleted": [f.deletion_file.num_deleted_rows for f in frags],
        "num_files": [len(f.files) for f in frags],
    }


def _decode(body: bytes) -> table_pb2.Manifest | None:
    try:
        return table_pb2.Manifest.FromString(body)
    except (DecodeError, ValueError):
        return None


def check_against_protobuf(body: bytes) -> bool:
    """Scan ``body``; if the kernels accept it, protobuf decodes the manifest without its
    fragments (``rest``) exactly when it decodes the whole, and to the same values.  Returns
    whether the kernels accepted it."""
    got = scan_manifest(body, force=True)
    pb = _decode(body)
    if got is None:
        return False
    if _decode(got.rest) is None:  # damage outside the fragments: refused either way
        assert pb is None, "protobuf decodes a manifest whose other fields it refuses alone"
        return True
    assert pb is not None, "kernels accepted fragments protobuf refuses"
    a = got.arrays
    want = expected(pb)
    for name, values in want.items():
        assert getattr(a, name).tolist() == values, name
    assert list(got.fragments) == list(pb.fragments)
    rest = table_pb2.Manifest.FromString(got.rest)
    pb.ClearField("fragments")
    assert rest == pb
    return True


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=manifests())
def test_generated_manifests_match_protobuf(m):
    assert check_against_protobuf(m.SerializeToString())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=manifests(), cuts=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
       mode=st.sampled_from(["flip", "insert", "delete", "truncate"]))
def test_damaged_manifests_never_disagree(m, cuts, mode):
    body = bytearray(m.SerializeToString())
    if not body:
        return
    for where, value in cuts:
        if not body:
            break
        at = where % len(body)
        if mode == "flip":
            body[at] = value
        elif mode == "insert":
            body[at:at] = bytes([value])
        elif mode == "delete":
            del body[at]
        else:
            del body[at:]
    check_against_protobuf(bytes(body))


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _uvarint(number << 3 | wire) + payload


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(number: int, payload: bytes) -> bytes:
    return _field(number, 2, _uvarint(len(payload)) + payload)


def test_merge_rules_last_value_wins_and_messages_merge():
    """A fragment whose id, physical_rows and deletion file appear twice (protobuf merges)."""
    d1 = _field(4, 0, _uvarint(7)) + _field(2, 0, _uvarint(3))
    d2 = _field(1, 0, _uvarint(1))
    frag = (_field(1, 0, _uvarint(5)) + _ld(3, d1) + _field(4, 0, _uvarint(100)) + _ld(2, _ld(1, b"a.lance"))
            + _field(1, 0, _uvarint(9)) + _ld(3, d2) + _field(4, 0, _uvarint(50)) + _ld(2, b""))
    body = _ld(2, frag) + _field(3, 0, _uvarint(4)) + _ld(2, b"")
    assert check_against_protobuf(body)
    got = scan_manifest(body, force=True)
    assert got.arrays.ids.tolist() == [9, 0]
    assert got.arrays.physical_rows.tolist() == [50, 0]
    assert got.arrays.num_deleted.tolist() == [7, 0]
    assert got.arrays.num_files.tolist() == [2, 0]


@pytest.mark.parametrize("unknown", [
    _field(99, 0, _uvarint(1 << 63)), _field(99, 1, b"\x00" * 8), _field(99, 5, b"\x00" * 4),
    _ld(99, b"\xff\xff"), _field(536870911, 0, b"\x01"),
])
def test_unknown_fields_are_kept(unknown):
    frag = _field(1, 0, _uvarint(3)) + unknown + _field(4, 0, _uvarint(10))
    body = _ld(2, frag) + unknown
    assert check_against_protobuf(body)
    assert scan_manifest(body, force=True).fragments[0] == table_pb2.DataFragment.FromString(frag)


@pytest.mark.parametrize("body", [
    _ld(2, _field(99, 3, b"") + _field(99, 4, b"")),               # a group: protobuf's business
    _ld(2, _ld(2, _ld(1, "é.lance".encode()))),                   # non-ASCII path
    _ld(2, _ld(2, _ld(1, b"\xff.lance"))),                         # invalid UTF-8: protobuf refuses
    _ld(2, _ld(1, b"\x01")),                                       # id with the wrong wire type
    _field(2, 0, b"\x01"),                                         # fragments with the wrong wire type
    _ld(2, _field(1, 0, b"\xff" * 9 + b"\x02")),                   # 10th varint byte over one bit
    _ld(2, _field(1, 0, b"\x80" * 10 + b"\x00")),                  # 11-byte varint
    _ld(2, b"\x0a\x05ab"),                                         # length past the fragment
    b"\x12\x80\x80\x80\x80\x10",                                   # length past the manifest
    _ld(2, _ld(2, _field(2, 2, b"\x02\x80"))),                     # truncated packed varint
    b"\x00",                                                       # field number 0
])
def test_unusual_or_malformed_bytes_fall_back(body):
    assert scan_manifest(body, force=True) is None
    check_against_protobuf(body)


def test_empty_manifest():
    got = scan_manifest(b"", force=True)
    assert got is not None and len(got.fragments) == 0 and got.rest == b""
    assert got.arrays.ids.dtype == np.uint64
