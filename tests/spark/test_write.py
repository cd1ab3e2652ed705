"""``df.write.format("lancejit")``: one version per job, read back exactly by pylance 14."""

from __future__ import annotations

import os
import pyarrow as pa
import pytest

import lance
from pyspark import InheritableThread

import lancejit.spark

ROWS_SQL = [
    "id",
    "cast(id % 7 AS INT) AS small",
    "CASE WHEN id % 5 = 0 THEN NULL ELSE concat('name-', id) END AS name",
    "id * 0.5D AS score",
    "array(cast(id AS FLOAT), cast(id + 1 AS FLOAT), 2.5F) AS vec",
    "CASE WHEN id % 3 = 0 THEN NULL ELSE sequence(0, cast(id % 4 AS INT)) END AS lst",
    "named_struct('x', cast(id AS INT), 'y', CASE WHEN id % 2 = 0 THEN NULL ELSE 'odd' END) AS st",
    "map('k', cast(id AS INT)) AS m",
    "cast(id / 8 AS DECIMAL(10, 3)) AS dec",
    "timestamp_seconds(1700000000 + id) AS ts",
    "cast(timestamp_seconds(1600000000 + id * 60) AS TIMESTAMP_NTZ) AS ntz",
    "date_add(DATE'2020-01-01', cast(id AS INT)) AS day",
    "id % 2 = 0 AS flag",
    "cast(concat('b', id) AS BINARY) AS raw",
]


def _frame(spark, start: int, n: int, partitions: int = 4):
    return spark.range(start, start + n, numPartitions=partitions).selectExpr(*ROWS_SQL)


def _same(df_arrow: pa.Table, lance_table: pa.Table) -> None:
    """Rows equal after casting pylance's table to Spark's Arrow types (sorted by id)."""
    got = lance_table.sort_by("id")
    want = df_arrow.sort_by("id")
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got.column(name).cast(want.column(name).type).to_pylist() == want.column(name).to_pylist(), name


def _files(uri: str) -> set[str]:
    data = os.path.join(uri, "data")
    return set(os.listdir(data)) if os.path.isdir(data) else set()


def _referenced(uri: str) -> set[str]:
    """The data files pylance's latest version references."""
    return {df.path for f in lance.dataset(uri).get_fragments() for df in f.metadata.files}


def _operations(uri: str) -> list[str]:
    """The reference's operation class of every version's transaction, oldest first."""
    ds = lance.dataset(uri)
    return [type(ds.read_transaction(v["version"]).operation).__name__ for v in ds.versions()]


def _job_prefixes(uri: str, version: int) -> set[str]:
    """The name prefixes (job ids) of the data files ``version`` added."""
    ds = lance.dataset(uri)
    op = ds.read_transaction(version).operation
    return {df.path.split("-", 1)[0] for f in op.fragments for df in f.files}


def test_create_append_overwrite(spark, tmp_path):
    uri = str(tmp_path / "out.lance")
    first = _frame(spark, 0, 200)
    first.write.format("lancejit").mode("append").save(uri)  # creates: Overwrite at version 1
    ds = lance.dataset(uri)
    assert ds.version == 1
    assert len(ds.get_fragments()) == 4  # one data file per task
    expected1 = first.toArrow()
    _same(expected1, ds.to_table())

    second = _frame(spark, 200, 120, partitions=5)
    second.write.format("lancejit").mode("append").save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 2
    assert [v["version"] for v in ds.versions()] == [1, 2]
    _same(pa.concat_tables([expected1, second.toArrow()]), ds.to_table())
    assert lance.dataset(uri, version=1).count_rows() == 200

    # lancejit reads what it wrote, through Spark too
    back = spark.read.format("lancejit").load(uri)
    assert back.count() == 320

    third = spark.range(0, 50, numPartitions=4).selectExpr("id", "cast(id AS STRING) AS s")
    third.write.format("lancejit").mode("overwrite").save(uri)
    ds = lance.dataset(uri)
    assert ds.version == 3
    assert ds.schema.names == ["id", "s"]
    _same(third.toArrow(), ds.to_table())
    assert lance.dataset(uri, version=2).count_rows() == 320

    spark.range(0, numPartitions=4).selectExpr("id", "cast(id AS STRING) AS s") \
        .write.format("lancejit").mode("overwrite").save(uri)
    assert lance.dataset(uri).version == 4 and lance.dataset(uri).count_rows() == 0
    assert spark.read.format("lancejit").load(uri).count() == 0
    # each job: write_fragments on the workers (one name prefix per job), one reference
    # operation committed by the driver
    assert _operations(uri) == ["Overwrite", "Append", "Overwrite", "Overwrite"]
    prefixes = [_job_prefixes(uri, v) for v in (1, 2, 3)]
    assert all(len(p) == 1 for p in prefixes) and len(set.union(*prefixes)) == 3
    assert _files(uri) == set().union(*(
        {df.path for f in lance.dataset(uri, version=v).get_fragments() for df in f.metadata.files}
        for v in (1, 2, 3, 4)))


