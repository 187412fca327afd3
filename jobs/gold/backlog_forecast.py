"""gold.backlog_forecast: will a group's backlog clear, will anything be lost (docs/contract.md §5.4).

Evaluated at each queue's last offsets snapshot of the day (``as_of``) for every queue whose lag
there (``backlog``) is above ``cleared_lag`` (a healthy lag wobbles by tens of messages: at or
below it the queue is caught up and gets no row). Broadcasting and pop groups get no rows: their
broker offsets are not consumption (§5.1).

- Rates over the last ``window_minutes`` before ``as_of`` (the day's first snapshot when the day
  is shorter): ``arrival_rate`` = broker offset advance / seconds, ``drain_rate`` = committed
  offset advance / seconds; ``net`` = drain − arrival. ``trend``: ``DRAINING`` when net >
  ``flat_fraction`` × max(arrival, drain), ``GROWING`` when net < −that, else ``FLAT``. A queue
  seen once in the window has no rates (null rates and trend).
- ``clears_at`` = ``as_of`` + (backlog − cleared_lag) / net when DRAINING; else null with
  ``no_clear_reason``: ``NO_OWNER`` (in gold.orphaned_queues at ``as_of``), ``STUCK`` (in
  gold.stuck_queues at ``as_of``: its stuck row is the forecast), ``GROWING`` or ``FLAT``.
- Data loss: RocketMQ deletes a commit-log file last written more than ``fileReservedTime`` hours
  ago at the ``deleteWhen`` hour (``DefaultMessageStore.CleanCommitLogService``; at any hour once
  disk use passes ``diskMaxUsedSpaceRatio``). ``loss_at`` = the first ``delete_when_hour`` (in the
  cluster's ``retention.timezone``) at or after the oldest unread message's store time +
  ``file_reserved_hours``; that store time is taken as ``last_timestamp`` (the store time of the
  last consumed message, §3.1: never later than the truth, so ``loss_at`` is never late); null
  when unknown. ``lost_messages`` = ``min_offset`` − ``consumer_offset`` when the consumer offset is
  below the queue's minimum offset (those messages are deleted already), 0 when it is not, null when
  the collector does not report ``min_offset`` (unknown, never 0).
- One row per group × topic (``broker_name``/``queue_id`` null): summed backlog and rates, the
  trend of those sums, ``clears_at`` = the latest of its queues' (null when any is null),
  ``deciding_queue`` = ``"broker/queue"`` of the queue that decides it (the latest to clear, a
  queue that will not clear before any that will, the largest backlog among equals) and its
  ``no_clear_reason``, ``loss_at`` the earliest, ``lost_messages`` the sum of the known.
- ``consumers_to_add``, ``queues_to_add``, ``advice``: the capacity advice (null on queue rows).

Findings (:func:`backlog_findings`): ``BACKLOG_GROWING`` WARN (a group × topic with backlog ≥
``min_backlog``, GROWING or FLAT), ``LOSS_RISK`` (WARN within ``loss_warn_hours`` of ``as_of``,
CRITICAL within ``loss_critical_hours``), ``MESSAGES_LOST`` CRITICAL with the count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from jobs.gold.capacity_advice import ADVICE_COLUMNS, build_capacity_advice
from jobs.lake import Stage, no_staging
from jobs.rules.models import excluded_groups

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
COLUMNS = ["date", "cluster", "group", "topic", "broker_name", "queue_id", "as_of", "backlog",
           "arrival_rate", "drain_rate", "trend", "clears_at", "no_clear_reason", "loss_at",
           "lost_messages", "deciding_queue", "consumers_to_add", "queues_to_add", "advice"]
SCHEMA = StructType([StructField(name, kind) for name, kind in (
    ("date", DateType()), ("cluster", StringType()), ("group", StringType()),
    ("topic", StringType()), ("broker_name", StringType()), ("queue_id", IntegerType()),
    ("as_of", TimestampType()), ("backlog", LongType()), ("arrival_rate", DoubleType()),
    ("drain_rate", DoubleType()), ("trend", StringType()), ("clears_at", TimestampType()),
    ("no_clear_reason", StringType()), ("loss_at", TimestampType()),
    ("lost_messages", LongType()), ("deciding_queue", StringType()),
    ("consumers_to_add", IntegerType()), ("queues_to_add", IntegerType()),
    ("advice", StringType()))])
FINDING_COLUMNS = ["date", "cluster", "group", "topic", "finding", "severity", "as_of",
                   "queues", "text"]


@dataclass(frozen=True)
class Retention:
    """One cluster's commit-log retention (``jobs.settings.ClusterRetention``)."""

    file_reserved_hours: int = 72
    delete_when_hour: int = 4
    timezone: str = "UTC"


