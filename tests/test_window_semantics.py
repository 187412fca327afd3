"""Window expressions the engines evaluate differently, pinned so a fix or a regression shows.

Sail 0.7.2 gives ``lag(unix_millis(ts))`` the value and type of ``lag(ts)`` when both are in one
select over the same window (classic Spark gives the epoch milliseconds). Job code therefore
takes ``unix_millis`` of the lagged ``ts`` (``jobs.silver.queue_offsets.snapshot_neighbours``),
which both engines evaluate alike. When a Sail release fixes it, the strict xfail below fails:
drop the mark then."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from tests.conftest import TEST_ENGINE

T0 = dt.datetime(2025, 11, 21, 10, 0)
T1 = dt.datetime(2025, 11, 21, 10, 1)


def frame(spark):
    return spark.createDataFrame([(1, T0), (1, T1)], "k int, ts timestamp")


def test_unix_millis_of_the_lagged_ts_is_epoch_millis(spark):
    by_ts = Window.partitionBy("k").orderBy("ts")
    got = frame(spark).select(F.lag("ts").over(by_ts).alias("prev"),
                              F.unix_millis(F.lag("ts").over(by_ts)).alias("prev_ms"))
    assert dict(got.dtypes)["prev_ms"] == "bigint"
    assert sorted(got.collect(), key=lambda r: r.prev_ms or 0) == [
        (None, None), (T0, int(T0.replace(tzinfo=dt.timezone.utc).timestamp() * 1000))]


@pytest.mark.xfail(TEST_ENGINE == "sail", strict=True,
                   reason="Sail 0.7.2 evaluates lag(unix_millis(ts)) as lag(ts) beside it")
def test_lag_of_unix_millis_beside_lag_of_ts_is_epoch_millis(spark):
    by_ts = Window.partitionBy("k").orderBy("ts")
    got = frame(spark).select(F.lag("ts").over(by_ts).alias("prev"),
                              F.lag(F.unix_millis("ts")).over(by_ts).alias("prev_ms"))
    assert dict(got.dtypes)["prev_ms"] == "bigint"