def test_append_to_pylance_dataset_with_added_column(spark, tmp_path):
    """Appends keep the dataset's field ids (here not the Spark column order)."""
    uri = str(tmp_path / "evolved.lance")
    lance.write_dataset(pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": ["x", "y", None]}), uri)
    lance.dataset(uri).add_columns({"c": "a * 10"})
    lance.dataset(uri).drop_columns(["b"])
    lance.dataset(uri).add_columns({"b": "cast(a AS string)"})
    before = lance.dataset(uri)
    df = spark.range(10, 18, numPartitions=4).selectExpr("cast(id AS STRING) AS b", "id * 10 AS c", "id AS a")
    df.write.format("lancejit").mode("append").save(uri)
    ds = lance.dataset(uri)
    assert ds.version == before.version + 1
    got = ds.to_table().sort_by("a")
    assert got.column_names == ["a", "c", "b"]
    assert got["a"].to_pylist() == [1, 2, 3] + list(range(10, 18))
    assert got["c"].to_pylist() == [10, 20, 30] + [i * 10 for i in range(10, 18)]
    assert got["b"].to_pylist() == ["1", "2", "3"] + [str(i) for i in range(10, 18)]
    # the new files carry the dataset's field ids: lancejit reads them back the same way
    back = spark.read.format("lancejit").load(uri).toArrow().sort_by("a")
    assert back.to_pylist() == got.to_pylist()


def test_failing_task_commits_nothing_and_leaves_no_files(spark, tmp_path):
    """A task failing after it wrote several data files (10 rows each): nothing committed, no
    file of the job left."""
    uri = str(tmp_path / "fail.lance")
    _frame(spark, 0, 40).write.format("lancejit").mode("append").save(uri)
    files = _files(uri)
    bad = spark.range(0, 400, numPartitions=4).selectExpr(
        "id", "CASE WHEN id = 399 THEN raise_error('boom') ELSE cast(id AS STRING) END AS name")
    with pytest.raises(Exception, match="boom"):
        bad.write.format("lancejit").mode("overwrite").option("max_rows_per_file", 10).save(uri)
    _wait_idle(spark)
    assert lance.dataset(uri).version == 1
    assert _files(uri) == files
    assert lance.dataset(uri).count_rows() == 40
    aborts = os.path.join(uri, "_spark_aborts")  # the abort marker is removed when abort ends
    assert not os.path.isdir(aborts) or not os.listdir(aborts)


def test_attempts_spark_dropped_are_removed_at_commit(spark, tmp_path):
    """A task run twice (its first attempt's result dropped, as when Spark retries a task whose
    executor died after writing, or a speculative copy loses): the commit holds the second
    attempt's fragments only and removes the first attempt's files (the job's name prefix)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from lancejit.spark.options import WriteOptions
    from lancejit.spark.writer import LanceWriter

    uri = str(tmp_path / "attempts.lance")
    lance.write_dataset(pa.table({"id": pa.array([-1], pa.int64()), "s": ["x"]}), uri)
    before = _files(uri)
    schema = StructType([StructField("id", LongType()), StructField("s", StringType())])
    writer = LanceWriter(WriteOptions.parse({"path": uri, "max_rows_per_file": "7"}), schema, overwrite=False)
    part = [pa.record_batch({"id": pa.array(range(i, i + 10), pa.int64()), "s": [str(j) for j in range(i, i + 10)]})
            for i in (0, 10)]
    lost = writer.write(iter(part))
    kept = writer.write(iter(part))
    other = writer.write(iter([pa.record_batch({"id": pa.array([100], pa.int64()), "s": ["y"]})]))
    assert len(lost.fragments) == 3 and len(_files(uri) - before) == 7
    writer.commit([kept, other])
    ds = lance.dataset(uri)
    assert ds.version == 2 and _operations(uri) == ["Overwrite", "Append"]
    assert sorted(ds.to_table()["id"].to_pylist()) == [-1] + list(range(20)) + [100]
    assert _files(uri) == _referenced(uri)
    assert not {df.path for f in lost.fragments for df in f.files} & _files(uri)


def _wait_idle(spark) -> None:
    """Wait until the cancelled tasks of a failed job are gone (Spark does not wait for them)."""
    import time

    tracker = spark.sparkContext.statusTracker()
    while tracker.getActiveStageIds() or tracker.getActiveJobsIds():
        time.sleep(0.1)


def test_concurrent_appends_both_land(spark, tmp_path):
    uri = str(tmp_path / "concurrent.lance")
    spark.range(0, 10, numPartitions=2).selectExpr("id").write.format("lancejit").mode("append").save(uri)
    errors: list[BaseException] = []

    def job(start: int) -> None:
        try:
            lancejit.spark.activate(spark)  # the registration lives in the session
            spark.range(start, start + 100, numPartitions=4).selectExpr("id") \
                .write.format("lancejit").mode("append").save(uri)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [InheritableThread(target=job, args=(s,)) for s in (1000, 2000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ds = lance.dataset(uri)
    assert ds.version == 3
    ids = sorted(ds.to_table()["id"].to_pylist())
    assert ids == list(range(10)) + list(range(1000, 1100)) + list(range(2000, 2100))


def test_schema_mismatch_is_rejected(spark, tmp_path):
    uri = str(tmp_path / "mismatch.lance")
    lance.write_dataset(pa.table({"a": [1, 2]}), uri)
    with pytest.raises(Exception, match="cannot append"):
        spark.range(3).selectExpr("id AS z").write.format("lancejit").mode("append").save(uri)
    assert lance.dataset(uri).version == 1


# ----------------------------------------------------------------------------- save modes
def test_plain_save_needs_a_mode(spark, tmp_path):
    """pyspark gives Python data sources only append/overwrite: the default mode is refused by
    Spark itself (the README sends users to lancejit.spark.write)."""
    with pytest.raises(Exception, match="Append|Overwrite"):
        spark.range(3).write.format("lancejit").save(str(tmp_path / "x.lance"))


def test_write_helper_modes(spark, tmp_path):
    from lancejit.core.errors import AlreadyExistsError

    uri = str(tmp_path / "modes.lance")
    df = spark.range(0, 30, numPartitions=3).selectExpr("id", "cast(id AS STRING) AS s")
    lancejit.spark.write(df, uri)  # errorifexists on a new dataset: creates it
    assert lance.dataset(uri).version == 1
    with pytest.raises(AlreadyExistsError):
        lancejit.spark.write(df, uri, mode="error")
    lancejit.spark.write(spark.range(5).selectExpr("id", "'z' AS s"), uri, mode="ignore")
    assert lance.dataset(uri).version == 1 and lance.dataset(uri).count_rows() == 30
    lancejit.spark.write(spark.range(100, 105).selectExpr("id", "'z' AS s"), uri, mode="append")
    assert lance.dataset(uri).version == 2 and lance.dataset(uri).count_rows() == 35
    lancejit.spark.write(spark.range(7).selectExpr("id", "'o' AS s"), uri, mode="overwrite", max_rows_per_file=3)
    ds = lance.dataset(uri)
    assert ds.version == 3 and ds.to_table().sort_by("id")["id"].to_pylist() == list(range(7))
    ignored = str(tmp_path / "ignored.lance")
    lancejit.spark.write(df, ignored, mode="ignore")  # ignore on a new dataset: creates it
    assert lance.dataset(ignored).count_rows() == 30
    with pytest.raises(Exception, match="mode must be one of"):
        lancejit.spark.write(df, uri, mode="upsert")


def test_errorifexists_at_commit_when_created_meanwhile(spark, tmp_path):
    """The check before the job is repeated at commit: a dataset created while the job ran
    makes the write fail, and its files are removed."""
    uri = str(tmp_path / "race.lance")
    df = spark.range(0, 20, numPartitions=2).selectExpr("id")
    w = df.write.format("lancejit").mode("append").option("write_mode", "errorifexists")
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), uri)  # "meanwhile"
    with pytest.raises(Exception, match="already exists"):
        w.save(uri)
    assert lance.dataset(uri).version == 1 and lance.dataset(uri).count_rows() == 1
    assert len(_files(uri)) == 1
    ok = str(tmp_path / "race-ignore.lance")
    lance.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), ok)
    df.write.format("lancejit").mode("append").option("write_mode", "ignore").save(ok)
    assert lance.dataset(ok).version == 1 and len(_files(ok)) == 1


def test_append_subset_and_merge_schema(spark, tmp_path):
    """Missing nullable columns read back as nulls; new columns only with mergeSchema, in ONE
    new version (existing rows read them as nulls), as the reference's add_columns + append."""
    uri = str(tmp_path / "evolve.lance")
    lance.write_dataset(pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}), uri)
    spark.range(3, 5).selectExpr("id").write.format("lancejit").mode("append").save(uri)
    got = lance.dataset(uri).to_table().sort_by("id")
    assert got["s"].to_pylist() == ["a", "b", None, None]
    wider = spark.range(5, 8, numPartitions=2).selectExpr("id", "concat('s', id) AS s", "id * 1.5D AS score",
                                                           "array(cast(id AS FLOAT)) AS v")
    with pytest.raises(Exception, match="mergeSchema"):
        wider.write.format("lancejit").mode("append").save(uri)
    assert lance.dataset(uri).version == 2
    wider.write.format("lancejit").mode("append").option("mergeSchema", "true").save(uri)
    ds = lance.dataset(uri)
    versions = [v["version"] for v in ds.versions()]
    assert ds.schema.names == ["id", "s", "score", "v"] and ds.schema.field("score").nullable
    t = ds.to_table().sort_by("id")
    assert t["id"].to_pylist() == [1, 2, 3, 4, 5, 6, 7]
    assert t["score"].to_pylist() == [None] * 4 + [7.5, 9.0, 10.5]
    assert t["v"].to_pylist() == [None] * 4 + [[5.0], [6.0], [7.0]]
    # one ReserveFragments (no content change) then the Merge
    assert versions[-1] == 4 and lance.dataset(uri, version=3).count_rows() == 4
    assert _operations(uri)[-1] == "Merge" and _files(uri) == _referenced(uri)
    back = spark.read.format("lancejit").load(uri).toArrow().sort_by("id")
    assert back["score"].to_pylist() == t["score"].to_pylist()
    # the reference appends to the evolved dataset too
    lance.write_dataset(pa.table({"id": pa.array([9], pa.int64()), "s": ["x"], "score": [1.0],
                                  "v": pa.array([[1.0]], pa.list_(pa.float32()))}).cast(ds.schema),
                        uri, mode="append")
    assert lance.dataset(uri).count_rows() == 8


def test_unknown_option_names_the_closest(spark, tmp_path):
    uri = str(tmp_path / "opts.lance")
    with pytest.raises(Exception) as info:
        spark.range(3).write.format("lancejit").mode("append").option("max_row_per_file", 2).save(uri)
    first = str(info.value).splitlines()[0]
    assert "unknown write option 'max_row_per_file'" in first and "did you mean 'max_rows_per_file'" in first
    with pytest.raises(Exception, match="applies to reads"):
        spark.range(3).write.format("lancejit").mode("append").option("columns", "id").save(uri)
    assert not os.path.exists(uri) or not _files(uri)