@dataclass(frozen=True)
class ForecastRules:
    cleared_lag: int = 100
    window_minutes: int = 60
    flat_fraction: float = 0.05
    min_backlog: int = 1000
    loss_warn_hours: int = 24
    loss_critical_hours: int = 6
    clear_by: str = "08:00"
    clear_by_timezone: str = "UTC"
    retention: Retention = Retention()
    # per-cluster retention overriding ``retention``
    clusters: dict[str, Retention] = field(default_factory=dict)


def forecast_rules(settings) -> ForecastRules:
    """The rules of ``settings.forecast`` and ``settings.retention``."""
    f, r = settings.forecast, settings.retention

    def of(c) -> Retention:
        return Retention(c.file_reserved_hours, c.delete_when_hour, c.timezone)

    return ForecastRules(f.cleared_lag, f.window_minutes, f.flat_fraction, f.min_backlog,
                         f.loss_warn_hours, f.loss_critical_hours, f.clear_by,
                         f.clear_by_timezone, of(r),
                         {name: of(c) for name, c in r.clusters.items()})


def _trend(arrival: Column, drain: Column, flat_fraction: float) -> Column:
    net = drain - arrival
    band = F.greatest(arrival, drain) * F.lit(flat_fraction)
    return (F.when(arrival.isNull() | drain.isNull(), F.lit(None).cast("string"))
            .when(net > band, F.lit("DRAINING"))
            .when(net < -band, F.lit("GROWING"))
            .otherwise(F.lit("FLAT")))


def _loss_at(stored: Column, retention: Retention) -> Column:
    """The first ``delete_when_hour`` (local to the retention's zone) at or after ``stored`` +
    ``file_reserved_hours``, as a UTC timestamp."""
    expires = stored + F.expr(f"INTERVAL {retention.file_reserved_hours} HOURS")
    local = F.from_utc_timestamp(expires, retention.timezone)
    same_day = F.to_timestamp(F.date_trunc("day", local)) + F.expr(
        f"INTERVAL {retention.delete_when_hour} HOURS")
    at = F.when(same_day >= local, same_day).otherwise(same_day + F.expr("INTERVAL 1 DAYS"))
    return F.to_utc_timestamp(at, retention.timezone)


def loss_at(stored: Column, cluster: Column, rules: ForecastRules) -> Column:
    """``_loss_at`` under each cluster's retention (``rules.clusters``, else ``rules.retention``)."""
    result = _loss_at(stored, rules.retention)
    for name, retention in sorted(rules.clusters.items(), reverse=True):
        result = F.when(cluster == F.lit(name), _loss_at(stored, retention)).otherwise(result)
    return result


def _after(ts: Column, seconds: Column) -> Column:
    return F.timestamp_millis((F.unix_millis(ts) + seconds * F.lit(1000.0)).cast("long"))


