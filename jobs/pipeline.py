"""The nightly pipeline for one day: landing → bronze → silver → gold.

Frame builders (``bronze_frames``, ``silver_frames``) are pure wiring of transforms and can be
used without Delta; ``run_day`` adds the edges: it replaces each layer's day partition
(``lake.write_day``) and reads bronze back for silver, so a rerun of a day replaces, never appends.
A run killed anywhere is repaired by running the day again (docs/operations.md, Failure modes).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from jobs import lake
from jobs.gold.backlog_forecast import SCHEMA as FORECAST_SCHEMA
from jobs.gold.backlog_forecast import backlog_findings, build_backlog_forecast, forecast_rules
from jobs.gold.double_owned_queues import build_double_owned_queues
from jobs.gold.forecast_accuracy import build_forecast_accuracy
from jobs.gold.group_context import build_group_context
from jobs.gold.group_health import build_group_health
from jobs.gold.incidents import SCHEMA as INCIDENTS_SCHEMA
from jobs.gold.incidents import build_incidents
from jobs.gold.orphaned_queues import OrphanRules, explain_orphan_episodes, orphaned_snapshots_of_day
from jobs.gold.producer_findings import build_producer_findings, orderly_groups, producer_rules
from jobs.gold.queue_load import build_queue_load, queue_intervals
from jobs.gold.rebalance_events import RebalanceRules, build_rebalance_events
from jobs.gold.strategy_whatif import build_strategy_whatif
from jobs.gold.stuck_queues import StuckRules, explain_stuck_episodes, lasting_stuck_episodes
from jobs.ingest.client_log_records import ingest_client_logs
from jobs.ingest.json_sources import SourceFrames, ingest_json_source
from jobs.ingest.landing_files import union_all
from jobs.ingest.landing_source import read_partitions
from jobs.rules.abandoned import abandoned_groups, without_abandoned
from jobs.rules.clocks import (
    CLOCK_SKEW_SCHEMA,
    clock_findings,
    host_clock_skew,
    without_skewed_hosts,
)
from jobs.rules.master_down import (
    bridged_return_regressions,
    build_master_down_windows,
    groups_on_down_brokers,
    return_regressions,
    with_master_return,
    without_return_regressions,
)
from jobs.rules.models import consumer_models
from jobs.rules.sources import group_sources
from jobs.settings import Settings
from jobs.silver.client_config import build_client_config
from jobs.silver.consume_status import build_consume_status
from jobs.silver.member_context import build_member_context
from jobs.silver.membership import build_group_members
from jobs.silver.ownership import build_queue_ownership
from jobs.silver.process_queues import build_process_queues
from jobs.silver.queue_offsets import build_queue_offsets
from jobs.silver.queue_state import build_queue_state
from jobs.silver.subscriptions import build_client_subscriptions
from schemas.landing import (
    ALL_SOURCES,
    CLIENT_LOGS,
    CONNECTIONS,
    JSON_SOURCES,
    OFFSETS,
    RUNNING_INFO,
)

log = logging.getLogger(__name__)

# the bronze record table of each landing source
RECORD_TABLE_OF = {OFFSETS.name: "offsets", CONNECTIONS.name: "connections",
                   RUNNING_INFO.name: "running_info", CLIENT_LOGS: "client_log_events"}
BRONZE_RECORD_TABLES = tuple(RECORD_TABLE_OF.values())
# Bronze columns no per-group table reads: a log line's text (only the cluster-wide master-down
# windows read it, from the whole day) and the run's lineage. The batches of groups are split
# without them (``per_group_columns``), a third of the bytes of the day's log events.
NOT_PER_GROUP = ("message", "_ingested_at", "_run_id")


def per_group_columns(df: DataFrame) -> DataFrame:
    """``df`` without ``NOT_PER_GROUP``, whether or not the day is split: a per-group rule that
    came to read one of them fails on every day, not only on days of several batches."""
    return df.drop(*NOT_PER_GROUP)


class NoLandingData(RuntimeError):
    """Nothing to ingest for the day."""


@dataclass
class RunReport:
    run_id: str
    run_date: dt.date
    table_rows: dict[str, int] = field(default_factory=dict)
    file_counts: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def bronze_frames(spark: SparkSession, landing: Path, run_date: dt.date, settings: Settings,
                  run_id: str, ingested_at: dt.datetime,
                  stage: lake.Stage = lake.no_staging, scratch_dir: Path | None = None,
                  ) -> dict[str, DataFrame]:
    """Every bronze table's frame for ``run_date`` (records, ``quarantine``, ``ingest_counts``).

    ``scratch_dir`` is not used any more (the landing data source decodes every file itself);
    it stays for existing callers.
    """
    return bronze_tables(ingest_sources(spark, landing, run_date, settings, run_id, ingested_at,
                                        ALL_SOURCES, stage), landing, run_date)


def ingest_sources(spark: SparkSession, landing: Path, run_date: dt.date, settings: Settings,
                   run_id: str, ingested_at: dt.datetime, names: tuple[str, ...],
                   stage: lake.Stage = lake.no_staging) -> dict[str, SourceFrames]:
    """The landing sources ``names`` (of ``ALL_SOURCES``) parsed, by source name, in that
    order: ``stage(df, name)`` stores each one's classified lines."""
    raw_max = settings.ingest.quarantine_raw_max_chars
    partitions = read_partitions(settings.engine.read_partitions)
    json_sources = {s.name: s for s in JSON_SOURCES}
    return {name: (ingest_client_logs(spark, landing, run_date, run_id, ingested_at, raw_max,
                                      settings.ingest.log_zones(), stage, partitions)
                   if name == CLIENT_LOGS else
                   ingest_json_source(spark, landing, json_sources[name], run_date, run_id,
                                      ingested_at, raw_max, stage, partitions))
            for name in names}


