"""2.1/2.2 files written by pylance 14 read back exactly (read_all, read_range, take)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import v21data as D
from v21support import check_file, write_lance

VERSIONS = ["2.1", "2.2"]


def _scalars(rng, n):
    cols = {
        "i8": D.ints(rng, n, pa.int8()),
        "u16": D.ints(rng, n, pa.uint16()),
        "i32": D.ints(rng, n, pa.int32()),
        "i64": D.ints(rng, n, pa.int64(), nulls=0),
        "u64": D.ints(rng, n, pa.uint64()),
        "f16": D.floats(rng, n, pa.float16()),
        "f32": D.floats(rng, n, pa.float32()),
        "f64": D.floats(rng, n, pa.float64(), nulls=0),
        "b": D.bools(rng, n),
        "s": D.strings(rng, n),
        "ls": D.strings(rng, n, pa.large_string()),
        "bin": D.strings(rng, n, pa.binary()),
        "lbin": D.strings(rng, n, pa.large_binary(), nulls=0),
        "card": D.strings(rng, n, card=5),
        "runs": pa.array(np.arange(n) // 97, pa.int64()),
    }
    return pa.table(cols)


def _temporal(rng, n):
    return pa.table(
        {
            "d32": D.temporal(rng, n, pa.date32()),
            "d64": D.temporal(rng, n, pa.date64()),
            "t32s": D.temporal(rng, n, pa.time32("s")),
            "t32ms": D.temporal(rng, n, pa.time32("ms")),
            "t64us": D.temporal(rng, n, pa.time64("us")),
            "t64ns": D.temporal(rng, n, pa.time64("ns")),
            "ts": D.temporal(rng, n, pa.timestamp("us", tz="America/New_York")),
            "tsn": D.temporal(rng, n, pa.timestamp("s")),
            "dur": D.temporal(rng, n, pa.duration("ms")),
            "dec": D.decimals(rng, n),
            "dec256": D.decimals(rng, n, pa.decimal256(40, 4)),
            "fsb": D.fsb(rng, n),
        }
    )


def _nested(rng, n):
    return pa.table(
        {
            "vec": D.vectors(rng, n, 8),
            "vec_nn": D.vectors(rng, n, 4, nulls=0, item_nulls=0.2),
            "li": D.lists(rng, n, D.ints(rng, 5 * n, pa.int32())),
            "lls": D.lists(rng, n, D.strings(rng, 5 * n), t=pa.large_list(pa.string())),
            "ll": D.lists(rng, n, D.lists(rng, 5 * n, D.ints(rng, 25 * n, pa.int64()))),
            "st": D.structs(rng, n, {"x": D.ints(rng, n, pa.int32()), "y": D.strings(rng, n)}),
            "lst": D.lists(
                rng, n, D.structs(rng, 5 * n, {"a": D.floats(rng, 5 * n), "b": D.strings(rng, 5 * n)})
            ),
            "stl": D.structs(rng, n, {"l": D.lists(rng, n, D.ints(rng, 5 * n, pa.int16())), "z": D.bools(rng, n)}),
            "lvec": D.lists(rng, n, D.vectors(rng, 5 * n, 3)),
        }
    )


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("n,page", [(300, None), (5000, 4096)])
def test_scalars(tmp_path, version, seed, n, page):
    rng = np.random.default_rng(seed)
    path = write_lance(tmp_path / "s.lance", _scalars(rng, n), version, page)
    check_file(path, rng)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", [3])
@pytest.mark.parametrize("n,page", [(200, None), (3000, 4096)])
def test_temporal_decimal(tmp_path, version, seed, n, page):
    rng = np.random.default_rng(seed)
    path = write_lance(tmp_path / "t.lance", _temporal(rng, n), version, page)
    check_file(path, rng)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("seed", [4, 5])
@pytest.mark.parametrize("n,page", [(200, None), (3000, 8192)])
def test_nested(tmp_path, version, seed, n, page):
    rng = np.random.default_rng(seed)
    path = write_lance(tmp_path / "n.lance", _nested(rng, n), version, page)
    check_file(path, rng)


@pytest.mark.parametrize("version", VERSIONS)
def test_parallel_piece_decode(tmp_path, monkeypatch, version):
    """Large runs decode as parallel pieces split at chunk boundaries (forced on small data)."""
    import lancejit.encoding.v21.miniblock as mb

    monkeypatch.setattr(mb, "PARALLEL_DECODE_BYTES", 1)
    rng = np.random.default_rng(9)
    path = write_lance(tmp_path / "p.lance", _scalars(rng, 20000), version)
    check_file(path, rng)