def queue_forecasts(queue_offsets_df: DataFrame, rules: ForecastRules,
                    stuck_df: DataFrame | None = None, orphaned_df: DataFrame | None = None,
                    models_df: DataFrame | None = None) -> DataFrame:
    """silver.queue_offsets of one day (``QUEUE_KEY``, ``ts``, ``broker_offset``,
    ``consumer_offset``, ``lag``, ``last_consumed_at``, ``min_offset``, ``date``) → one row per
    queue behind at ``as_of`` (the module's rules), ``COLUMNS`` less the group-only ones filled
    with null. ``stuck_df`` (gold.stuck_queues), ``orphaned_df`` (gold.orphaned_queues) give the
    STUCK and NO_OWNER reasons; ``models_df`` (``jobs.rules.models.consumer_models``) removes the
    broadcasting and pop groups."""
    rated = queue_rates(queue_offsets_df, rules, models_df).where(
        F.col("backlog") > rules.cleared_lag)
    rated = rated.withColumn("trend", _trend(F.col("arrival_rate"), F.col("drain_rate"),
                                             rules.flat_fraction))
    rated = _with_episode(rated, orphaned_df, "first_seen", "_orphaned")
    rated = _with_episode(rated, stuck_df, "stuck_since", "_stuck")
    reason = (F.when(F.col("_orphaned"), F.lit("NO_OWNER"))
              .when(F.col("_stuck"), F.lit("STUCK"))
              .when(F.col("trend") == "DRAINING", F.lit(None).cast("string"))
              .otherwise(F.coalesce(F.col("trend"), F.lit("FLAT"))))
    net = F.col("drain_rate") - F.col("arrival_rate")
    lost = F.when(F.col("_min_offset").isNotNull(),
                  F.greatest(F.col("_min_offset") - F.col("_consumer_offset"), F.lit(0)))
    return rated.select(
        "date", *QUEUE_KEY, "as_of", "backlog", "arrival_rate", "drain_rate", "trend",
        F.when(reason.isNull(), _after(F.col("as_of"), (F.col("backlog") - rules.cleared_lag) / net))
        .alias("clears_at"),
        reason.alias("no_clear_reason"),
        loss_at(F.col("_last_consumed_at"), F.col("cluster"), rules).alias("loss_at"),
        lost.cast("long").alias("lost_messages"),
        F.lit(None).cast("string").alias("deciding_queue"),
        F.lit(None).cast("int").alias("consumers_to_add"),
        F.lit(None).cast("int").alias("queues_to_add"),
        F.lit(None).cast("string").alias("advice"))


def queue_rates(queue_offsets_df: DataFrame, rules: ForecastRules,
                models_df: DataFrame | None = None) -> DataFrame:
    """Every queue's ``as_of``, ``backlog`` and rates over the window (module docstring),
    caught up or not, with ``_consumer_offset``, ``_min_offset``, ``_last_consumed_at`` at
    ``as_of``; without the groups ``models_df`` says own no queues (broadcasting, pop)."""
    offsets = queue_offsets_df
    if "min_offset" not in offsets.columns:  # optional (§3.1): unknown
        offsets = offsets.withColumn("min_offset", F.lit(None).cast("long"))
    if models_df is not None:
        offsets = offsets.join(excluded_groups(models_df), on=["cluster", "group"],
                               how="left_anti")
    by_queue = Window.partitionBy(*QUEUE_KEY)
    recent = (offsets.withColumn("_as_of", F.max("ts").over(by_queue))
              .where(F.col("ts") >= F.col("_as_of")
                     - F.expr(f"INTERVAL {rules.window_minutes} MINUTES")))
    ends = recent.groupBy(*QUEUE_KEY, "date").agg(
        F.min(F.struct("ts", "broker_offset", "consumer_offset")).alias("_first"),
        F.max(F.struct("ts", "broker_offset", "consumer_offset", "lag", "min_offset",
                       "last_consumed_at")).alias("_last"))
    seconds = (F.unix_millis("_last.ts") - F.unix_millis("_first.ts")) / F.lit(1000.0)
    return ends.select(
        *QUEUE_KEY, "date", F.col("_last.ts").alias("as_of"), F.col("_last.lag").alias("backlog"),
        F.when(seconds > 0, (F.col("_last.broker_offset") - F.col("_first.broker_offset"))
               / seconds).alias("arrival_rate"),
        F.when(seconds > 0, (F.col("_last.consumer_offset") - F.col("_first.consumer_offset"))
               / seconds).alias("drain_rate"),
        F.col("_last.consumer_offset").alias("_consumer_offset"),
        F.col("_last.min_offset").alias("_min_offset"),
        F.col("_last.last_consumed_at").alias("_last_consumed_at"))


