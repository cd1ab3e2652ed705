"""Issue 29 item 2: pandas round trips as the reference does them (index kept, categoricals,
time-zone-aware datetimes, nullable dtypes), side by side with pylance."""

from __future__ import annotations

import pyarrow as pa
import pytest

from compat_helpers import assert_same

pd = pytest.importorskip("pandas")


def _frames():
    n = 6
    base = pd.DataFrame({
        "i": pd.array([1, None, 3, 4, None, 6], dtype="Int64"),
        "f": [0.5, float("nan"), 1.5, 2.5, 3.5, 4.5],
        "s": pd.array(["a", None, "c", "d", "e", "f"], dtype="string"),
        "b": pd.array([True, False, None, True, False, None], dtype="boolean"),
        "cat": pd.Categorical(["x", "y", "x", None, "z", "y"], categories=["z", "y", "x"]),
        "ts": pd.date_range("2024-03-01", periods=n, freq="h", tz="Europe/Paris"),
        "naive": pd.date_range("2024-01-01", periods=n, freq="D"),
        "u8": pd.array([1, 2, 3, 4, 5, None], dtype="UInt8"),
    })
    named = base.set_index(pd.Index([10, 20, 30, 40, 50, 60], name="key"))
    strings = base.set_index(pd.Index(list("abcdef"), name="label"))
    multi = base.set_index([pd.Index([1, 1, 2, 2, 3, 3], name="k1"), pd.Index(list("ababab"), name="k2")])
    stepped = base.set_index(pd.RangeIndex(100, 112, 2))
    return {"range": base, "named": named, "strings": strings, "multi": multi, "stepped": stepped}


FRAMES = _frames()


def _frame_state(df):
    return (list(df.columns), [str(t) for t in df.dtypes], df.index.names, [str(df.index.dtype)],
            df.index.tolist(), df.astype(object).where(df.notna(), None).values.tolist())


@pytest.mark.parametrize("name", sorted(FRAMES))
def test_round_trip(tmp_path, name):
    df = FRAMES[name]

    def case(lance, base):
        ds = lance.write_dataset(df, f"{base}/ds")
        back = ds.to_table().to_pandas()
        return ds.schema.names, _frame_state(back), _frame_state(ds.to_pandas()), ds.schema.metadata is not None

    got = assert_same(case, tmp_path)
    assert got[1] == _frame_state(df)  # and equal to the original frame


def test_append_and_filter_keep_pandas_metadata(tmp_path):
    df = FRAMES["named"]

    def case(lance, base):
        ds = lance.write_dataset(df, f"{base}/ds")
        ds.insert(df.iloc[:2])
        return (_frame_state(ds.to_table(filter="i > 2").to_pandas()),
                _frame_state(ds.to_table(columns=["s", "key"]).to_pandas()))

    assert_same(case, tmp_path)


def test_schema_casts_pandas(tmp_path):
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    schema = pa.schema([("a", pa.int32()), ("b", pa.large_string())])

    def case(lance, base):
        ds = lance.write_dataset(df, f"{base}/ds", schema)
        return ds.schema, ds.to_table().to_pylist()

    assert_same(case, tmp_path)
