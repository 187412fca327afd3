"""Client-log clocks (DESIGN.md §5.1 "Clocks", issue #18): a host whose log times are whole hours
off running_info is a data-quality finding, not ownership.

A client log carries a zone-less wall clock (DESIGN.md §3.4), read in the zone that
``ingest.client_log_timezones`` gives the host (``ingest.client_log_timezone`` by default). A JVM
started with ``-Duser.timezone=UTC`` on a GMT+8 deployment writes the same instant 8 hours
earlier; read as GMT+8, each of its ``[persistAll]`` claims lands 8 h early.

How it is told: a ``[persistAll] … MessageQueue [q] X`` line sends the client's in-memory offset
X of queue q (facts §2.3, §5.4); the same client's running info reports that in-memory offset as
``commit_offset``, so the first running-info snapshot of that client and queue whose
``commit_offset`` is ≥ X comes at most one running-info interval after the line (X was reached
just before the persist). Only lines of a queue that moved count — the first line naming the
highest offset of a queue in a 5-minute slot in which it moved — because an idle queue keeps an
old X for hours. One such line per (host, client id, hour) is a sample;
``delta`` = that snapshot's ``ts`` − the line's ``ts``. A
host is off by k hours (k ≠ 0) when at least ``MIN_SAMPLES`` samples are within
``TOLERANCE_SECONDS`` of k hours and they are the majority of its samples. A group without
running info or ``[persistAll]`` lines gets no verdict (unknown is not proof).

The claims of such a host are not ownership (DESIGN.md §5.1): :func:`without_skewed_hosts` takes
its lines out of what silver.queue_ownership reads, until its zone is mapped.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from jobs.ingest.client_logs import fixed_offset_millis
from jobs.lake import Stage, no_staging
from jobs.silver.process_queues import build_commit_offsets

TOLERANCE_SECONDS = 600  # a running-info interval of up to 10 min still tells the hour
SLOT_SECONDS = 300
MIN_SAMPLES = 2  # two hours with a fresh line (a 30-min window spans two clock hours at most)
START_PROPERTY = "PROP_CONSUMER_START_TIMESTAMP"  # ConsumerRunningInfo property, epoch ms
START_TOLERANCE_SECONDS = 60  # consumer built → its client factory started
CLOCK_SKEW_SCHEMA = "cluster string, group string, host string, offset_hours int, samples long, date date"


def _fresh_persist_samples(log_events_df: DataFrame) -> DataFrame:
    """Per (host, group, client id, hour of the log's clock): one ``[persistAll]`` line of a queue
    that moved — in the hour's earliest 5-minute slot in which one of the client's queues moved,
    the first line naming that queue's highest offset of the slot (aggregates only: no window over
    the day's lines; an early slot, so that a running-info snapshot follows it even in the last
    hour of the data)."""
    persist = (log_events_df.where((F.col("event") == "PERSIST_OFFSET") & F.col("host").isNotNull()
                                   & F.col("client_id").isNotNull() & F.col("offset").isNotNull())
               .select("host", "group", "client_id", "ts", "offset",
                       F.col("queues")[0]["topic"].alias("topic"),
                       F.col("queues")[0]["broker_name"].alias("broker_name"),
                       F.col("queues")[0]["queue_id"].alias("queue_id"),
                       F.date_trunc("hour", "ts").alias("_hour"),
                       F.floor(F.unix_seconds("ts") / SLOT_SECONDS).alias("_slot")))
    # min_by, not min of a struct: the latter took 10 of the 16 s this function cost at M on Sail
    per_slot = (persist.groupBy("host", "group", "client_id", "_hour", "_slot", "topic",
                                "broker_name", "queue_id")
                .agg(F.min("offset").alias("_low"), F.max("offset").alias("_high"),
                     # the earliest line naming the slot's highest offset
                     F.min_by("ts", F.struct((-F.col("offset")).alias("neg"), F.col("ts")))
                     .alias("_ts"))
                .where(F.col("_high") > F.col("_low")))
    sample = F.struct("_slot", F.col("_ts").alias("ts"), F.col("_high").alias("offset"),
                      "topic", "broker_name", "queue_id")
    first = (per_slot.groupBy("host", "group", "client_id", "_hour")
             .agg(F.min_by(sample, sample).alias("_s")))
    return first.select("host", "group", "client_id", "_s.ts", "_s.offset", "_s.topic",
                        "_s.broker_name", "_s.queue_id")


def _start_samples(log_events_df: DataFrame, running_info_df: DataFrame) -> DataFrame:
    """``cluster, group, host, date, _delta, _weight``: per client, running info's
    ``PROP_CONSUMER_START_TIMESTAMP`` (epoch ms, set as the consumer is built) minus the log time
    of its ``the client factory [<client id>] start OK`` line (``CLIENT_STARTED``, written a few
    hundred ms later: 178 ms on the real cluster). Only a difference within
    ``START_TOLERANCE_SECONDS`` of whole hours is a sample: a JVM's producer may have started the
    shared factory long before the consumer was built. An exact sample weighs ``MIN_SAMPLES``:
    one client that started that day decides its host (unless the host's ``[persistAll]``
    samples, on time, are the majority), where ``[persistAll]`` samples need two hours of fresh
    lines (the real cluster's 4-minute day in the wrong zone flagged one group of seven that way,
    and two groups got false WARN double-owned findings from the 8-h-early claims)."""
    if "properties" not in running_info_df.columns:  # a collector without them: no exact samples
        return running_info_df.sparkSession.createDataFrame(
            [], "cluster string, group string, host string, date date, _delta double, _weight int")
    started = (log_events_df.where((F.col("event") == "CLIENT_STARTED") & F.col("host").isNotNull()
                                   & F.col("client_id").isNotNull())
               .groupBy("host", "client_id").agg(F.min("ts").alias("_log_ts")))
    start_ms = F.col("properties").getItem(START_PROPERTY).try_cast("long")
    clients = (running_info_df.where(start_ms.isNotNull())
               .groupBy("cluster", "group", "client_id").agg(
                   F.min(start_ms).alias("_start_ms"), F.min("date").alias("date")))
    delta = F.col("_start_ms") / 1000.0 - F.unix_millis("_log_ts") / 1000.0
    whole_hours = F.round(delta / 3600.0) * 3600
    return (started.join(clients, on="client_id", how="inner")
            .select("cluster", "group", "host", "date", delta.alias("_delta"),
                    F.lit(MIN_SAMPLES).alias("_weight"))
            # the factory may have started earlier for another client of the JVM (a producer):
            # only a start within seconds of a whole-hour offset is a sample
            .where(F.abs(F.col("_delta") - whole_hours) <= START_TOLERANCE_SECONDS))


def host_clock_skew(log_events_df: DataFrame, running_info_df: DataFrame,
                    stage: Stage = no_staging) -> DataFrame:
    """bronze.client_log_events + bronze.running_info → ``CLOCK_SKEW_SCHEMA``: one row per
    (cluster, group, host) whose log clock is ``offset_hours`` off running info (positive: the
    log times read earlier than the instants they denote).

    Only the running info of the clients with a sample is read (a few of a day's clients at M),
    and of each queue entry only its commit offset (``build_commit_offsets``). ``stage(df,
    name)`` stores the samples, which that filter and the match both read: unstaged, the log
    lines were read twice (issue #19)."""
    samples = stage(_fresh_persist_samples(log_events_df), "silver.clock_skew.samples")
    sampled = running_info_df.join(samples.select("group", "client_id").distinct(),
                                   on=["group", "client_id"], how="left_semi")
    ri = build_commit_offsets(sampled).select(
        "cluster", "group", "client_id", "topic", "broker_name", "queue_id",
        F.col("ts").alias("_ri_ts"), F.col("commit_offset").alias("_commit"), "date")
    keys = ["group", "client_id", "topic", "broker_name", "queue_id"]
    matched = (samples.join(ri, on=keys, how="inner").where(F.col("_commit") >= F.col("offset"))
               .groupBy("cluster", *keys, "host", "ts", "offset")
               .agg(F.min("_ri_ts").alias("_ri_ts"), F.min("date").alias("date")))
    delta = F.unix_millis("_ri_ts") / 1000.0 - F.unix_millis("ts") / 1000.0
    persisted = matched.select("cluster", "group", "host", "date", delta.alias("_delta"),
                               F.lit(1).alias("_weight"))
    deltas = persisted.unionByName(_start_samples(log_events_df, running_info_df))
    hours = F.round(F.col("_delta") / 3600.0).cast("int")
    near = F.abs(F.col("_delta") - hours * 3600) <= TOLERANCE_SECONDS
    votes = deltas.select("cluster", "group", "host", "date", "_weight",
                          F.when(near, hours).alias("h"))
    key = ["cluster", "group", "host", "date"]
    totals = votes.groupBy(*key).agg(F.sum("_weight").alias("_all"))
    best = (votes.where(F.col("h").isNotNull() & (F.col("h") != 0))
            .groupBy(*key, "h").agg(F.sum("_weight").alias("samples")))
    return (best.join(totals, on=key, how="inner")
            .where((F.col("samples") >= MIN_SAMPLES) & (F.col("samples") * 2 > F.col("_all")))
            .select("cluster", "group", "host", F.col("h").alias("offset_hours"), "samples", "date"))


def clock_findings(skew_df: DataFrame, default_zone: str) -> DataFrame:
    """``cluster, group, date, text``: one INFO line per skewed host, naming the zone to map it
    to when the default is a fixed offset."""
    base = fixed_offset_millis(default_zone)
    hint = F.lit("")
    if base is not None:
        zone = F.lit(base // 3_600_000) - F.col("offset_hours")
        hint = F.concat(F.lit(" (its JVM logs in GMT"),
                        F.when(zone >= 0, F.lit("+")).otherwise(F.lit("")),
                        zone.cast("string"), F.lit("?)"))
    text = F.concat(
        F.lit("INFO clock: host "), F.col("host"), F.lit(" client-log times are "),
        F.abs("offset_hours").cast("string"), F.lit(" h "),
        F.when(F.col("offset_hours") > 0, F.lit("behind")).otherwise(F.lit("ahead of")),
        F.lit(" running_info"), hint,
        F.lit("; map it in ingest.client_log_timezones"))
    return skew_df.select("cluster", "group", "date", text.alias("text"))


def without_skewed_hosts(log_events_df: DataFrame, skew_df: DataFrame) -> DataFrame:
    """The log events without the lines of (group, host) pairs in ``skew_df``: their claims
    would sit whole hours away from the instants they denote."""
    skewed = skew_df.select("group", "host").distinct()
    return log_events_df.join(skewed, on=["group", "host"], how="left_anti")