def bronze_tables(per_source: dict[str, SourceFrames], landing: Path,
                  run_date: dt.date) -> dict[str, DataFrame]:
    """The bronze tables' frames from every landing source's (``ingest_sources``)."""
    if sum(f.files for f in per_source.values()) == 0:
        raise NoLandingData(
            f"no landing files for {run_date} under {landing} "
            f"(expected {landing}/<{'|'.join(ALL_SOURCES)}>/date={run_date}/): "
            "check the collectors or the --landing path")
    return {
        **{RECORD_TABLE_OF[name]: per_source[name].records for name in ALL_SOURCES},
        "quarantine": union_all([per_source[name].quarantine for name in ALL_SOURCES]),
        "ingest_counts": union_all([per_source[name].counts for name in ALL_SOURCES]),
    }


def silver_frames(bronze: dict[str, DataFrame], settings: Settings) -> dict[str, DataFrame]:
    """Every silver table's frame from the day's bronze records (``group_silver_frames`` and
    ``cluster_silver_frames``)."""
    return {**group_silver_frames(bronze, settings), **cluster_silver_frames(bronze)}


CLOCK_SKEW = "silver.clock_skew"  # the staged hosts whose log clock is off (group_silver_frames)


def group_silver_frames(bronze: dict[str, DataFrame], settings: Settings,
                        stage: lake.Stage = lake.no_staging) -> dict[str, DataFrame]:
    """The silver tables whose rows depend on their own consumer group's records only: each can
    be computed from one batch of whole groups (``in_batch``). ``stage`` stores the clock skew
    (``CLOCK_SKEW``), which both kinds of log claims and group_health read: unstaged, each read
    computed it again (9.4 s each at M); ``host_clock_skew`` stages its samples with it, and
    ``build_queue_offsets`` the snapshots both of its time-lag paths read."""
    process_queues = build_process_queues(bronze["running_info"])
    # a host whose log clock is whole hours off running info gives no ownership claims
    # (DESIGN.md §5.1 "Clocks"); group_health names it (health_frames)
    skew = stage(host_clock_skew(bronze["client_log_events"], bronze["running_info"], stage),
                 CLOCK_SKEW)
    ownership_logs = without_skewed_hosts(bronze["client_log_events"], skew)
    return {
        "queue_offsets": build_queue_offsets(bronze["offsets"], stage),
        "group_members": build_group_members(bronze["connections"],
                                             settings.detection.channel_expiry_seconds),
        "client_subscriptions": build_client_subscriptions(bronze["connections"],
                                                           bronze["running_info"]),
        "client_config": build_client_config(bronze["running_info"]),
        "process_queues": process_queues,
        "consume_status": build_consume_status(bronze["running_info"]),
        "queue_ownership": build_queue_ownership(
            bronze["running_info"], ownership_logs, bronze["connections"],
            settings.detection.persist_interval_seconds),
    }


