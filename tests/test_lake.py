"""Day partitions in Delta: replaced, never duplicated; other days untouched (both engines: Sail,
and classic Spark + Delta in the parity tier)."""

import datetime as dt

import pytest
from pyspark.sql import functions as F

from jobs import lake

D1, D2 = dt.date(2025, 1, 1), dt.date(2025, 1, 2)


def day_frame(spark, day, values):
    df = spark.createDataFrame([(day, "k", v) for v in values], "date date, k string, v string")
    # an aggregate array column: the shape that breaks Sail's replaceWhere (see jobs/lake.py)
    return df.groupBy("k").agg(F.array_sort(F.collect_set("v")).alias("vs"),
                               F.max("date").alias("date"))


def rows(spark, tmp_path):
    return sorted((r.date, tuple(r.vs)) for r in lake.read_table(spark, tmp_path, "gold", "t")
                  .collect())


def test_writing_a_day_twice_replaces_it_and_keeps_other_days(spark, tmp_path):
    lake.write_day(spark, day_frame(spark, D1, ["a", "b"]), tmp_path, "gold", "t", D1)
    lake.write_day(spark, day_frame(spark, D2, ["c"]), tmp_path, "gold", "t", D2)
    lake.write_day(spark, day_frame(spark, D1, ["x"]), tmp_path, "gold", "t", D1)
    lake.write_day(spark, day_frame(spark, D1, ["y", "z"]), tmp_path, "gold", "t", D1)
    assert rows(spark, tmp_path) == [(D1, ("y", "z")), (D2, ("c",))]


def test_replace_where_fails_on_aggregate_arrays_on_sail_only(spark, engine_name, tmp_path):
    """Pins the Sail 0.7.2 gap that makes write_day use DELETE + append. When the Sail half starts
    failing, Sail fixed it and write_day can go back to an atomic replaceWhere, which classic
    Delta already does on the same table."""
    path = lake.table_path(tmp_path, "gold", "t")
    day_frame(spark, D1, ["a"]).write.format("delta").mode("overwrite").partitionBy("date").save(path)
    replace = (day_frame(spark, D1, ["b"]).write.format("delta").mode("overwrite")
               .option("replaceWhere", "date = '2025-01-01'"))
    if engine_name == "sail":
        with pytest.raises(Exception, match="same data type"):
            replace.save(path)
    else:
        replace.save(path)
        assert rows(spark, tmp_path) == [(D1, ("b",))]


def test_merge_into_upserts_a_day_of_a_lake_table(spark, tmp_path):
    """``MERGE INTO`` on a table ``write_day`` made, as a user reconciling a day by key would run
    it: the same upsert on both engines."""
    flat = "date date, k string, v string"
    path = lake.table_path(tmp_path, "gold", "m")
    lake.write_day(spark, spark.createDataFrame([(D1, "k1", "old"), (D1, "k2", "keep")], flat),
                   tmp_path, "gold", "m", D1)
    spark.createDataFrame([(D1, "k1", "new"), (D1, "k3", "added")], flat).createOrReplaceTempView("upd")
    merge = (f"MERGE INTO delta.`{path}` t USING upd s ON t.date = s.date AND t.k = s.k "
             "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    spark.sql(merge).collect()
    got = sorted((r.k, r.v) for r in lake.read_table(spark, tmp_path, "gold", "m").collect())
    assert got == [("k1", "new"), ("k2", "keep"), ("k3", "added")]


def test_register_tables_makes_layer_dot_name_queryable_and_is_idempotent(spark, tmp_path):
    lake.write_day(spark, day_frame(spark, D1, ["a"]), tmp_path, "gold", "t", D1)
    assert lake.register_tables(spark, tmp_path) == ["gold.t"]
    assert lake.register_tables(spark, tmp_path) == ["gold.t"]
    assert spark.sql("SELECT count(*) AS n FROM gold.t").collect()[0].n == 1
