"""Day partitions in Delta: replaced, never duplicated; other days untouched (Sail)."""

import datetime as dt

import pytest
from pyspark.sql import functions as F

from jobs import lake

pytestmark = pytest.mark.delta

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


@pytest.mark.sail_only
def test_sail_replace_where_still_fails_on_aggregate_arrays(spark, tmp_path):
    """Pins the Sail 0.7.2 gap that makes write_day use DELETE + append. When this test starts
    failing, Sail fixed it and write_day can go back to an atomic replaceWhere."""
    path = lake.table_path(tmp_path, "gold", "t")
    day_frame(spark, D1, ["a"]).write.format("delta").mode("overwrite").partitionBy("date").save(path)
    with pytest.raises(Exception, match="same data type"):
        (day_frame(spark, D1, ["b"]).write.format("delta").mode("overwrite")
         .option("replaceWhere", "date = '2025-01-01'").save(path))


def test_register_tables_makes_layer_dot_name_queryable_and_is_idempotent(spark, tmp_path):
    lake.write_day(spark, day_frame(spark, D1, ["a"]), tmp_path, "gold", "t", D1)
    assert lake.register_tables(spark, tmp_path) == ["gold.t"]
    assert lake.register_tables(spark, tmp_path) == ["gold.t"]
    assert spark.sql("SELECT count(*) AS n FROM gold.t").collect()[0].n == 1
