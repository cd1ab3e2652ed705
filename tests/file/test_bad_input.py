"""Bad input raises lancejit's errors with clear messages, never struct.error / IndexError /
protobuf DecodeError (issue 2, acceptance 4)."""

from __future__ import annotations

import asyncio
import os
import struct

import numpy as np
import pytest

from lancejit.core.errors import (
    CorruptFileError,
    InvalidInputError,
    LanceJitError,
    NotFoundError,
    NotSupportedError,
)
from lancejit.file.cache import SearchCache
from lancejit.file.container import FOOTER_LEN, open_file_metadata
from lancejit.file.reader import LanceFileReader


def _parse(bytes_reader, data: bytes, name: str = "mem://bad.lance"):
    return asyncio.run(open_file_metadata(bytes_reader(data, name)))


def _open(path) -> LanceFileReader:
    return LanceFileReader(str(path), cache=SearchCache())


# ------------------------------------------------------------------------- whole files on disk


def test_empty_file(tmp_path):
    path = tmp_path / "empty.lance"
    path.write_bytes(b"")
    with pytest.raises(CorruptFileError, match="empty file") as info:
        _open(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.lance"
    with pytest.raises(NotFoundError) as info:
        _open(path)
    assert isinstance(info.value, FileNotFoundError)
    assert "nope.lance" in str(info.value)


def test_directory(tmp_path):
    with pytest.raises(LanceJitError, match="directory") as info:
        _open(tmp_path)
    assert isinstance(info.value, InvalidInputError)


def test_wrong_magic(tmp_path, samples):
    data = bytearray(samples[("2.2", "flat")].read_bytes())
    data[-4:] = b"PAR1"
    path = tmp_path / "magic.lance"
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="not a Lance file") as info:
        _open(path)
    assert "magic.lance" in str(info.value) and "PAR1" in str(info.value)


def test_random_bytes_file(tmp_path):
    path = tmp_path / "random.lance"
    path.write_bytes(np.random.default_rng(0).bytes(100_000))
    with pytest.raises(CorruptFileError, match="not a Lance file"):
        _open(path)


def test_tiny_files(tmp_path):
    for n in range(1, 12):
        path = tmp_path / f"tiny{n}.lance"
        path.write_bytes(b"LANC"[-n:] if n <= 4 else b"\x00" * (n - 4) + b"LANC")
        with pytest.raises(CorruptFileError) as info:
            _open(path)
        assert f"tiny{n}.lance" in str(info.value)


@pytest.mark.parametrize("major,minor", [(2, 3), (2, 9), (3, 0), (1, 0), (0, 4)])
def test_unknown_versions(tmp_path, samples, major, minor):
    data = bytearray(samples[("2.2", "flat")].read_bytes())
    struct.pack_into("<HH", data, len(data) - 8, major, minor)
    path = tmp_path / "v.lance"
    path.write_bytes(bytes(data))
    with pytest.raises(NotSupportedError, match=f"{major}.{minor}"):
        _open(path)


def test_truncated_file_on_disk(tmp_path, samples):
    data = samples[("2.1", "nested")].read_bytes()
    path = tmp_path / "cut.lance"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError, match="cut.lance"):
        _open(path)


# ------------------------------------------------------------------- mutations, parsed in memory

ALLOWED = (CorruptFileError, NotSupportedError)


@pytest.mark.parametrize("key", [("2.0", "nested"), ("2.1", "flat"), ("2.2", "bigmeta")], ids=str)
def test_truncations(samples, bytes_reader, key):
    """Cutting the end off at many offsets (each end of the file, and spread over the rest)."""
    data = samples[key].read_bytes()
    n = len(data)
    cuts = set(range(0, 200)) | set(range(n - 200, n)) | set(np.linspace(0, n - 1, 150).astype(int).tolist())
    for cut in sorted(cuts):
        with pytest.raises(ALLOWED) as info:
            _parse(bytes_reader, data[:cut])
        assert "mem://bad.lance" in str(info.value)