def cluster_silver_frames(bronze: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The silver tables that read every group's records: when each broker group's master was
    gone, from offsets and client logs of all groups (§5.3)."""
    return {"master_down_windows": build_master_down_windows(bronze["offsets"],
                                                             bronze["client_log_events"])}


def key_batches(rows_per_key: dict[str | None, int], batch_rows: int) -> list[list[str]]:
    """Keys (groups or topics) packed into batches of about ``batch_rows`` rows each, largest key
    first into the first batch with room (first-fit decreasing); a key larger than a batch gets a
    batch of its own. One batch when everything fits. The last batch also takes every key not
    listed (``in_batch``), so a key seen only in another source is never left out."""
    batches: list[list[str]] = []
    room: list[int] = []
    for key, rows in sorted(((k, r) for k, r in rows_per_key.items() if k is not None),
                            key=lambda kr: (-kr[1], kr[0])):
        fit = next((i for i, left in enumerate(room) if rows <= left), None)
        if fit is None:
            batches.append([])
            room.append(batch_rows)
            fit = len(batches) - 1
        batches[fit].append(key)
        room[fit] -= rows
    return batches or [[]]


def in_batch(column: str, batch: int, batches: list[list[str]]) -> Callable[[DataFrame], DataFrame]:
    """A filter keeping the rows of batch ``batch`` (``key_batches``) by ``column``; the last
    batch keeps every key of no other batch, nulls included. A frame without ``column`` is not
    split (it is read whole by every batch). Why: the per-queue windows of a large day outgrow
    memory when computed at once (benchmarks/RESULTS.md, issue #19); per group (or per topic,
    for the producer tables) they are independent."""
    def keep(df: DataFrame) -> DataFrame:
        if len(batches) == 1 or column not in df.columns:
            return df
        if batch < len(batches) - 1:
            return df.where(F.col(column).isin(batches[batch]))
        others = [key for earlier in batches[:-1] for key in earlier]
        return df.where(F.coalesce(~F.col(column).isin(others), F.lit(True)))
    return keep


def with_batch(df: DataFrame, column: str, batches: list[list[str]],
               nulls_apart: bool = False) -> DataFrame:
    """``df`` with ``_batch``: the index of the batch (``key_batches``) holding its ``column``
    key; a key of no batch, or a null, gets the last batch, as ``in_batch`` keeps it. So a day
    is split into its batches in one pass (``lake.stage_batches``). ``nulls_apart``: a null key
    gets ``len(batches)`` instead (``with_parse_batch``)."""
    key = "_batch_key"
    schema = StructType([StructField(key, StringType()), StructField(lake.BATCH_COLUMN, IntegerType())])
    keys = df.sparkSession.createDataFrame(
        [(k, b) for b, batch in enumerate(batches) for k in batch], schema)
    joined = df.join(F.broadcast(keys), df[column] == keys[key], "left")
    batch = F.coalesce(keys[lake.BATCH_COLUMN], F.lit(len(batches) - 1))
    if nulls_apart:
        batch = F.when(df[column].isNull(), F.lit(len(batches))).otherwise(batch)
    return joined.select(*[df[c] for c in df.columns], batch.alias(lake.BATCH_COLUMN))


def with_parse_batch(classified_df: DataFrame, batches: list[list[str]]) -> DataFrame:
    """Classified landing lines (``ingest_sources``) with ``_batch``: an accepted line's as
    ``with_batch`` numbers it by its ``group``; without one ``len(batches)``, which every batch
    reads: a ``send expire msg back`` line names no group (facts §5.3) and the stuck detector
    matches it to any group's episode by topic, queue and offset (in the last batch alone, as
    ``in_batch`` keeps nulls, a release by the cleaner went unexplained for the groups of every
    other batch). Every other line (quarantined, another day's, unmatched log lines: most of a
    real client log) in ``len(batches) + 1``, which no batch of groups reads."""
    numbered = with_batch(classified_df, "group", batches, nulls_apart=True)
    return numbered.withColumn(lake.BATCH_COLUMN, F.when(
        F.col("_status") == "accepted", F.col(lake.BATCH_COLUMN))
        .otherwise(F.lit(len(batches) + 1)))


def split_row_group_rows(table: str) -> int:
    """The Parquet row group of a split table's rows (``lake.stage_batches``): running info's
    rows are wide (properties, status and process-queue tables)."""
    return (lake.SPLIT_ROW_GROUP_ROWS if table == RUNNING_INFO.name
            else lake.NARROW_SPLIT_ROW_GROUP_ROWS)


@dataclass(frozen=True)
class BatchedFrames:
    """A run's frames with the batches of ``column`` they are computed in (``key_batches``).
    ``parts[name][b]`` holds batch ``b`` of a frame staged once per batch; any other frame is
    filtered per batch (``in_batch``), which is cheap for small or cluster-wide frames."""
    column: str
    plan: list[list[str]]
    whole: dict[str, DataFrame]
    parts: dict[str, list[DataFrame]] = field(default_factory=dict)

    def batch(self, b: int) -> dict[str, DataFrame]:
        keep = in_batch(self.column, b, self.plan)
        return {name: self.parts[name][b] if name in self.parts else keep(df)
                for name, df in self.whole.items()}

    def map(self, fn: Callable[[DataFrame], DataFrame]) -> BatchedFrames:
        return BatchedFrames(self.column, self.plan, {n: fn(df) for n, df in self.whole.items()},
                             {n: [fn(df) for df in dfs] for n, dfs in self.parts.items()})

    def with_whole(self, frames: dict[str, DataFrame]) -> BatchedFrames:
        """These frames added, not split (``batch`` filters them)."""
        return BatchedFrames(self.column, self.plan, {**self.whole, **frames}, self.parts)

    def __or__(self, other: BatchedFrames) -> BatchedFrames:
        if (other.column, other.plan) != (self.column, self.plan):
            raise ValueError("frames of different batches cannot be merged")
        return BatchedFrames(self.column, self.plan, {**self.whole, **other.whole},
                             {**self.parts, **other.parts})


def rows_per_key(df: DataFrame, column: str) -> dict[str | None, int]:
    return {r[column]: r["count"] for r in df.groupBy(column).count().collect()}


def topic_batches(queue_offsets_df: DataFrame, group_plan: list[list[str]],
                  batch_rows: int) -> tuple[list[list[str]], bool]:
    """Batches of whole topics for the per-topic producer tables, and whether they are the
    batches of groups ``group_plan``: they are when every topic's rows belong to groups of one
    batch (``in_batch``), each batch then holding its groups' topics (the computed silver rows
    serve as they are split). Otherwise topics are packed as ``key_batches`` packs groups."""
    last = len(group_plan) - 1
    batch_of = {group: b for b, groups in enumerate(group_plan) for group in groups}
    per_topic = (queue_offsets_df.groupBy("topic")
                 .agg(F.count(F.lit(1)).alias("rows"), F.collect_set("group").alias("groups"))
                 .collect())
    topics: list[list[str]] = [[] for _ in group_plan]
    for row in per_topic:
        batches = {batch_of.get(group, last) for group in row["groups"]}
        if row["topic"] is None or len(batches) != 1:
            return key_batches({r["topic"]: r["rows"] for r in per_topic}, batch_rows), False
        topics[batches.pop()].append(row["topic"])
    return [sorted(t) for t in topics], True


def member_frames(silver: dict[str, DataFrame], settings: Settings) -> dict[str, DataFrame]:
    """silver.member_context: the live members per snapshot, liveness computed once here."""
    d = settings.detection
    return {
        "member_context": build_member_context(
            silver["queue_offsets"], silver["group_members"], silver["client_subscriptions"],
            silver["client_config"], d.liveness_window_seconds, d.max_snapshot_gap_seconds),
    }


def derived_silver_frames(silver: dict[str, DataFrame], settings: Settings,
                          stage: lake.Stage = lake.no_staging) -> dict[str, DataFrame]:
    """Silver tables built from other silver tables, member_context (``member_frames``) stored
    first: the owners per snapshot. ``stage``: see ``build_queue_state``."""
    d = settings.detection
    return {
        "queue_state": build_queue_state(
            silver["queue_offsets"], silver["queue_ownership"], silver["group_members"],
            silver["member_context"], d.liveness_window_seconds, d.max_snapshot_gap_seconds,
            d.running_info_round_seconds, stage),
    }


def orphan_rules(settings: Settings) -> OrphanRules:
    d, s = settings.detection, settings.severity
    return OrphanRules(d.liveness_window_seconds, d.max_snapshot_gap_seconds,
                       d.orphan_min_duration_seconds, d.orphan_transient_max_seconds,
                       s.critical_lag, s.critical_minutes)


def stuck_rules(settings: Settings) -> StuckRules:
    d, s = settings.detection, settings.severity
    return StuckRules(d.max_snapshot_gap_seconds, d.stuck_min_duration_seconds,
                      d.consume_concurrently_max_span, s.critical_lag, s.critical_minutes,
                      d.pull_threshold_for_queue, d.pull_threshold_size_for_queue_mib)


def producer_frames(silver: dict[str, DataFrame], settings: Settings,
                    stage: lake.Stage = lake.no_staging) -> dict[str, DataFrame]:
    """gold.queue_load and gold.producer_findings: per topic, from the broker offsets already in
    silver (no new pass over the landing, DESIGN.md §5.2), so they can be computed one batch of
    whole topics at a time. ``stage(df, name)`` stores the queue intervals, which both tables
    read four times, and the hot-queue windows."""
    intervals = stage(queue_intervals(silver["queue_offsets"]), "gold.queue_intervals")
    master_down = silver["master_down_windows"]
    return {
        # a broker without its master is BROKER_MASTER_DOWN, not starved (DESIGN.md §5.2); its
        # window is also a publish-list loss for ORDER_AT_RISK (orderly groups from running info)
        "producer_findings": build_producer_findings(
            silver["queue_offsets"], producer_rules(settings),
            master_down_df=master_down.select("cluster", "broker_name", "down_from",
                                              F.col("down_until").alias("down_to")),
            orderly_groups_df=orderly_groups(silver["client_config"]), intervals_df=intervals,
            stage=stage),
        "queue_load": build_queue_load(silver["queue_offsets"], intervals),
    }


def gold_frames(silver: dict[str, DataFrame], bronze: dict[str, DataFrame],
                settings: Settings, stage: lake.Stage = lake.no_staging,
                producer: dict[str, DataFrame] | None = None) -> dict[str, DataFrame]:
    """Every gold table's frame from the day's silver tables (and bronze log events).

    ``stage(df, name)`` stores an intermediate that several parts of one table read (the run
    stages it as Parquet; the default leaves the plan as it is). ``producer``: the
    ``producer_frames`` when stored already (the run computes them in batches of topics)."""
    if producer is None:
        producer = producer_frames(silver, settings, stage)
        # read by strategy_whatif and written as gold.queue_load
        producer["queue_load"] = stage(producer["queue_load"], "gold.queue_load.rows")
    # read by both ownership detectors and the membership changes
    group_context = stage(build_group_context(silver["member_context"]), "gold.group_context")
    # abandoned groups get one note in group_health, no per-queue finding (DESIGN.md §5.1)
    abandoned = stage(abandoned_groups(silver["queue_state"], silver["group_members"]),
                      "gold.abandoned_groups")
    queue_state = without_abandoned(silver["queue_state"], abandoned)
    # broadcasting, pop and pull groups, from every source that tells (DESIGN.md §5.1)
    models = stage(consumer_models(silver["group_members"], silver["client_config"],
                                   silver["process_queues"]), "gold.consumer_models")
    orphaned = stage(orphaned_snapshots_of_day(queue_state, group_context, models,
                                               orphan_rules(settings)),
                     "gold.orphaned_queues.snapshots")
    d = settings.detection
    # a broker group's master down (DESIGN.md §5.3): cluster-wide windows (silver)
    master_down = silver["master_down_windows"]
    # an offset that goes back after the master returns is accepted, not a stuck episode
    # ... and does not split a pin that spans the master's return either
    regressions = return_regressions(silver["queue_offsets"], master_down,
                                     d.master_return_window_seconds)
    stuck = stage(without_return_regressions(
        lasting_stuck_episodes(bridged_return_regressions(queue_state, regressions,
                                                          d.master_return_window_seconds),
                               stuck_rules(settings), models_df=models),
        regressions),
        "gold.stuck_queues.episodes")
    # read by stuck_queues (NO_OWNER) and written as gold.orphaned_queues
    orphaned_rows = stage(explain_orphan_episodes(
        orphaned, queue_state, silver["member_context"], group_context,
        bronze["client_log_events"], orphan_rules(settings), stage),
        "gold.orphaned_queues.rows")
    # read three times by with_master_return (its MASTER_DOWN rows, their release, the rest)
    stuck_rows = stage(explain_stuck_episodes(
        stuck, silver["process_queues"], silver["client_config"], silver["consume_status"],
        bronze["client_log_events"], stuck_rules(settings), orphaned_rows, master_down,
        queue_state_df=queue_state, group_context_df=group_context), "gold.stuck_queues.explained")
    # written as gold.stuck_queues and read by the backlog forecast (a stuck queue's forecast)
    stuck_queues = stage(with_master_return(stuck_rows, queue_state, master_down,
                                            d.master_return_window_seconds),
                         "gold.stuck_queues.rows")
    gold = {
        "orphaned_queues": orphaned_rows,
        "double_owned_queues": build_double_owned_queues(
            queue_state, group_context, silver["group_members"],
            orphan_rules(settings), models_df=models),
        "stuck_queues": stuck_queues,
        # DESIGN.md §5.4: at the day's last snapshot; a stuck or orphaned queue's row says so;
        # an abandoned group gets its one note, no forecast (§5.1)
        "backlog_forecast": build_backlog_forecast(
            without_abandoned(silver["queue_offsets"], abandoned), forecast_rules(settings),
            stuck_queues, orphaned_rows, models, silver["member_context"],
            silver["consume_status"], stage),
        "rebalance_events": build_rebalance_events(
            silver["group_members"], bronze["connections"], bronze["client_log_events"],
            bronze["running_info"],
            RebalanceRules(d.max_snapshot_gap_seconds, d.heartbeat_interval_seconds), stage,
            models_df=models),
        "strategy_whatif": build_strategy_whatif(
            silver["queue_offsets"], silver["member_context"], models, stage,
            producer["queue_load"]),
        **producer,
    }
    return gold


def health_frames(gold: dict[str, DataFrame], silver: dict[str, DataFrame],
                  settings: Settings, clock_skew_df: DataFrame | None = None
                  ) -> dict[str, DataFrame]:
    """gold.group_health, from the other gold tables (computed and stored first).

    ``clock_skew_df`` (``jobs.rules.clocks.host_clock_skew``, the one silver's ownership claims
    were cut by: ``CLOCK_SKEW``) adds the client-log clock findings; without it no host is
    judged."""
    data_quality = None
    if clock_skew_df is not None:
        data_quality = clock_findings(clock_skew_df, settings.ingest.client_log_timezone)
    return {"group_health": build_group_health(
        gold["orphaned_queues"], gold["double_owned_queues"], gold["stuck_queues"],
        gold["rebalance_events"], silver["queue_offsets"], settings.severity.rebalance_warn_count,
        abandoned_df=abandoned_groups(silver["queue_state"], silver["group_members"]),
        producer_df=gold["producer_findings"],
        models_df=consumer_models(silver["group_members"], silver["client_config"],
                                  silver["process_queues"]),
        sources_df=group_sources(silver["queue_offsets"], silver["group_members"],
                                 silver["client_config"], silver["queue_ownership"]),
        data_quality_df=data_quality,
        master_down_df=groups_on_down_brokers(silver["queue_offsets"],
                                              silver["master_down_windows"]),
        backlog_df=backlog_findings(gold["backlog_forecast"], forecast_rules(settings)))}


def incident_frames(gold: dict[str, DataFrame], previous: DataFrame,
                    settings: Settings,
                    silver: dict[str, DataFrame] | None = None) -> dict[str, DataFrame]:
    """gold.incidents, from the day's gold finding tables and the stored day before
    (``silver``: the day's silver tables, for the groups a master-down window hit)."""
    master_down = (None if silver is None else
                   groups_on_down_brokers(silver["queue_offsets"], silver["master_down_windows"]))
    return {"incidents": build_incidents(
        gold["orphaned_queues"], gold["double_owned_queues"], gold["stuck_queues"],
        gold["rebalance_events"], previous, settings.severity.rebalance_warn_count,
        producer_df=gold["producer_findings"], master_down_df=master_down,
        backlog_df=backlog_findings(gold["backlog_forecast"], forecast_rules(settings)))}


def accuracy_frames(silver: dict[str, DataFrame], previous_forecast: DataFrame,
                    settings: Settings) -> dict[str, DataFrame]:
    """gold.forecast_accuracy: the stored forecast of the day before against this day's offsets
    (DESIGN.md §5.4)."""
    return {"forecast_accuracy": build_forecast_accuracy(
        previous_forecast, silver["queue_offsets"], settings.forecast.cleared_lag)}


def previous_forecast(spark: SparkSession, lake_dir: str | Path, run_date: dt.date) -> DataFrame:
    """The stored gold.backlog_forecast of the day before ``run_date`` (empty without one)."""
    if lake.table_exists(spark, lake.table_path(lake_dir, "gold", "backlog_forecast")):
        return lake.read_day(spark, lake_dir, "gold", "backlog_forecast",
                             run_date - dt.timedelta(days=1))
    return spark.createDataFrame([], FORECAST_SCHEMA)


def previous_incidents(spark: SparkSession, lake_dir: str | Path,
                       run_date: dt.date) -> DataFrame:
    """The stored gold.incidents of the day before ``run_date`` (empty when the lake has none)."""
    day_before = run_date - dt.timedelta(days=1)
    if lake.table_exists(spark, lake.table_path(lake_dir, "gold", "incidents")):
        return lake.read_day(spark, lake_dir, "gold", "incidents", day_before)
    return spark.createDataFrame([], INCIDENTS_SCHEMA)


def only_day(df: DataFrame, run_date: dt.date) -> DataFrame:
    return df.where(F.col("date") == F.lit(run_date).cast("date"))


def only_before(df: DataFrame, run_date: dt.date) -> DataFrame:
    return df.where(F.col("date") < F.lit(run_date).cast("date"))


def previous_tail(spark: SparkSession, lake_dir: str | Path, name: str, run_date: dt.date,
                  seconds: int) -> DataFrame | None:
    """The previous day's rows of bronze ``name`` that ``read_with_lookback`` adds to the day;
    None when the lake has no such table yet."""
    if not lake.table_exists(spark, lake.table_path(lake_dir, "bronze", name)):
        return None
    return only_before(read_with_lookback(lake.read_table(spark, lake_dir, "bronze", name),
                                          run_date, seconds), run_date)


def read_with_lookback(df: DataFrame, run_date: dt.date, seconds: int) -> DataFrame:
    """The day's rows plus the previous day's last ``seconds`` (by ``ts``), and every
    ``rebalanced result changed`` line of the previous day: a client's latest set holds until it
    logs the next one, which can be hours later (facts §2.2)."""
    day = F.lit(run_date).cast("date")
    start = F.lit(dt.datetime.combine(run_date, dt.time()) - dt.timedelta(seconds=seconds))
    previous = F.col("date") == F.date_sub(day, 1)
    tail = previous & (F.col("ts") >= start.cast("timestamp"))
    if "event" in df.columns:
        tail = tail | (previous & (F.col("event") == "REBALANCE_RESULT"))
    return df.where((F.col("date") == day) | tail)


def run_day(spark: SparkSession, landing: Path, lake_dir: str | Path, run_date: dt.date,
            settings: Settings, run_id: str, ingested_at: dt.datetime,
            progress=lambda message, **fields: None) -> RunReport:
    """Run landing → bronze → silver → gold for ``run_date``, replacing that day in every table.

    ``progress(message, **fields)`` is told each step; after each table write the fields are
    ``stage`` (layer), ``table``, ``rows`` (the day's rows now in the table) and ``seconds``.
    """
    started = time.monotonic()
    report = RunReport(run_id=run_id, run_date=run_date)
    def stage(df: DataFrame, name: str) -> DataFrame:
        progress(f"parsing {name}", stage="parse", table=name)
        return lake.stage(spark, df, lake_dir, run_id, name)

    def write(df: DataFrame, layer: str, name: str, began: float | None = None) -> None:
        began = began or time.monotonic()
        lake.write_day(spark, df, lake_dir, layer, name, run_date)
        # counted here rather than at the end, so a long run shows its rows as it goes
        rows = lake.read_day(spark, lake_dir, layer, name, run_date).count()
        report.table_rows[f"{layer}.{name}"] = rows
        progress(f"wrote {layer}.{name}", stage=layer, table=f"{layer}.{name}", rows=rows,
                 seconds=round(time.monotonic() - began, 3))

    def stage_intermediate(df: DataFrame, name: str, batch: int | None = None) -> DataFrame:
        """Stage an intermediate of the silver or gold tables (of one batch), telling its time:
        it counts to the first table of its batch, so the ``staged`` events say what it was."""
        began = time.monotonic()
        staged = (lake.stage(spark, df, lake_dir, run_id, name) if batch is None
                  else lake.stage_batch(spark, df, lake_dir, run_id, name, batch))
        numbered = {} if batch is None else {"batch": batch + 1}
        progress(f"staged {name}", stage="staging", table=name,
                 seconds=round(time.monotonic() - began, 3), **numbered)
        return staged

    with lake.staging_area(lake_dir, run_id):
        # Snapshots right after midnight need the previous day's tail (who was live, who claimed
        # what), so each layer is computed over the day plus a look-back and only the day is
        # written.
        lookback = max(settings.detection.liveness_window_seconds,
                       settings.detection.max_snapshot_gap_seconds)
        # per-group tables (per-topic for the producer tables) batch by batch of whole groups
        # (topics): a large day's per-queue windows stay within memory. Each input is split
        # into its batches once (lake.stage_batches), so a batch reads only its own rows.
        batch_rows = settings.engine.group_batch_rows

        def split_parts(frames: dict[str, DataFrame], column: str, plan: list[list[str]],
                        prefix: str = "split") -> dict[str, list[DataFrame]]:
            # rows without a group go to every batch of groups, as at parse (with_parse_batch)
            shared = column == "group"
            return {} if len(plan) == 1 else {
                name: lake.stage_batches(spark, with_batch(df, column, plan, nulls_apart=shared),
                                         lake_dir, run_id, f"{prefix}.{column}.{name}",
                                         len(plan), split_row_group_rows(name),
                                         shared=len(plan) if shared else None)
                for name, df in frames.items() if column in df.columns}

        def split(frames: dict[str, DataFrame], column: str,
                  plan: list[list[str]]) -> BatchedFrames:
            return BatchedFrames(column, plan, frames, split_parts(frames, column, plan))

        # The offsets are parsed first: their rows per group (with the previous day's tail) plan
        # the batches of groups, so the other landing sources are staged already split into
        # those batches as they are parsed, rather than split again from bronze: a pass over
        # three sources less (benchmarks/RESULTS.md, session 21).
        parsed = ingest_sources(spark, landing, run_date, settings, run_id, ingested_at,
                                (OFFSETS.name,), stage)
        tail = previous_tail(spark, lake_dir, "offsets", run_date, lookback)
        group_plan = key_batches(rows_per_key(union_all(
            [parsed[OFFSETS.name].records.select("group"),
             *([] if tail is None else [tail.select("group")])]), "group"), batch_rows)
        parsed_parts: dict[str, list[DataFrame]] = {}

        def stage_split(df: DataFrame, name: str) -> DataFrame:
            progress(f"parsing {name}", stage="parse", table=name)
            parsed_parts[name] = lake.stage_batches(
                spark, with_parse_batch(df, group_plan), lake_dir, run_id, name,
                len(group_plan), split_row_group_rows(RECORD_TABLE_OF[name]),
                shared=len(group_plan))
            return lake.read_staged_batches(spark, df.schema, lake_dir, run_id, name)

        parsed |= ingest_sources(spark, landing, run_date, settings, run_id, ingested_at,
                                 tuple(n for n in ALL_SOURCES if n != OFFSETS.name),
                                 stage if len(group_plan) == 1 else stage_split)
        bronze = bronze_tables(parsed, landing, run_date)
        for name, df in bronze.items():
            write(df, "bronze", name)
        # the parsed lines are in bronze now; those split by group are also the batches' inputs
        lake.clear_staging(lake_dir, run_id, keep=tuple(parsed_parts))
        stored = {name: read_with_lookback(lake.read_table(spark, lake_dir, "bronze", name),
                                           run_date, lookback)
                  for name in BRONZE_RECORD_TABLES}
        day_inputs = {name: per_group_columns(df) for name, df in stored.items()}
        # a source staged split at parse: each batch's records of the day, with that batch's
        # share of the previous day's tail (split here: minutes of rows, and the day's rebalance
        # results)
        parsed_tables = {RECORD_TABLE_OF[name]: name for name in parsed_parts}
        tails = split_parts({table: only_before(day_inputs[table], run_date)
                             for table in parsed_tables}, "group", group_plan, "tail")
        inputs = BatchedFrames("group", group_plan, day_inputs, {
            **split_parts({n: df for n, df in day_inputs.items() if n not in parsed_tables},
                          "group", group_plan),
            **{table: [per_group_columns(parsed[name].records_of(part))
                       .unionByName(tail_part, allowMissingColumns=True)
                       for part, tail_part in zip(parsed_parts[name], tails[table])]
               for table, name in parsed_tables.items()}})

        def write_batched(layer: str, column: str, plan: list[list[str]],
                          frames_of: Callable[[int], dict[str, DataFrame]],
                          threads: int = 1) -> BatchedFrames:
            """Each batch's frames staged, then each table written whole. ``threads`` > 1 runs
            that many batches at once (``frames_of`` must then stage its intermediates per
            batch)."""
            def one_batch(batch: int) -> dict[str, tuple[DataFrame, StructType, float]]:
                # intermediates staged while the frames are built count to the batch's first table
                building = time.monotonic()
                staged: dict[str, tuple[DataFrame, StructType, float]] = {}
                for index, (name, df) in enumerate(frames_of(batch).items()):
                    if len(plan) > 1 and column not in df.columns:  # its batches would repeat it
                        raise ValueError(f"{layer}.{name} has no {column}: not computed in batches")
                    began = building if index == 0 else time.monotonic()
                    numbered = {"batch": batch + 1, "batches": len(plan)} if len(plan) > 1 else {}
                    progress(f"computing {layer}.{name}", stage=layer, table=f"{layer}.{name}",
                             **numbered)
                    part = lake.stage_batch(spark, df, lake_dir, run_id, f"{layer}.{name}", batch)
                    staged[name] = (part, df.schema, time.monotonic() - began)
                return staged

            began = time.monotonic()
            if threads > 1 and len(plan) > 1:
                with ThreadPoolExecutor(max_workers=threads) as pool:
                    batches = list(pool.map(one_batch, range(len(plan))))
            else:
                batches = [one_batch(b) for b in range(len(plan))]
            parts: dict[str, list[DataFrame]] = {}
            schemas: dict[str, StructType] = {}
            spent: dict[str, float] = {}
            for staged in batches:
                for name, (part, schema, seconds) in staged.items():
                    parts.setdefault(name, []).append(part)
                    schemas[name] = schema
                    spent[name] = spent.get(name, 0.0) + seconds
            # batches run at once: each table's share of the time they took together
            scale = (time.monotonic() - began) / (sum(spent.values()) or 1.0) if threads > 1 else 1.0
            whole = {name: lake.read_staged_batches(spark, schemas[name], lake_dir, run_id,
                                                    f"{layer}.{name}") for name in parts}
            for name, df in whole.items():
                write(only_day(df, run_date), layer, name, time.monotonic() - spent[name] * scale)
            return BatchedFrames(column, plan, whole, parts if len(plan) > 1 else {})

        def batch_stage(batch: int) -> lake.Stage:
            """``stage`` for an intermediate of one batch, beside its other batches."""
            return lambda df, name: stage_intermediate(df, name, batch)

        def batched(frames: dict[str, DataFrame], keep: Callable[[DataFrame], DataFrame]
                    ) -> dict[str, DataFrame]:
            return {name: keep(df) for name, df in frames.items()}

        silver = write_batched("silver", "group", group_plan, lambda b: group_silver_frames(
            inputs.batch(b), settings, batch_stage(b)))
        silver = silver.with_whole(write_batched(  # one batch: every group
            "silver", "group", [[]], lambda _b: cluster_silver_frames(stored)).whole)
        silver |= write_batched("silver", "group", group_plan, lambda b: member_frames(
            silver.batch(b), settings))
        silver |= write_batched("silver", "group", group_plan, lambda b: derived_silver_frames(
            silver.batch(b), settings, batch_stage(b)))
        silver_day = silver.map(lambda df: only_day(df, run_date))
        # only the offsets are split by topic: the other inputs are per group or cluster-wide.
        # When no topic is consumed by groups of two batches, the batches of groups are batches
        # of whole topics already, and their silver offsets need no split.
        day_offsets = {"queue_offsets": silver_day.whole["queue_offsets"]}
        topic_plan, of_groups = topic_batches(day_offsets["queue_offsets"], group_plan, batch_rows)
        progress(f"planned {len(topic_plan)} batches of topics"
                 f"{' (the batches of groups)' if of_groups else ''}", stage="plan",
                 table="gold.producer_findings", topic_batches=len(topic_plan),
                 of_groups=of_groups)
        by_topic = (BatchedFrames("topic", topic_plan, day_offsets,
                                  {name: silver_day.parts[name] for name in day_offsets
                                   if name in silver_day.parts})
                    if of_groups else split(day_offsets, "topic", topic_plan))
        producer = write_batched("gold", "topic", topic_plan, lambda b: producer_frames(
            {**silver_day.whole, **by_topic.batch(b)}, settings, batch_stage(b))).whole

        # the rest of gold per batch of groups too; the producer tables are read whole by each
        # batch, and each batch keeps only its own groups' health and incident rows
        # gold's batches engine.batch_threads at a time: each is many short queries that leave a
        # core idle alone
        gold = write_batched("gold", "group", group_plan, lambda b: {
            name: df for name, df in gold_frames(
                silver_day.batch(b), inputs.batch(b), settings, batch_stage(b),
                producer).items() if name not in producer},
            threads=settings.engine.batch_threads).with_whole(producer)
        gold_day = gold.map(lambda df: only_day(df, run_date))

        def own_groups(batch: int) -> Callable[[DataFrame], DataFrame]:
            return in_batch("group", batch, group_plan)

        # the clock skew silver's ownership claims were cut by, so group_health names the same
        # hosts
        write_batched("gold", "group", group_plan, lambda b: batched(health_frames(
            gold.batch(b), silver_day.batch(b), settings, clock_skew_df=lake.read_staged_batch(
                spark, CLOCK_SKEW_SCHEMA, lake_dir, run_id, CLOCK_SKEW, b)), own_groups(b)))
        previous = previous_incidents(spark, lake_dir, run_date)
        write_batched("gold", "group", group_plan, lambda b: batched(incident_frames(
            gold_day.batch(b), own_groups(b)(previous), settings, silver_day.batch(b)),
            own_groups(b)))
        forecasts = previous_forecast(spark, lake_dir, run_date)
        write_batched("gold", "group", group_plan, lambda b: accuracy_frames(
            silver_day.batch(b), own_groups(b)(forecasts), settings))
    written, report.table_rows = report.table_rows, {}
    for layer, name, _path in lake.list_tables(lake_dir):  # this run's tables and any other
        key = f"{layer}.{name}"
        report.table_rows[key] = (written[key] if key in written
                                  else lake.read_day(spark, lake_dir, layer, name, run_date).count())
    # one row per landing file: ordered here, on the driver, as the rows arrive there anyway (an
    # orderBy would be a global sort, a range-partitioning job on a cluster)
    report.file_counts = sorted(
        (r.asDict() for r in lake.read_day(spark, lake_dir, "bronze", "ingest_counts", run_date)
         .collect()), key=lambda c: (c["source"], c["source_file"]))
    report.seconds = time.monotonic() - started
    return report