def _with_episode(df: DataFrame, episodes_df: DataFrame | None, start: str,
                  flag: str) -> DataFrame:
    """``df`` with boolean ``flag``: an episode of ``episodes_df`` on the queue holds at
    ``as_of``: it began at or before it, its ``last_seen`` snapshot is not before it, and it
    was not released (``released_at``, stuck episodes) at or before it."""
    if episodes_df is None:
        return df.withColumn(flag, F.lit(False))
    released = (F.col("released_at") if "released_at" in episodes_df.columns
                else F.lit(None).cast("timestamp"))
    episodes = episodes_df.select(*QUEUE_KEY, F.col(start).alias("_start"),
                                  F.col("last_seen").alias("_end"), released.alias("_released"))
    holds = (df.select(*QUEUE_KEY, "as_of").join(episodes, on=QUEUE_KEY)
             .where((F.col("_start") <= F.col("as_of")) & (F.col("_end") >= F.col("as_of"))
                    & (F.col("_released").isNull() | (F.col("_released") > F.col("as_of"))))
             .select(*QUEUE_KEY).distinct().withColumn(flag, F.lit(True)))
    return (df.join(holds, on=QUEUE_KEY, how="left")
            .withColumn(flag, F.coalesce(F.col(flag), F.lit(False))))


def _ordered_sum(column: str) -> Column:
    """The sum of a double column, added in ascending order (null when every value is null): a
    plain ``sum`` adds in the order rows arrive, so a day run in batches of groups and the same
    day in one pass could differ in the last bit (tests/reliability/test_reruns.py)."""
    values = F.array_sort(F.collect_list(column))
    return F.when(F.size(values) > 0,
                  F.aggregate(values, F.lit(0.0), lambda acc, x: acc + x))


def topic_forecasts(queue_rows_df: DataFrame, rules: ForecastRules) -> DataFrame:
    """Queue rows (``queue_forecasts``) → one row per group × topic (module docstring)."""
    never = F.timestamp_millis(F.lit(0))
    decides = F.struct(F.col("clears_at").isNull().alias("_never"),
                       F.coalesce(F.col("clears_at"), never).alias("_at"),
                       F.col("backlog").alias("_backlog"), F.col("broker_name").alias("_broker"),
                       F.col("queue_id").alias("_queue"),
                       F.col("no_clear_reason").alias("_reason"))
    sums = queue_rows_df.groupBy("date", "cluster", "group", "topic").agg(
        F.max("as_of").alias("as_of"), F.sum("backlog").alias("backlog"),
        _ordered_sum("arrival_rate").alias("arrival_rate"),
        _ordered_sum("drain_rate").alias("drain_rate"),
        F.max(decides).alias("_decides"), F.min("loss_at").alias("loss_at"),
        F.sum("lost_messages").alias("lost_messages"))
    return sums.select(
        "date", "cluster", "group", "topic", F.lit(None).cast("string").alias("broker_name"),
        F.lit(None).cast("int").alias("queue_id"), "as_of", "backlog", "arrival_rate",
        "drain_rate", _trend(F.col("arrival_rate"), F.col("drain_rate"), rules.flat_fraction)
        .alias("trend"),
        F.when(~F.col("_decides._never"), F.col("_decides._at")).alias("clears_at"),
        F.col("_decides._reason").alias("no_clear_reason"), "loss_at",
        F.col("lost_messages").cast("long").alias("lost_messages"),
        F.concat_ws("/", F.col("_decides._broker"), F.col("_decides._queue").cast("string"))
        .alias("deciding_queue"),
        F.lit(None).cast("int").alias("consumers_to_add"),
        F.lit(None).cast("int").alias("queues_to_add"),
        F.lit(None).cast("string").alias("advice"))


