"""Which landing sources a group's day rests on (issue #18, ``gold.group_health.sources``).

A source is listed when the group has records of it that day: ``offsets`` (silver.queue_offsets,
which also carries consumerProgress ``-s``'s ``client_ip``), ``connections``
(silver.group_members), ``running_info`` (silver.client_config) and ``client_logs`` (ownership
claims from ``rebalanced result changed`` / ``[persistAll]`` lines in silver.queue_ownership). A
reader judges a finding by it: orphans on a group with offsets and connections only rest on
``client_ip`` alone and are at most INFO/UNKNOWN (DESIGN.md §5.1 "Evidence, not absence")."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SOURCE_ORDER = ("offsets", "connections", "running_info", "client_logs")
KEY = ["cluster", "group", "date"]


def group_sources(queue_offsets_df: DataFrame, members_df: DataFrame,
                  client_config_df: DataFrame, ownership_df: DataFrame) -> DataFrame:
    """``cluster, group, date, sources`` (array<string> in ``SOURCE_ORDER``)."""
    def present(df: DataFrame, name: str) -> DataFrame:
        return df.select(*KEY).distinct().withColumn("source", F.lit(name))

    logs = ownership_df.where(F.col("source") != "running_info")
    seen = (present(queue_offsets_df, "offsets")
            .unionByName(present(members_df, "connections"))
            .unionByName(present(client_config_df, "running_info"))
            .unionByName(present(logs, "client_logs")))
    found = seen.groupBy(*KEY).agg(F.collect_set("source").alias("_found"))
    ordered = F.filter(F.array(*[F.lit(s) for s in SOURCE_ORDER]),
                       lambda s: F.array_contains(F.col("_found"), s))
    return found.select(*KEY, ordered.alias("sources"))
