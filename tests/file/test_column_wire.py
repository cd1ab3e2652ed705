"""Column metadata decoded from its wire bytes (``file/column_wire.decode_columns`` over the
``pbwire.column_pages`` kernel) against protobuf's decode (``container._decode_column``):
generated ``ColumnMetadata`` messages (pages with any buffers, encodings decoded before or not,
column encodings and buffers, unknown fields, merged fields), damaged bytes, and the files
pylance writes.  Whatever the kernel path returns equals protobuf's decode; what it does not
vouch for it hands back (None), never crashes or reads out of bounds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lancejit.core.errors import LanceJitError
from lancejit.encoding.kernels import jit
from lancejit.file import container
from lancejit.file.column_wire import decode_columns
from lancejit.pb import encodings_v2_0_pb2, encodings_v2_1_pb2, file2_pb2

lance = pytest.importorskip("lance")

U64 = (1 << 64) - 1
URL = "/lance.encodings21.PageLayout"


@pytest.fixture(scope="module", autouse=True)
def numba_loaded():
    jit.numba()  # the kernel path runs only once Numba is loaded


def _any(url: str, msg) -> bytes:
    from google.protobuf import any_pb2

    return any_pb2.Any(type_url=url, value=msg.SerializeToString()).SerializeToString()


def _layouts() -> list[bytes]:
    a = encodings_v2_1_pb2.PageLayout()
    a.mini_block_layout.num_items = 7
    a.mini_block_layout.num_buffers = 1
    b = encodings_v2_1_pb2.PageLayout()
    b.full_zip_layout.bits_per_value = 64
    c = encodings_v2_1_pb2.PageLayout()
    c.all_null_layout.SetInParent()
    return [_any(URL, m) for m in (a, b, c)]


LAYOUTS = _layouts()
COLUMN_ENCODING = _any("/lance.encodings.ColumnEncoding", encodings_v2_0_pb2.ColumnEncoding())


def _encoding(target, kind: int, raw: bytes) -> None:
    if kind == 0:
        target.direct.encoding = raw
    elif kind == 1:
        target.none.SetInParent()
    elif kind == 2:
        target.indirect.buffer_location = 5
    # kind 3: unset


@st.composite
def columns(draw, file_size: int):
    col = file2_pb2.ColumnMetadata()
    small = st.integers(0, file_size)
    for _ in range(draw(st.integers(0, 4))):
        page = col.pages.add()
        nbuf = draw(st.integers(0, 5))
        page.buffer_offsets.extend(draw(st.lists(small, min_size=nbuf, max_size=nbuf)))
        nsize = nbuf if draw(st.integers(0, 9)) else draw(st.integers(0, 5))
        page.buffer_sizes.extend(draw(st.lists(st.integers(0, file_size // 4), min_size=nsize, max_size=nsize)))
        page.length = draw(st.sampled_from([0, 10, 50, 100, draw(st.integers(0, U64))]))
        page.priority = draw(st.integers(0, U64))
        raw = draw(st.sampled_from(LAYOUTS + [b"", b"\x0a\x03abc"]))
        _encoding(page.encoding, draw(st.sampled_from([0, 0, 0, 0, 1, 2, 3])), raw)
    if draw(st.booleans()):
        _encoding(col.encoding, draw(st.sampled_from([0, 0, 1, 2])),
                  draw(st.sampled_from([COLUMN_ENCODING, b"", b"\x0a\x01x"])))
    if not draw(st.integers(0, 5)):
        col.buffer_offsets.append(draw(small))
        col.buffer_sizes.append(draw(small))
    data = col.SerializeToString()
    if not draw(st.integers(0, 4)):  # an unknown field (skipped by both)
        data += b"\x48" + bytes([draw(st.integers(0, 127))])
    if not draw(st.integers(0, 6)):  # a field seen twice (protobuf merges: the kernel falls back)
        data += data
    return data


def _slow(section: bytes, base: int, spans, indexes, num_rows: int, file_size: int):
    try:
        return [container._decode_column(i, memoryview(section)[spans[i][0] - base:spans[i][0] - base + spans[i][1]],
                                         "2.2", file_size, "f", num_rows) for i in indexes]
    except (LanceJitError, ValueError):
        return None
    except Exception as exc:  # protobuf's own DecodeError and friends: damaged metadata
        if type(exc).__module__.startswith("google."):
            return None
        raise


def _prime() -> None:
    """Decode the layouts once (files of one writer find theirs decoded: the fast path's rule)."""
    for raw in LAYOUTS:
        col = file2_pb2.ColumnMetadata()
        page = col.pages.add(length=1)
        page.encoding.direct.encoding = raw
        col.encoding.direct.encoding = COLUMN_ENCODING
        data = col.SerializeToString()
        container._decode_column(0, memoryview(data), "2.2", 100, "f", 1)


def _check(messages: list[bytes], num_rows: int, file_size: int, base: int = 40) -> tuple:
    _prime()
    section = b"\x00" * 3 + b"".join(messages)
    spans, pos = [], base + 3
    for m in messages:
        spans.append((pos, len(m)))
        pos += len(m)
    indexes = list(range(len(messages)))[::-1]
    got = decode_columns(section, base, spans, indexes, "2.2", file_size, num_rows)
    slow = _slow(section, base, spans, indexes, num_rows, file_size)
    if got is not None:
        assert slow is not None and got == slow
    return got, slow


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_columns_equal_protobuf(data):
    file_size = data.draw(st.sampled_from([1000, 1 << 20]))
    msgs = data.draw(st.lists(columns(file_size), min_size=1, max_size=4))
    num_rows = data.draw(st.sampled_from([0, 10, 50, 100, 150]))
    _check(msgs, num_rows, file_size)


def test_plain_columns_take_the_kernel_path():
    _prime()
    msgs = []
    for j in range(3):
        col = file2_pb2.ColumnMetadata()
        col.encoding.direct.encoding = COLUMN_ENCODING
        for p in range(j + 1):
            page = col.pages.add(length=30, priority=30 * p)
            page.buffer_offsets.extend([100 * p, 100 * p + 8])
            page.buffer_sizes.extend([8, 90])
            page.encoding.direct.encoding = LAYOUTS[p % 2]
        msgs.append(col.SerializeToString())
    got, slow = _check([msgs[0]], 30, 1000)
    assert got is not None
    got, slow = _check(msgs[1:], 30, 1000)  # (rows: a multiple of the file's is allowed)
    assert got is not None and [len(c.pages) for c in got] == [3, 2]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_bytes_never_differ(data):
    _prime()
    col = file2_pb2.ColumnMetadata()
    col.encoding.direct.encoding = COLUMN_ENCODING
    page = col.pages.add(length=20, priority=0)
    page.buffer_offsets.extend([0, 16])
    page.buffer_sizes.extend([16, 200])
    page.encoding.direct.encoding = LAYOUTS[0]
    raw = bytearray(col.SerializeToString())
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw)))]
    _check([bytes(raw)], 20, 4096)


