"""Consumer models (DESIGN.md §5.1 "Consumer models"), from every source that tells them.

- BROADCASTING: any record of the day says so — connections ``message_model`` or running_info
  ``properties.messageModel``. Every client takes every queue and stores its offsets locally
  (``LocalFileOffsetStore``), so broker offsets and queue ownership mean nothing (facts §2.4);
  its clients keep ``IP@DEFAULT``, so two JVMs on one host share an id (facts §3).
- pop: connections ``consume_type = CONSUME_POP`` (or running_info ``PROP_CONSUME_TYPE``): no
  exclusive queue ownership at all (facts §1.7, §2.7).
- pull / lite-pull: ``CONSUME_ACTIVELY`` from either source. ``assign()`` consumers never
  rebalance and pull consumers report no mq_table (their running info carries properties and
  subscriptions only), so a queue nobody claims is unknown, not orphaned: such a group is an
  orphan / double-owned candidate only when its members report an mq_table that day.
- orderly: running_info ``PROP_CONSUMEORDERLY=true`` (per client): no span flow control (facts
  §5.3; the stuck detector reads ``is_orderly`` from silver.client_config).

Broadcasting and pop groups get no orphaned, double-owned, stuck, what-if or rebalance findings.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

MODELS_SCHEMA = ("cluster string, group string, broadcasting boolean, pop boolean, "
                 "actively boolean, reports_mq_table boolean")


def _flags(df: DataFrame) -> DataFrame:
    return df.select(
        "cluster", "group",
        (F.upper(F.trim("message_model")) == "BROADCASTING").alias("_broadcasting"),
        (F.upper(F.trim("consume_type")) == "CONSUME_POP").alias("_pop"),
        (F.upper(F.trim("consume_type")) == "CONSUME_ACTIVELY").alias("_actively"),
        F.lit(False).alias("_mq_table"))


def consumer_models(members_df: DataFrame, client_config_df: DataFrame | None = None,
                    process_queues_df: DataFrame | None = None) -> DataFrame:
    """One row per group seen in any given source: ``cluster, group, broadcasting, pop,
    actively, reports_mq_table`` (booleans; false when no record says so).

    ``members_df``: silver.group_members (``message_model``, ``consume_type``);
    ``client_config_df``: silver.client_config (the same two from running_info properties);
    ``process_queues_df``: silver.process_queues (a row = a member reported an mq_table entry).
    A source a deployment does not collect is simply not passed."""
    flags = _flags(members_df)
    if client_config_df is not None:
        flags = flags.unionByName(_flags(client_config_df))
    if process_queues_df is not None:
        flags = flags.unionByName(process_queues_df.select(
            "cluster", "group", F.lit(False).alias("_broadcasting"), F.lit(False).alias("_pop"),
            F.lit(False).alias("_actively"), F.lit(True).alias("_mq_table")))

    def any_of(name: str) -> F.Column:
        return F.coalesce(F.max(F.col(name).cast("int")), F.lit(0)) == 1

    return flags.groupBy("cluster", "group").agg(
        any_of("_broadcasting").alias("broadcasting"), any_of("_pop").alias("pop"),
        any_of("_actively").alias("actively"), any_of("_mq_table").alias("reports_mq_table"))


def excluded_groups(models_df: DataFrame) -> DataFrame:
    """``cluster, group`` of the groups without exclusive queue ownership (broadcasting, pop):
    no orphaned, double-owned, stuck, what-if or rebalance findings."""
    return (models_df.where(F.col("broadcasting") | F.col("pop"))
            .select("cluster", "group").distinct())


def ownership_unknown_groups(models_df: DataFrame) -> DataFrame:
    """``cluster, group`` that are no orphan / double-owned candidates: ``excluded_groups`` plus
    the pull / lite-pull groups whose members report no mq_table (who holds a queue is not
    told anywhere, so an unclaimed queue proves nothing)."""
    return (models_df.where(F.col("broadcasting") | F.col("pop")
                            | (F.col("actively") & ~F.col("reports_mq_table")))
            .select("cluster", "group").distinct())


def without_groups(df: DataFrame, groups_df: DataFrame) -> DataFrame:
    """``df`` without the rows of the groups in ``groups_df`` (``cluster, group``)."""
    return df.join(groups_df.select("cluster", "group"), on=["cluster", "group"], how="left_anti")
