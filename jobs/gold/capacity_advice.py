"""Capacity advice of gold.backlog_forecast's group × topic rows (docs/contract.md §5.4).

What would clear a group's backlog of a topic by ``forecast.clear_by`` (HH:MM in
``forecast.clear_by_timezone``, its first occurrence after ``as_of``):

- Each live consumer's throughput is its running-info ``consume_ok_tps`` for the topic averaged
  over the forecast window (silver.consume_status); a consumer without one, and every consumer
  added, runs at the group's median.
- The group's allocation strategy (the members' own, RocketMQ's AVG when none says) is replayed
  with RocketMQ's code paths (:func:`jobs.replay.spark_replay.replay_snapshots`, DESIGN.md §7) on
  the topic's queues and the live consumers plus ``k`` added ones (their ids are not known yet:
  they are taken to sort after the current ones). Each queue then drains at its owner's
  throughput shared evenly over the owner's queues of the topic (the consume thread pool is the
  client's, facts §5.3), less the queue's arrival rate; it clears by the deadline when
  ``backlog − cleared_lag ≤ (share − arrival) × seconds left``.
- ``consumers_to_add`` = the smallest ``k`` from 0 up to one consumer per queue that clears every
  queue behind. When none does, ``consumers_to_add`` is null and more write queues are asked:
  new messages spread over ``Q + W`` queues, so with one consumer per queue (each new queue with
  a consumer at the median) an old queue meets ``A / (Q + W)`` arrivals (``A`` the topic's
  arrival rate) and clears when ``A / (Q + W) ≤ c_q − (backlog − cleared_lag) / seconds``; the
  smallest such ``W`` is ``queues_to_add``. When ``c_q × seconds`` is not even the backlog (no
  queue count helps), ``queues_to_add`` is null and the advice is to raise the consumers'
  throughput.
- Lite-pull groups (``CONSUME_ACTIVELY``) assign their own queues: no advice. A group without any
  throughput in running info gets no advice either (nothing to scale from).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.lake import Stage, no_staging
from jobs.replay.spark_replay import replay_snapshots

TOPIC_KEY = ["cluster", "group", "topic"]
ADDED_PREFIX = "~added-"  # sorts after any ip@instance client id (Java String order)
ADVICE_COLUMNS = [*TOPIC_KEY, "consumers_to_add", "queues_to_add", "advice"]


def deadline(as_of: Column, clear_by: str, timezone: str) -> Column:
    """The first ``clear_by`` (HH:MM in ``timezone``) after ``as_of``, as a UTC timestamp."""
    hours, minutes = (int(part) for part in clear_by.split(":"))
    local = F.from_utc_timestamp(as_of, timezone)
    same_day = F.to_timestamp(F.date_trunc("day", local)) + F.expr(
        f"INTERVAL {hours * 60 + minutes} MINUTES")
    at = F.when(same_day > local, same_day).otherwise(same_day + F.expr("INTERVAL 1 DAYS"))
    return F.to_utc_timestamp(at, timezone)


def _median(sorted_values: Column) -> Column:
    """The median of a sorted array (null when empty): exact, the same on both engines."""
    n = F.size(sorted_values)
    low = F.element_at(sorted_values, F.floor((n - 1) / 2).cast("int") + 1)
    high = F.element_at(sorted_values, F.ceil((n - 1) / 2).cast("int") + 1)
    return F.when(n > 0, (low + high) / 2)


def _ordinal(n: Column) -> Column:
    last_two = n % 100
    suffix = (F.when(last_two.between(11, 13), F.lit("th")).when(n % 10 == 1, F.lit("st"))
              .when(n % 10 == 2, F.lit("nd")).when(n % 10 == 3, F.lit("rd"))
              .otherwise(F.lit("th")))
    return F.concat(n.cast("string"), suffix)


def build_capacity_advice(topic_rows_df: DataFrame, rates_df: DataFrame, queue_rows_df: DataFrame,
                          member_context_df: DataFrame, consume_status_df: DataFrame,
                          window_minutes: int, cleared_lag: int, clear_by: str,
                          timezone: str, models_df: DataFrame | None = None,
                          stage: Stage = no_staging) -> DataFrame:
    """``ADVICE_COLUMNS`` for each group × topic row of ``topic_rows_df``
    (``jobs.gold.backlog_forecast.topic_forecasts``). ``rates_df``: every queue's rates
    (``queue_rates``, caught up ones too: their consumers and arrivals count); ``queue_rows_df``:
    the queues behind (``queue_forecasts``); ``member_context_df``: silver.member_context (live
    consumers and their strategy per snapshot); ``consume_status_df``: silver.consume_status.
    ``stage(df, name)`` stores the consumers and the replayed allocations (read several times)."""
    topics = topic_rows_df.select(*TOPIC_KEY, "as_of",
                                  deadline(F.col("as_of"), clear_by, timezone).alias("_deadline"))
    if models_df is not None:
        lite_pull = models_df.where(F.col("actively")).select("cluster", "group")
        topics = topics.join(lite_pull, on=["cluster", "group"], how="left_anti")
    # the topic's queues (mq_all) and its arrival rate, from every queue's rates
    mq = F.struct(F.col("topic"), F.col("broker_name"), F.col("queue_id").cast("int").alias("queue_id"))
    queues = rates_df.groupBy(*TOPIC_KEY).agg(
        F.collect_list(mq).alias("mq_all"), F.sum("arrival_rate").alias("_arrival"))
    # live consumers at the group's last snapshot that subscribe the topic (or say nothing)
    last_ts = member_context_df.groupBy("cluster", "group").agg(F.max("ts").alias("ts"))
    live = (member_context_df.join(last_ts, on=["cluster", "group", "ts"])
            .join(topics.select(*TOPIC_KEY), on=["cluster", "group"])
            .where(F.col("topics").isNull() | F.array_contains(F.col("topics"), F.col("topic")))
            .select(*TOPIC_KEY, "client_id", "strategy"))
    recent = consume_status_df.join(topics.select(*TOPIC_KEY, "as_of"), on=TOPIC_KEY).where(
        (F.col("ts") > F.col("as_of") - F.expr(f"INTERVAL {window_minutes} MINUTES"))
        & (F.col("ts") <= F.col("as_of")))
    measured = recent.groupBy(*TOPIC_KEY, "client_id").agg(
        F.avg("consume_ok_tps").alias("_tps"))
    consumers = stage(live.join(measured, on=[*TOPIC_KEY, "client_id"], how="left"),
                      "gold.backlog_forecast.consumers")
    group = (consumers.groupBy(*TOPIC_KEY).agg(
        F.collect_list("client_id").alias("_cids"),
        F.sort_array(F.collect_list("_tps")).alias("_measured"),
        F.coalesce(F.max("strategy"), F.lit("AVG")).alias("strategy"))
        .withColumn("_median", _median(F.col("_measured"))))
    states = stage(topics.join(queues, on=TOPIC_KEY).join(group, on=TOPIC_KEY)
                   .where(F.col("_median").isNotNull())
                   .withColumn("_n", F.size("_cids")).withColumn("_q", F.size("mq_all"))
                   .withColumn("_k_max", F.greatest(F.col("_q") - F.col("_n"), F.lit(0))),
                   "gold.backlog_forecast.states")
    # one state per k added consumers, 0 to one consumer per queue
    candidates = (states.withColumn("k", F.explode(F.sequence(F.lit(0), F.col("_k_max"))))
                  .withColumn("cid_all", F.concat(F.col("_cids"), F.transform(
                      F.filter(F.sequence(F.lit(1), F.greatest(F.col("_k_max"), F.lit(1))),
                               lambda i: i <= F.col("k")),
                      lambda i: F.concat(F.lit(ADDED_PREFIX), F.lpad(i.cast("string"), 4, "0"))))))
    calls = candidates.select(*TOPIC_KEY, "k", "strategy", "mq_all", "cid_all",
                              F.explode("cid_all").alias("current_cid"))
    allocated = stage(replay_snapshots(calls).where(F.col("error_class").isNull()),
                      "gold.backlog_forecast.allocations")
    tps = consumers.select(*TOPIC_KEY, F.col("client_id").alias("current_cid"), "_tps")
    owned = (allocated.join(tps, on=[*TOPIC_KEY, "current_cid"], how="left")
             .join(group.select(*TOPIC_KEY, "_median"), on=TOPIC_KEY)
             .select(*TOPIC_KEY, "k", "current_cid",
                     F.coalesce("_tps", "_median").alias("_throughput"),
                     F.size("allocated").alias("_owned"), F.explode("allocated").alias("_mq")))
    behind = queue_rows_df.select(*TOPIC_KEY, "broker_name", "queue_id", "backlog",
                                  "arrival_rate")
    seconds = (F.unix_millis("_deadline") - F.unix_millis("as_of")) / F.lit(1000.0)
    share = F.col("_throughput") / F.col("_owned")
    per_queue = stage(
        owned.select(*TOPIC_KEY, "k", "_throughput", share.alias("_share"),
                     F.col("_mq.broker_name").alias("broker_name"),
                     F.col("_mq.queue_id").alias("queue_id"))
        .join(behind, on=[*TOPIC_KEY, "broker_name", "queue_id"])
        .join(topics, on=TOPIC_KEY)
        .withColumn("_seconds", seconds)
        .withColumn("_clears", F.col("backlog") - cleared_lag
                    <= (F.col("_share") - F.col("arrival_rate")) * F.col("_seconds")),
        "gold.backlog_forecast.per_queue")
    # a queue behind that no consumer gets (an error, or more queues than the replay hands out)
    # leaves its k not clearing: count the queues each k clears against the queues behind
    cleared = per_queue.groupBy(*TOPIC_KEY, "k").agg(
        F.sum(F.col("_clears").cast("int")).alias("_cleared"))
    behind_n = behind.groupBy(*TOPIC_KEY).agg(F.count(F.lit(1)).alias("_behind"))
    first_k = (cleared.join(behind_n, on=TOPIC_KEY).where(F.col("_cleared") == F.col("_behind"))
               .groupBy(*TOPIC_KEY).agg(F.min("k").alias("consumers_to_add")))
    # write queues: at one consumer per queue, each old queue's owner meets A / (Q + W)
    one_each = (per_queue.join(states.select(*TOPIC_KEY, "_k_max", "_q", "_arrival", "_median"),
                               on=TOPIC_KEY)
                .where(F.col("k") == F.col("_k_max"))
                .withColumn("_spare", F.col("_throughput")
                            - (F.col("backlog") - cleared_lag) / F.col("_seconds")))
    needed = one_each.groupBy(*TOPIC_KEY).agg(
        F.min("_spare").alias("_spare"), F.first("_q").alias("_q"),
        F.first("_arrival").alias("_arrival"), F.first("_median").alias("_median"))
    total = F.greatest(F.ceil(F.col("_arrival") / F.col("_spare")),
                       F.ceil(F.col("_arrival") / F.col("_median")),
                       F.col("_q") + 1)
    queues_to_add = F.when(F.col("_spare") > 0, (total - F.col("_q")).cast("int"))
    advice_of = (states.select(*TOPIC_KEY, "_n", "_q", "strategy", "_deadline")
                 .join(first_k, on=TOPIC_KEY, how="left")
                 .join(needed.select(*TOPIC_KEY, queues_to_add.alias("_w")), on=TOPIC_KEY,
                       how="left"))
    by = F.concat(F.lit(" by "), F.date_format(
        F.from_utc_timestamp("_deadline", timezone), "HH:mm"), F.lit(f" {timezone}"))
    add = F.col("consumers_to_add")
    advice = (F.when(add == 0, F.concat(F.lit("the current consumers clear it"), by,
                                        F.lit(" at today's rates")))
              .when(add.isNotNull(), F.concat(
                  F.lit("add "), add.cast("string"),
                  F.when(add == 1, F.lit(" consumer")).otherwise(F.lit(" consumers")),
                  F.lit(": every queue clears"), by))
              .when(F.col("_w").isNotNull(), F.concat(
                  F.lit("a "), _ordinal(F.greatest(F.col("_n"), F.col("_q")) + 1),
                  F.lit(" consumer gets no queue under "), F.col("strategy"),
                  F.lit(": add "), F.col("_w").cast("string"),
                  F.when(F.col("_w") == 1, F.lit(" write queue")).otherwise(F.lit(" write queues")),
                  F.lit(" (and a consumer for each) to clear"), by))
              .otherwise(F.concat(
                  F.lit("even one consumer per queue cannot clear it"), by,
                  F.lit(": raise the consumers' throughput (consumeThreadMax, the listener's "
                        "speed)"))))
    return advice_of.select(
        *TOPIC_KEY, add.cast("int").alias("consumers_to_add"),
        F.when(add.isNull(), F.col("_w")).cast("int").alias("queues_to_add"),
        advice.alias("advice"))