def build_backlog_forecast(queue_offsets_df: DataFrame, rules: ForecastRules,
                           stuck_df: DataFrame | None = None,
                           orphaned_df: DataFrame | None = None,
                           models_df: DataFrame | None = None,
                           member_context_df: DataFrame | None = None,
                           consume_status_df: DataFrame | None = None,
                           stage: Stage = no_staging) -> DataFrame:
    """gold.backlog_forecast: the queue rows of ``queue_forecasts`` and their group × topic rows
    (``topic_forecasts``), ``COLUMNS``; with silver.member_context and silver.consume_status the
    group × topic rows carry the capacity advice (``jobs.gold.capacity_advice``). ``stage(df,
    name)`` stores the queue rows and rates, which the advice reads several times."""
    queues = stage(queue_forecasts(queue_offsets_df, rules, stuck_df, orphaned_df, models_df),
                   "gold.backlog_forecast.queues")
    topics = topic_forecasts(queues, rules)
    # only topics whose queues behind all have an owner that moves get advice (the others are
    # pointed at their incident); with none (most days, most groups) the replay's queries,
    # seconds each on classic Spark, are skipped
    blocked = (queues.where(F.col("no_clear_reason").isin("NO_OWNER", "STUCK"))
               .select("cluster", "group", "topic").distinct())
    advisable = stage(topics.join(blocked, on=["cluster", "group", "topic"], how="left_anti"),
                      "gold.backlog_forecast.topics")
    if member_context_df is not None and consume_status_df is not None \
            and advisable.limit(1).count() > 0:
        rates = stage(queue_rates(queue_offsets_df, rules, models_df),
                      "gold.backlog_forecast.rates")
        advice = build_capacity_advice(
            advisable, rates, queues, member_context_df,
            consume_status_df, rules.window_minutes, rules.cleared_lag, rules.clear_by,
            rules.clear_by_timezone, models_df, stage)
        topics = (topics.drop("consumers_to_add", "queues_to_add", "advice")
                  .join(advice.select(*ADVICE_COLUMNS), on=["cluster", "group", "topic"],
                        how="left"))
    if member_context_df is not None and consume_status_df is not None:
        topics = without_capacity_advice_when_blocked(topics, queues)
    return queues.select(*COLUMNS).unionByName(topics.select(*COLUMNS))


def without_capacity_advice_when_blocked(topics_df: DataFrame, queue_rows_df: DataFrame
                                         ) -> DataFrame:
    """A topic with an orphaned or stuck queue behind gets no capacity advice: consumers added
    would not drain that queue (nobody owns it, or its offset is pinned); the advice names the
    queue and points at its incident instead."""
    blocked = (queue_rows_df.where(F.col("no_clear_reason").isin("NO_OWNER", "STUCK"))
               .groupBy("cluster", "group", "topic")
               .agg(F.min(F.struct(F.col("no_clear_reason").alias("reason"),
                                   F.concat_ws("/", F.col("broker_name"),
                                               F.col("queue_id").cast("string")).alias("queue")))
                    .alias("_blocked"), F.count(F.lit(1)).alias("_blocked_n")))
    kind = F.when(F.col("_blocked.reason") == "NO_OWNER", F.lit("ORPHANED")).otherwise(F.lit("STUCK"))
    others = F.when(F.col("_blocked_n") > 1, F.concat(
        F.lit(" (and "), (F.col("_blocked_n") - 1).cast("string"), F.lit(" more)"))).otherwise(F.lit(""))
    advice = F.concat(
        F.col("_blocked.queue"), others,
        F.when(F.col("_blocked.reason") == "NO_OWNER", F.lit(" has no live owner"))
        .otherwise(F.lit(" is stuck")),
        F.lit(": more consumers do not drain it; fix its "), kind, F.lit(" incident first"))
    joined = topics_df.join(blocked, on=["cluster", "group", "topic"], how="left")
    is_blocked = F.col("_blocked").isNotNull()
    return joined.select(
        *[F.when(is_blocked, F.lit(None).cast("int")).otherwise(F.col(c)).alias(c)
          if c in ("consumers_to_add", "queues_to_add")
          else F.when(is_blocked, advice).otherwise(F.col(c)).alias(c) if c == "advice"
          else F.col(c) for c in topics_df.columns])


def hours_minutes(seconds: Column) -> Column:
    """``"5 h 07 min"`` / ``"42 min"`` for a number of seconds (rounded to the minute, ≥ 0)."""
    minutes = F.greatest(F.round(seconds / 60.0), F.lit(0.0)).cast("long")
    hours = F.floor(minutes / 60).cast("long")
    rest = (minutes - hours * 60).cast("long")
    return F.when(hours > 0, F.concat(hours.cast("string"), F.lit(" h "),
                                      F.lpad(rest.cast("string"), 2, "0"), F.lit(" min"))
                  ).otherwise(F.concat(rest.cast("string"), F.lit(" min")))