@pytest.mark.parametrize("key", [("2.0", "flat"), ("2.2", "nested"), ("2.1", "bigmeta")], ids=str)
def test_prefix_removed(samples, bytes_reader, key):
    """Bytes missing at the front: the footer is intact but its offsets no longer fit."""
    data = samples[key].read_bytes()
    for drop in [1, 63, 64, 1000, len(data) // 3, len(data) - 41, len(data) - 40]:
        with pytest.raises(ALLOWED):
            _parse(bytes_reader, data[drop:])


def test_footer_offsets_out_of_range(samples, bytes_reader):
    data = bytearray(samples[("2.2", "flat")].read_bytes())
    n = len(data)
    footer_at = n - FOOTER_LEN
    for field_offset in (0, 8, 16):  # column meta start, CMO position, GBO position
        for value in (n, n * 2, 2**63, 2**64 - 1, footer_at - 1):
            bad = bytearray(data)
            struct.pack_into("<Q", bad, footer_at + field_offset, value)
            with pytest.raises(CorruptFileError):
                _parse(bytes_reader, bytes(bad))
    for field_offset, value in ((24, 0), (24, 10_000), (28, 10_000), (28, 2**32 - 1), (24, 2**32 - 1)):
        bad = bytearray(data)
        struct.pack_into("<I", bad, footer_at + field_offset, value)
        with pytest.raises(CorruptFileError):
            _parse(bytes_reader, bytes(bad))


def test_offset_tables_corrupted(samples, bytes_reader):
    """Entries of the column-metadata and global-buffer tables pointing outside their sections."""
    data = bytearray(samples[("2.1", "flat")].read_bytes())
    n = len(data)
    cm_start, cmo, gbo = struct.unpack_from("<QQQ", data, n - FOOTER_LEN)
    for table_pos in (cmo, gbo):
        for delta in (0, 8):
            for value in (n + 1, 2**64 - 1, 2**40):
                bad = bytearray(data)
                struct.pack_into("<Q", bad, table_pos + delta, value)
                with pytest.raises(CorruptFileError):
                    _parse(bytes_reader, bytes(bad))
    # a column entry that points into the data pages instead of the metadata section
    bad = bytearray(data)
    struct.pack_into("<Q", bad, cmo, 0)
    with pytest.raises(CorruptFileError, match="column 0 metadata"):
        _parse(bytes_reader, bytes(bad))


def test_random_metadata_bytes(samples, bytes_reader):
    """Random garbage in the metadata section: lancejit errors only (or a successful parse)."""
    rng = np.random.default_rng(7)
    for key in (("2.0", "nested"), ("2.2", "nested"), ("2.1", "many")):
        data = samples[key].read_bytes()
        n = len(data)
        cm_start = struct.unpack_from("<Q", data, n - FOOTER_LEN)[0]
        gb0 = struct.unpack_from("<Q", data, struct.unpack_from("<Q", data, n - FOOTER_LEN + 16)[0])[0]
        start = min(cm_start, gb0)
        for trial in range(150):
            bad = bytearray(data)
            if trial % 3 == 0:  # overwrite a run of bytes
                pos = int(rng.integers(start, n - FOOTER_LEN))
                length = int(rng.integers(1, 64))
                bad[pos : pos + length] = rng.bytes(min(length, n - FOOTER_LEN - pos))
            else:  # flip a few bytes
                for pos in rng.integers(start, n - FOOTER_LEN, size=int(rng.integers(1, 5))):
                    bad[int(pos)] ^= int(rng.integers(1, 256))
            try:
                _parse(bytes_reader, bytes(bad))
            except ALLOWED as exc:
                assert "mem://bad.lance" in str(exc)


def test_random_files_ending_in_magic(bytes_reader):
    rng = np.random.default_rng(3)
    for size in [8, 16, 39, 40, 41, 100, 5000, 70_000]:
        for major, minor in [(2, 1), (2, 2), (0, 3), (2, 0), (0, 2)]:
            body = bytearray(rng.bytes(size))
            body[-8:] = struct.pack("<HH", major, minor) + b"LANC"
            try:
                _parse(bytes_reader, bytes(body))
            except (*ALLOWED,):
                pass


def test_error_types_are_builtin_compatible(tmp_path):
    path = tmp_path / "x.lance"
    path.write_bytes(os.urandom(64))
    with pytest.raises(ValueError):  # CorruptFileError is also a ValueError
        _open(path)


@pytest.mark.parametrize("store_root", ["memory", "s3", "gcs"], indirect=True)
async def test_missing_object_on_stores(store_root):
    from lancejit.file.reader import AsyncLanceFileReader

    with pytest.raises(NotFoundError) as info:
        await AsyncLanceFileReader.open(store_root.join("absent.lance"), store_root.storage_options or None)
    assert "absent.lance" in str(info.value)


@pytest.mark.parametrize("store_root", ["memory", "s3"], indirect=True)
async def test_corrupt_object_on_stores(store_root, samples):
    from lancejit.file.reader import AsyncLanceFileReader
    from lancejit.io import open_store

    uri = store_root.join("cut.lance")
    store, path = open_store(uri, store_root.storage_options or None)
    data = samples[("2.2", "bigmeta")].read_bytes()
    await store.put(path, data[len(data) // 2 :])  # footer intact, offsets now out of range
    with pytest.raises(CorruptFileError) as info:
        await AsyncLanceFileReader.open(uri, store_root.storage_options or None, cache=SearchCache())
    assert "cut.lance" in str(info.value)


def test_page_rows_must_add_up(samples, bytes_reader):
    """A 2.1+ file whose descriptor claims another row count than its pages hold."""
    from lancejit.pb import file_pb2

    data = bytearray(samples[("2.2", "flat")].read_bytes())
    n = len(data)
    gbo = struct.unpack_from("<Q", data, n - FOOTER_LEN + 16)[0]
    pos, size = struct.unpack_from("<QQ", data, gbo)
    fd = file_pb2.FileDescriptor()
    fd.ParseFromString(bytes(data[pos : pos + size]))
    assert fd.length == 3000
    fd.length = 2999  # same varint width: the buffer keeps its size
    new = fd.SerializeToString()
    assert len(new) == size
    data[pos : pos + size] = new
    with pytest.raises(CorruptFileError, match="column 0 pages hold 3000 rows but the file has 2999"):
        _parse(bytes_reader, bytes(data))