def test_pylance_files_equal_protobuf(tmp_path):
    n = 3000
    rng = np.random.default_rng(1)
    table = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "x": pa.array([None if i % 5 == 0 else float(v) for i, v in enumerate(rng.standard_normal(n))]),
        "s": pa.array([f"v{i % 97}" * (i % 4) for i in range(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 4).astype(np.float32)), 4),
        "st": pa.array([{"a": i, "b": str(i)} for i in range(n)]),
        "l": pa.array([[i] * (i % 3) for i in range(n)]),
    })
    for version in ("2.1", "2.2"):
        path = str(tmp_path / version)
        lance.write_dataset(table, path, max_rows_per_file=1000, data_storage_version=version)
        for frag in lance.dataset(path).get_fragments():
            f = f"{path}/data/{frag.data_files()[0].path}"
            data = open(f, "rb").read()
            md = container.parse_tail_metadata(f, len(data), memoryview(data), lazy_columns=True)
            cols = md.columns
            slow = [cols.peek(i) for i in range(len(cols))]
            got = cols.peek_many(list(range(len(cols))))
            assert got == slow
            fast = decode_columns(cols._data, cols._base, cols._spans, list(range(len(cols))), version,
                                  len(data), md.num_rows)
            assert fast == slow  # (every encoding was decoded by the slow pass)


def test_cold_take_keeps_no_column_objects(tmp_path):
    """A take from data files not opened yet builds their take tables from column metadata
    decoded without being kept (``LazyColumns.peek_many``): the files keep no ColumnInfo; rows
    equal pylance's, also of a scan afterwards."""
    import lancejit.table as lt

    n = 2000
    table = pa.table({"id": np.arange(n, dtype=np.int64), "s": pa.array([f"r{i}" for i in range(n)]),
                      "x": np.linspace(0, 1, n)})
    path = str(tmp_path / "ds")
    lance.write_dataset(table, path, max_rows_per_file=250, data_storage_version="2.2")
    ds = lt.dataset(path)
    rows = np.array([3, 260, 777, 1999], dtype=np.int64)
    assert ds.take(rows, columns=["id", "s"]).equals(lance.dataset(path).take(rows, columns=["id", "s"]))
    ctx = ds._ctx
    from lancejit.io.sync import run_sync
    from lancejit.table.read.datafile import open_data_files

    files = [f.files[0] for f in ctx.manifest.fragments]
    opened = run_sync(open_data_files(ctx, [files[i] for i in (0, 1, 3, 7)]), store=ctx.store)  # (cached)
    for h in opened:
        cols = h.reader.file_metadata.columns
        assert isinstance(cols, container.LazyColumns) and cols._items is None
    assert ds.to_table(columns=["id", "s", "x"]).equals(lance.dataset(path).to_table(columns=["id", "s", "x"]))


@pytest.mark.parametrize("offsets,sizes,lengths", [
    ([(1 << 63) - 10], [(1 << 63) - 10], [20]),  # off + size overflows int64: past the end
    ([0], [1 << 62], [20]),
    ([0], [16], [(1 << 63) - 1, (1 << 63) - 1, (1 << 63) - 1, 23]),  # row sums that wrap in int64
    ([0, 16], [16], [20]),  # unequal numbers of offsets and sizes
])
def test_extreme_values_are_handed_back(offsets, sizes, lengths):
    _prime()
    col = file2_pb2.ColumnMetadata()
    for n in lengths:
        page = col.pages.add(length=n)
        page.buffer_offsets.extend(offsets)
        page.buffer_sizes.extend(sizes)
        page.encoding.direct.encoding = LAYOUTS[0]
    got, slow = _check([col.SerializeToString()], 20, 4096)
    assert got is None and slow is None
