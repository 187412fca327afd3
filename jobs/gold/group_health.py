"""gold.group_health: one row per group and day — status, counts and a short findings list.

DESIGN.md §4: ``status`` is the highest severity of the group's findings that day, INFO counts
as OK, ``OK`` without findings. Findings are the rows of gold.orphaned_queues,
gold.double_owned_queues and gold.stuck_queues (their own ``severity``), plus two from
gold.rebalance_events, both WARN:
- a flapping subscription table (``flaps_per_hour`` set): every flip makes the whole group
  rebalance (facts §4, the topicB case), a misconfiguration whatever it moves;
- churn: ``rebalance_warn_count`` or more rebalance events in the day.
Other rebalance events are INFO. An abandoned group (``jobs.rules.abandoned``: nobody connected
all day, nothing produced, an old backlog) gets one INFO note instead of per-queue findings.
Producer findings (gold.producer_findings, DESIGN.md §5.2) are listed for every group in their
``groups`` (the groups consuming the topic), with their own severity: only a WARN one (a hot queue
whose owner falls behind, a broker starved for ``starved_warn_minutes``) raises the status.
A broker group's master down (DESIGN.md §5.3) gives every group with queues on that broker
during the window ``<SEVERITY> BROKER_MASTER_DOWN <broker> <from>–<to>`` (UTC, ``open`` while not
back): INFO, or the severity of the group's MASTER_DOWN stuck queues on that broker.
Every group seen in silver.queue_offsets that day has a row, and so has a broadcasting group
seen only in connections or running info (it never commits to the broker: no offsets at all).

Consumer models (issue #18, docs/consumer-models.md): a BROADCASTING group's clients keep their
offsets in ``LocalFileOffsetStore``, so the broker's lag of such a group is no consumption
measure: ``max_lag`` and ``max_time_lag_seconds`` are null and one INFO finding says why, with
the broker's number. Data-quality findings (a host whose client-log clock is whole hours off
running_info, ``jobs.rules.clocks``) are INFO lines. ``sources`` lists the landing sources the
group's day rests on (``jobs.rules.sources``), so a reader knows how sure a finding is.

``findings``: one short string per (kind, severity, topic, root cause), most severe first, at
most ``max_findings`` (then ``+N more``). Counts are distinct queues of each finding table,
every severity included; ``rebalances`` counts gold.rebalance_events rows.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

COLUMNS = ["status", "orphaned_queues", "double_owned_queues", "stuck_queues", "max_lag",
           "max_time_lag_seconds", "rebalances", "findings", "sources", "cluster", "group", "date"]
DAY_KEY = ["cluster", "group", "date"]
RANKS = {"INFO": 1, "WARN": 2, "CRITICAL": 3}


def _rank(severity: Column) -> Column:
    expr = F.lit(0)
    for name, rank in RANKS.items():
        expr = F.when(severity == name, F.lit(rank)).otherwise(expr)
    return expr


def _queue_findings(df: DataFrame, kind: str, minutes: str) -> DataFrame:
    """Per (group, day, severity, topic, root cause): ``<SEVERITY> <kind> <topic> ×<queues>
    <ROOT_CAUSE> (up to <m> min)``."""
    grouped = df.groupBy(*DAY_KEY, "severity", "topic", "root_cause").agg(
        F.count_distinct("broker_name", "queue_id").alias("_queues"),
        F.max(minutes).alias("_minutes"))
    text = F.concat(F.col("severity"), F.lit(f" {kind} "), F.col("topic"), F.lit(" ×"),
                    F.col("_queues").cast("string"), F.lit(" "), F.col("root_cause"),
                    F.lit(" (up to "), F.round("_minutes", 1).cast("string"), F.lit(" min)"))
    return grouped.select(*DAY_KEY, _rank(F.col("severity")).alias("rank"), text.alias("text"))


def _rebalance_findings(events_df: DataFrame, rebalance_warn_count: int) -> DataFrame:
    is_flapping = F.col("flaps_per_hour").isNotNull()
    single = events_df.select(
        *DAY_KEY,
        F.when(is_flapping, F.lit(RANKS["WARN"])).otherwise(F.lit(RANKS["INFO"])).alias("rank"),
        F.when(is_flapping, F.concat(
            F.lit("WARN flapping "), F.col("topic"), F.lit(" "), F.col("trigger"), F.lit(" "),
            F.col("flaps_per_hour").cast("string"), F.lit("/h")))
        .otherwise(F.concat(
            F.lit("INFO rebalance "), F.col("topic"), F.lit(" "), F.col("trigger"), F.lit(" at "),
            F.date_format("ts", "HH:mm:ss"), F.lit(" moved "),
            F.col("queues_moved").cast("string"))).alias("text"))
    churn = (events_df.groupBy(*DAY_KEY).agg(F.count(F.lit(1)).alias("_n"))
             .where(F.col("_n") >= rebalance_warn_count)
             .select(*DAY_KEY, F.lit(RANKS["WARN"]).alias("rank"),
                     F.concat(F.lit("WARN churn "), F.col("_n").cast("string"),
                              F.lit(" rebalances")).alias("text")))
    return single.unionByName(churn)


def _abandoned_findings(abandoned_df: DataFrame) -> DataFrame:
    return abandoned_df.select(*DAY_KEY, F.lit(RANKS["INFO"]).alias("rank"), F.concat(
        F.lit("INFO abandoned: no consumer connected all day and nothing produced; backlog "),
        F.col("backlog").cast("string"), F.lit(" on "), F.col("lagging_queues").cast("string"),
        F.lit(" queues")).alias("text"))


def _producer_findings(producer_df: DataFrame) -> DataFrame:
    """``<SEVERITY> producer <FINDING> <topic>[ <broker>[/<queue>]] (<m> min)``, per consuming group."""
    where = F.concat_ws("/", F.col("broker_name"), F.col("queue_id").cast("string"))
    text = F.concat(F.col("severity"), F.lit(" producer "), F.col("finding"), F.lit(" "), F.col("topic"),
                    F.when(where != "", F.concat(F.lit(" "), where)).otherwise(F.lit("")),
                    F.lit(" ("), F.round("minutes", 1).cast("string"), F.lit(" min)"))
    return producer_df.select("cluster", F.explode("groups").alias("group"), "date",
                              _rank(F.col("severity")).alias("rank"), text.alias("text"))


def _broadcast_findings(groups_df: DataFrame, models_df: DataFrame) -> DataFrame:
    """One INFO line per broadcasting group: why its lag is null."""
    broadcast = models_df.where("broadcasting").select("cluster", "group")
    return groups_df.join(broadcast, on=["cluster", "group"], how="inner").select(
        *DAY_KEY, F.lit(RANKS["INFO"]).alias("rank"), F.concat(
            F.lit("INFO broadcast: offsets live on the clients (LocalFileOffsetStore); the broker's "
                  "lag "), F.coalesce(F.col("max_lag").cast("string"), F.lit("n/a")),
            F.lit(" is not consumption")).alias("text"))


def _master_down_findings(master_down_df: DataFrame, stuck_df: DataFrame) -> DataFrame:
    """``<SEVERITY> BROKER_MASTER_DOWN <broker> <HH:mm>–<HH:mm|open>`` per group and window."""
    stuck = (stuck_df.where(F.col("root_cause") == "MASTER_DOWN")
             .groupBy(*DAY_KEY, "broker_name").agg(F.max(_rank(F.col("severity"))).alias("_r")))
    rank = F.greatest(F.coalesce("_r", F.lit(RANKS["INFO"])), F.lit(RANKS["INFO"]))
    severity = (F.when(rank == RANKS["CRITICAL"], F.lit("CRITICAL"))
                .when(rank == RANKS["WARN"], F.lit("WARN")).otherwise(F.lit("INFO")))
    until = F.coalesce(F.date_format("down_until", "HH:mm"), F.lit("open"))
    return (master_down_df.join(stuck, on=[*DAY_KEY, "broker_name"], how="left")
            .select(*DAY_KEY, rank.alias("rank"), F.concat(
                severity, F.lit(" BROKER_MASTER_DOWN "), F.col("broker_name"), F.lit(" "),
                F.date_format("down_from", "HH:mm"), F.lit("–"), until).alias("text")))


def _uncommitted_broadcast_groups(groups_df: DataFrame, models_df: DataFrame,
                                  sources_df: DataFrame) -> DataFrame:
    """``DAY_KEY, max_lag, max_time_lag_seconds`` (both null) of each broadcasting group seen that
    day in a source other than the offsets and absent from them: its clients keep their offsets
    locally and never commit to the broker, so ``consumerProgress`` has nothing to print
    (4.9.7: ``CODE: 206 … offset table is empty``; tests/data/real-cluster/README.md
    difference 3), yet the group is there and gets its row (facts §2.4)."""
    broadcast = models_df.where("broadcasting").select("cluster", "group")
    return (sources_df.select(*DAY_KEY).distinct()
            .join(broadcast, on=["cluster", "group"], how="left_semi")
            .join(groups_df.select(*DAY_KEY), on=DAY_KEY, how="left_anti")
            .select(*DAY_KEY, F.lit(None).cast("long").alias("max_lag"),
                    F.lit(None).cast("double").alias("max_time_lag_seconds")))


def _distinct_queues(df: DataFrame, name: str) -> DataFrame:
    return df.groupBy(*DAY_KEY).agg(
        F.count_distinct("topic", "broker_name", "queue_id").alias(name))


def build_group_health(orphaned_df: DataFrame, double_owned_df: DataFrame, stuck_df: DataFrame,
                       rebalance_events_df: DataFrame, queue_offsets_df: DataFrame,
                       rebalance_warn_count: int, max_findings: int = 10,
                       abandoned_df: DataFrame | None = None,
                       producer_df: DataFrame | None = None,
                       models_df: DataFrame | None = None,
                       sources_df: DataFrame | None = None,
                       data_quality_df: DataFrame | None = None,
                       master_down_df: DataFrame | None = None,
                       backlog_df: DataFrame | None = None) -> DataFrame:
    """The gold finding tables (DESIGN.md §4 columns; only keys, ``severity``, ``root_cause``,
    minutes and the rebalance columns are read) and silver.queue_offsets in, gold.group_health
    out; ``producer_df``: gold.producer_findings; ``models_df``: ``jobs.rules.models``;
    ``sources_df``: ``jobs.rules.sources.group_sources``; ``data_quality_df``: ``cluster, group,
    date, text`` INFO lines (``jobs.rules.clocks``); ``master_down_df``: the groups each
    master-down window hit (``jobs.rules.master_down.groups_on_down_brokers``); ``backlog_df``:
    the backlog findings (``jobs.gold.backlog_forecast.backlog_findings``, DESIGN.md §5.4)."""
    groups = queue_offsets_df.groupBy(*DAY_KEY).agg(
        F.max("lag").alias("max_lag"), F.max("time_lag_seconds").alias("max_time_lag_seconds"))
    if models_df is not None and sources_df is not None:
        groups = groups.unionByName(_uncommitted_broadcast_groups(groups, models_df, sources_df))
    findings = (_queue_findings(orphaned_df, "orphaned", "orphaned_minutes")
                .unionByName(_queue_findings(double_owned_df, "double-owned", "minutes"))
                .unionByName(_queue_findings(stuck_df, "stuck", "stuck_minutes"))
                .unionByName(_rebalance_findings(rebalance_events_df, rebalance_warn_count)))
    if abandoned_df is not None:
        findings = findings.unionByName(_abandoned_findings(abandoned_df))
    if producer_df is not None:
        findings = findings.unionByName(_producer_findings(producer_df))
    if models_df is not None:
        findings = findings.unionByName(_broadcast_findings(groups, models_df))
        broadcast = models_df.where("broadcasting").select(
            "cluster", "group", F.lit(True).alias("_broadcast"))
        groups = groups.join(broadcast, on=["cluster", "group"], how="left").select(
            *DAY_KEY,
            *[F.when(F.col("_broadcast"), F.lit(None)).otherwise(F.col(c)).alias(c)
              for c in ("max_lag", "max_time_lag_seconds")])
    if data_quality_df is not None:
        findings = findings.unionByName(data_quality_df.select(
            *DAY_KEY, F.lit(RANKS["INFO"]).alias("rank"), "text"))
    if master_down_df is not None:
        findings = findings.unionByName(_master_down_findings(master_down_df, stuck_df))
    if backlog_df is not None:
        findings = findings.unionByName(backlog_df.select(
            *DAY_KEY, _rank(F.col("severity")).alias("rank"), "text"))
    listed = findings.groupBy(*DAY_KEY).agg(
        F.max("rank").alias("_rank"),
        F.transform(F.array_sort(F.collect_list(F.struct((-F.col("rank")).alias("k"), "text"))),
                    lambda f: f["text"]).alias("_all"))
    shown = F.when(F.size("_all") > max_findings, F.concat(
        F.slice("_all", 1, max_findings),
        F.array(F.concat(F.lit("+"), (F.size("_all") - max_findings).cast("string"),
                         F.lit(" more"))))).otherwise(F.col("_all"))
    if sources_df is None:
        sources_df = queue_offsets_df.select(*DAY_KEY).distinct().withColumn(
            "sources", F.array(F.lit("offsets")))
    rebalances = rebalance_events_df.groupBy(*DAY_KEY).agg(
        F.count(F.lit(1)).alias("rebalances"))
    status = (F.when(F.col("_rank") == RANKS["CRITICAL"], F.lit("CRITICAL"))
              .when(F.col("_rank") == RANKS["WARN"], F.lit("WARN"))
              .otherwise(F.lit("OK")))
    return (groups
            .join(_distinct_queues(orphaned_df, "orphaned_queues"), on=DAY_KEY, how="left")
            .join(_distinct_queues(double_owned_df, "double_owned_queues"), on=DAY_KEY,
                  how="left")
            .join(_distinct_queues(stuck_df, "stuck_queues"), on=DAY_KEY, how="left")
            .join(rebalances, on=DAY_KEY, how="left")
            .join(listed, on=DAY_KEY, how="left")
            .join(sources_df.select(*DAY_KEY, "sources"), on=DAY_KEY, how="left")
            .select(status.alias("status"),
                    F.coalesce("orphaned_queues", F.lit(0)).cast("int").alias("orphaned_queues"),
                    F.coalesce("double_owned_queues", F.lit(0)).cast("int")
                    .alias("double_owned_queues"),
                    F.coalesce("stuck_queues", F.lit(0)).cast("int").alias("stuck_queues"),
                    "max_lag", "max_time_lag_seconds",
                    F.coalesce("rebalances", F.lit(0)).cast("int").alias("rebalances"),
                    F.coalesce(shown, F.array().cast("array<string>")).alias("findings"),
                    F.coalesce("sources", F.array(F.lit("offsets"))).alias("sources"),
                    *DAY_KEY))