def _in(later: Column, earlier: Column) -> Column:
    return (F.unix_millis(later) - F.unix_millis(earlier)) / F.lit(1000.0)


def backlog_findings(forecast_df: DataFrame, rules: ForecastRules) -> DataFrame:
    """gold.backlog_forecast's group × topic rows → the §5.4 findings, ``FINDING_COLUMNS``
    (``text``: the line ``group_health.findings`` shows, durations in hours and minutes)."""
    topics = forecast_df.where(F.col("queue_id").isNull())
    # "topic/broker/queue" of the deciding queue, and of the queues that lost messages
    deciding = F.array(F.concat_ws("/", F.col("topic"), F.col("deciding_queue"))).alias("queues")
    lost_queues = (forecast_df.where(F.col("queue_id").isNotNull() & (F.col("lost_messages") > 0))
                   .groupBy("date", "cluster", "group", "topic")
                   .agg(F.sort_array(F.collect_list(F.concat_ws(
                       "/", F.col("topic"), F.col("broker_name"), F.col("queue_id").cast("string"))))
                       .alias("queues")))
    # what it comes to: when it clears at today's rates, and the capacity advice
    clears = F.when(F.col("clears_at").isNotNull(), F.concat(
        F.lit("; clears ~"), F.date_format("clears_at", "HH:mm"), F.lit(" UTC at today's rate (in "),
        hours_minutes(_in(F.col("clears_at"), F.col("as_of"))), F.lit(")"))).otherwise(F.lit(""))
    advice = F.when(F.col("advice").isNotNull(), F.concat(F.lit("; "), F.col("advice"))) \
        .otherwise(F.lit(""))
    where = F.concat(F.lit(" "), F.col("topic"), F.lit(" (deciding "), F.col("deciding_queue"),
                     F.lit(")"))
    growing = topics.where((F.col("backlog") >= rules.min_backlog)
                           & F.col("trend").isin("GROWING", "FLAT")).select(
        "date", "cluster", "group", "topic", F.lit("BACKLOG_GROWING").alias("finding"),
        F.lit("WARN").alias("severity"), "as_of", deciding,
        F.concat(F.lit("WARN backlog BACKLOG_GROWING"), where, F.lit(": "),
                 F.col("backlog").cast("string"), F.lit(" behind, "), F.lower("trend"),
                 F.lit(" (drain "), F.format_number("drain_rate", 1), F.lit("/s, arrival "),
                 F.format_number("arrival_rate", 1), F.lit("/s)"), advice).alias("text"))
    left = _in(F.col("loss_at"), F.col("as_of"))
    risk_severity = (F.when(left <= rules.loss_critical_hours * 3600, F.lit("CRITICAL"))
                     .when(left <= rules.loss_warn_hours * 3600, F.lit("WARN")))
    risk = topics.where(F.col("loss_at").isNotNull() & risk_severity.isNotNull()).select(
        "date", "cluster", "group", "topic", F.lit("LOSS_RISK").alias("finding"),
        risk_severity.alias("severity"), "as_of", deciding,
        F.concat(risk_severity, F.lit(" backlog LOSS_RISK"), where,
                 F.lit(": unread messages deleted at "),
                 F.date_format("loss_at", "yyyy-MM-dd HH:mm"), F.lit(" UTC, in "),
                 hours_minutes(left), F.lit(" (retention; earlier if disk use passes "
                                            "diskMaxUsedSpaceRatio)"), clears, advice)
        .alias("text"))
    lost = topics.where(F.col("lost_messages") > 0).join(
        lost_queues, on=["date", "cluster", "group", "topic"]).select(
        "date", "cluster", "group", "topic", F.lit("MESSAGES_LOST").alias("finding"),
        F.lit("CRITICAL").alias("severity"), "as_of", "queues",
        F.concat(F.lit("CRITICAL backlog MESSAGES_LOST "), F.col("topic"), F.lit(": "),
                 F.col("lost_messages").cast("string"),
                 F.lit(" messages below the queues' min offset (deleted before consumed)"))
        .alias("text"))
    return growing.unionByName(risk).unionByName(lost).select(*FINDING_COLUMNS)
