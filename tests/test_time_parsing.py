"""A log line's wall clock read with a cast, not a pattern: the same instants and nulls.

``jobs.ingest.client_logs._line_ts`` casts ``yyyy-MM-dd HH:mm:ss`` text to a timestamp, where it
used the strict pattern ``try_to_timestamp(…, 'yyyy-MM-dd HH:mm:ss')`` (the cast cost Sail a third
of it on M's 6.8 M log lines, benchmarks/RESULTS.md session 22). Every caller's regex holds the
text to digits in that shape, so only the values can be wrong: a month, day, hour, minute or
second out of range, or a day the calendar does not have. Both readings must agree on every
engine, and a wrong day must stay a null (then ``invalid timestamp``), never a rolled-over day.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from jobs.ingest.client_logs import parse_client_log_lines

UTC = dt.timezone.utc
TEXTS = {
    "2025-11-21 12:34:56": dt.datetime(2025, 11, 21, 12, 34, 56, tzinfo=UTC),
    "2024-02-29 23:59:59": dt.datetime(2024, 2, 29, 23, 59, 59, tzinfo=UTC),  # a leap day
    "1999-12-31 00:00:00": dt.datetime(1999, 12, 31, tzinfo=UTC),
    "2025-02-29 00:00:00": None,  # not a leap year
    "2025-04-31 10:00:00": None,
    "2025-13-01 00:00:00": None,
    "2025-00-10 00:00:00": None,
    "2025-11-00 00:00:00": None,
    "2025-11-32 00:00:00": None,
    "2025-11-21 24:00:00": None,
    "2025-11-21 23:60:00": None,
    "2025-11-21 23:59:60": None,  # a leap second: Java and chrono could differ here
}


def epoch_ms(value: dt.datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def test_the_cast_reads_every_wall_clock_as_the_strict_pattern_does(spark):
    df = spark.createDataFrame([(text,) for text in TEXTS], "text string")
    rows = df.select(
        "text",
        F.unix_millis(F.col("text").try_cast("timestamp")).alias("cast"),
        F.unix_millis(F.try_to_timestamp("text", F.lit("yyyy-MM-dd HH:mm:ss"))).alias("pattern"),
    ).collect()
    assert {r.text: (r.cast, r.pattern) for r in rows} == {
        text: (epoch_ms(want), epoch_ms(want)) for text, want in TEXTS.items()}


def test_a_log_line_of_a_day_the_calendar_lacks_is_an_invalid_timestamp(spark):
    persist = ("[persistAll] Group: GID_orders ClientId: 10.0.3.17@2815 "
               "updateConsumeOffsetToBroker MessageQueue [topic=orders, brokerName=broker-a, "
               "queueId=3] 4217")
    lines = [("client_logs/date=2025-11-21/h/rocketmq_client.log", n,
              f"{text},123 INFO MQClientFactoryScheduledThread - {persist}")
             for n, text in enumerate(TEXTS)]
    df = spark.createDataFrame(lines, "_source_file string, _line_no long, line string")
    got = {r._line_no: (r.ts, r.parse_error)
           for r in parse_client_log_lines(df, "UTC").select("_line_no", "ts", "parse_error")
           .collect()}
    # the session's time zone is UTC (jobs.engine), so a collected timestamp is naive UTC
    want = {n: ((value + dt.timedelta(milliseconds=123)).replace(tzinfo=None), None)
            if value is not None else (None, "invalid timestamp")
            for n, value in enumerate(TEXTS.values())}
    assert got == want
