"""gold.incidents: one row per group, kind and cause of the day (DESIGN.md §4).

An incident gathers the day's finding rows that share ``(cluster, group, kind, cause)`` — what an
on-call engineer fixes once, whatever the number of queues:
- ``ORPHANED`` / ``DOUBLE_OWNED`` / ``STUCK``: the rows of gold.orphaned_queues,
  gold.double_owned_queues and gold.stuck_queues, ``cause`` = their ``root_cause``;
- ``REBALANCE``: the two gold.rebalance_events findings gold.group_health counts as WARN
  (``SUBSCRIPTION_FLAPPING`` rows, and ``CHURN`` from ``rebalance_warn_count`` events a day), so
  every WARN/CRITICAL group status has an incident that explains it. Single INFO rebalances are
  normal operation and stay in gold.rebalance_events;
- ``PRODUCER``: the rows of gold.producer_findings (DESIGN.md §5.2), one per group of their
  ``groups`` (the groups consuming the topic), ``cause`` = the finding; ``queues`` holds
  ``topic/broker_name/queue_id`` for HOT_QUEUE, ``topic/broker_name`` for BROKER_STARVED and
  ORDER_AT_RISK (whose ``groups`` are the orderly ones) and ``topic`` for QUEUE_COUNT_SKEW (the
  columns the finding leaves null are left out);
- ``BROKER``: a broker group's master down (DESIGN.md §5.3), one per group with queues on that
  broker during the window, ``cause`` ``BROKER_MASTER_DOWN``, ``queues`` the broker name; INFO, or
  the severity of the group's MASTER_DOWN stuck queues on that broker.

``severity`` is the highest of the rows; ``first_seen``/``last_seen`` (UTC) span them; ``queues``
lists ``topic/broker_name/queue_id`` sorted; ``evidence`` is the most severe, longest row's
sentence (with how many more queues share it); ``remediation`` says what to change, from
RocketMQ's mechanics (``REMEDIATION``: rocketmq-facts.md §1 strategies, §2.2 cidAll, §3 client
ids and the 4.9.0 fix, §4 subscriptions and heartbeats, §5.3 the expired-message cleaner, §7
producers' queue selection, §10 a master down; DESIGN.md §5.2, §5.3).

``open_since_day``: the previous day's incident with the same key carries its own
``open_since_day`` forward; without one (no row, or that day not in the lake) the incident is new
and opens today. A rerun of an earlier day therefore changes a later day only when that later day
is rerun too (each day reads the stored day before it).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from jobs.columns import sorted_set

KEY = ["cluster", "group", "kind", "cause"]
COLUMNS = ["cluster", "group", "kind", "cause", "severity", "first_seen", "last_seen", "queues",
           "evidence", "remediation", "open_since_day", "date"]
SCHEMA = ("cluster string, group string, kind string, cause string, severity string, "
          "first_seen timestamp, last_seen timestamp, queues array<string>, evidence string, "
          "remediation string, open_since_day date, date date")
KINDS = ("ORPHANED", "DOUBLE_OWNED", "STUCK", "REBALANCE", "PRODUCER", "BROKER")
SEVERITY_RANKS = {"INFO": 1, "WARN": 2, "CRITICAL": 3}

_FROM_ORPHANED = ("see this group's ORPHANED incident with the same cause for the fix; "
                  "the queue moves once a live member owns it")
# (kind, cause) → what to change; (None, cause) applies to every kind with that cause.
REMEDIATION: dict[tuple[str | None, str], str] = {
    (None, "DUPLICATE_CLIENT_ID"): (
        "Several processes share one clientId (clientIP@instanceName): the broker lists "
        "it twice in the group's client list, so one slice of queues has no consumer and the "
        "processes with that id consume the same queues. Give every consumer process a unique "
        "instanceName (setInstanceName, or a per-process -Drocketmq.client.name instead of a "
        "fleet-wide one) and do not pin clientIP; Java clients from 4.9.0 on make the default "
        "name unique by themselves (pid#nanoTime), so upgrade older clients (containers with "
        "pid 1 on one docker IP collide)."),
    (None, "SUBSCRIPTION_INCONSISTENT"): (
        "Members of the group subscribe different topics: every member allocates the topic's "
        "queues over all members, so the share of a member that does not subscribe it is never "
        "consumed; and each broker keeps the subscriptions of the member that heartbeated last, "
        "refusing the other members' pulls of a topic it lacks, so even owned queues stall. "
        "Make every member of the group subscribe the same topics and tags, "
        "or move the differing consumers to their own group."),
    (None, "STRATEGY_INCONSISTENT"): (
        "Members use different allocation strategies: each client computes its own slice, "
        "so mixed strategies leave queues unowned or owned twice. Configure the same "
        "AllocateMessageQueueStrategy on every member; finish a rolling change of strategy."),
    (None, "CLIENT_NOT_IN_CID_ALL"): (
        "A running client is missing from the consumer list the broker returns, so it "
        "allocates itself nothing: check that its heartbeats reach every broker of "
        "the topic (namesrvAddr, network, ACL) and that it uses this group name."),
    (None, "NO_LIVE_CONSUMER"): (
        "No live consumer of the group owned these queues: start or scale up the group's "
        "consumers; the backlog is consumed once one is back."),
    (None, "REBALANCE_GAP"): (
        "A short gap while the group rebalanced after a membership change; no action unless it "
        "recurs. Frequent gaps come from unclean restarts (a crashed client stays in the "
        "broker's list up to 120 s): shut consumers down with shutdown()."),
    (None, "STALE_OWNER"): (
        "An owner kept a queue until its next snapshot after a rebalance gave it to another "
        "member; expected briefly. If it lasts, check that the client rebalances (every 20 s) "
        "and that its clock is right."),
    ("STUCK", "NO_OWNER"): "No live owner while messages waited: " + _FROM_ORPHANED + ".",
    ("STUCK", "OWNER_DOWN"): (
        "Its only owner is not live: restart that consumer, or wait for the broker to drop the "
        "dead channel (120 s); the next rebalance (20 s) gives the queue to a live member."),
    ("STUCK", "MASTER_DOWN"): (
        "The broker group's master is out of the route, so a failed message cannot go back to "
        "%RETRY%<group> (the hand-back goes to the master only, and no other master hosts the "
        "retry topic): the client retries it locally every few seconds with no bound and no DLQ, "
        "pinning the offset. Restore the master (or run controller mode / slave-acting-master, "
        "or host %RETRY%<group> on a second broker group so the fallback send works), then "
        "re-drive the message from %DLQ%<group> once it is back: a local retry count past "
        "maxReconsumeTimes sends it there at once. Avoid moving the queue while the returned "
        "master still reports its old offset: a new owner consumes the outage's messages again."),
    ("BROKER", "BROKER_MASTER_DOWN"): (
        "This broker group ran without its master: producers could not write to it, and its "
        "queues were read from the slave (4.9.x; 5.x slaves reject pulls unless slaveReadEnable) "
        "with offsets committed there. Restore the master or run controller mode / "
        "slave-acting-master; after it returns its offsets go back to their pre-outage values "
        "until the owners commit again (expected, not a reset), so avoid restarts and rebalances "
        "in that window."),
    ("STUCK", "CONSUME_FAILING"): (
        "The listener keeps failing messages of this queue: fix the code or data behind the "
        "failures (client log, RECONSUME_LATER / exceptions). An orderly consumer retries the "
        "message at blocking_offset in place every suspendCurrentQueueTimeMillis (1 s) and, with "
        "maxReconsumeTimes -1 (unlimited), never moves past it: fix the message or the code, or "
        "set maxReconsumeTimes so it goes to %DLQ%<group>. Concurrent consumers send failures "
        "to %RETRY% and after maxReconsumeTimes (16) to %DLQ%."),
    ("STUCK", "SLOW_MESSAGE"): (
        "One message takes long while later ones finish, pinning the committed offset at "
        "blocking_offset: find why it is slow (mqadmin consumerStatus -g GROUP -s "
        "gives a jstack). The client sends it back after consumeTimeout (15 min) and the offset "
        "moves; lower consumeTimeout or bound the listener's work. If the queue moves before "
        "that, the messages after it are consumed again (redelivery_risk)."),
    ("STUCK", "CONSUMER_HUNG"): (
        "Every consume thread of the owner is blocked and nothing finishes: take a jstack "
        "(mqadmin consumerStatus -g GROUP -s), add timeouts to the blocking call and restart the "
        "client; the expired-message cleaner cannot release a message that never started."),
    ("REBALANCE", "SUBSCRIPTION_FLAPPING"): (
        "The broker's subscription table flips at members' heartbeats because they subscribe "
        "different topics, and every flip rebalances the whole group: make every "
        "member subscribe the same topics, or split the group."),
    ("REBALANCE", "CHURN"): (
        "Many rebalances in one day: each member joining, leaving or expiring rebalances the "
        "whole group. Look for restarting or crashing consumers and lost heartbeats; deploy with "
        "clean shutdown()."),
    ("PRODUCER", "HOT_QUEUE"): (
        "Producers choose this queue for several times its share of the topic's messages: with "
        "SelectMessageQueueByHash (or any selector on a key) a message goes to |key.hashCode() % "
        "queues|, so a few busy keys make one hot queue. The key distribution, not the consumer, is "
        "the cause: one queue has one owner in the group, so more or faster consumers do not "
        "help. Select on a key with many evenly used values (an order or entity id rather than a "
        "tenant or type), or send without a selector where per-key order is not needed. More "
        "write queues spread distinct keys over more queues but a single hot key stays on one "
        "queue, and changing the queue count moves keys to other queues (order is not kept "
        "across the change)."),
    ("PRODUCER", "BROKER_STARVED"): (
        "Producers stopped writing to this broker while the topic's other brokers took its share: "
        "either its write permission is off (route perm without the write bit, e.g. left from "
        "maintenance: set brokerPermission back to 6 and check with mqadmin topicRoute), or "
        "producers with sendLatencyFaultEnable shun it after failed or slow sends (up to 10 min "
        "on 4.9.x, 30 s from 5.1.4): look at the broker's send latency, disk and page cache "
        "(broker busy / PCBUSY_CLEAN_QUEUE) in that window. Nothing is lost and consumers are not "
        "at fault; orderly senders with a selector are not moved by latency-fault avoidance."),
    ("PRODUCER", "ORDER_AT_RISK"): (
        "While this broker was out of the topic's publish list (its master down, or its write "
        "permission off), SelectMessageQueueByHash computed |key.hashCode() % queues| over fewer "
        "queues, so the broker's keys went to other queues and an orderly consumer may have "
        "handled a key's newer messages before older ones still on that broker. Restore the "
        "master or the write permission; where per-key order must survive a broker's loss, set "
        "the topic's orderTopicConf on the name server (sends for that broker then fail and the "
        "application can retry them instead of reordering) or run controller mode so the group "
        "elects a new master (slave-acting-master keeps the broker read-only). Check the orderly "
        "consumers' results for keys sent in that window."),
    ("PRODUCER", "QUEUE_COUNT_SKEW"): (
        "The brokers of this topic expose different queue counts; round robin gives every write "
        "queue the same share, so the broker with more queues takes more messages and its "
        "consumers more work. Align writeQueueNums and readQueueNums across the brokers (mqadmin "
        "updateTopic -t TOPIC -c CLUSTER -w N -r N sets every broker of the cluster alike); "
        "raise read queues no later than write queues, and lower write queues first, so no "
        "queue holds messages no consumer reads."),
    # DESIGN.md §5.4 (jobs.gold.backlog_forecast): the consumers fall behind their topic
    ("BACKLOG", "BACKLOG_GROWING"): (
        "The group consumes slower than its topic is written: add consumers while the topic has "
        "more queues than members, else add write queues (updateTopic -w) with consumers for "
        "them, or raise the listener's throughput (consumeThreadMax, a faster listener); "
        "gold.backlog_forecast names the deciding queue."),
    ("BACKLOG", "LOSS_RISK"): (
        "Unread messages reach the broker's retention (fileReservedTime, deleteWhen; any hour "
        "past diskMaxUsedSpaceRatio) before the backlog clears: add consumers or throughput now, "
        "or raise fileReservedTime on the brokers until it has cleared."),
    ("BACKLOG", "MESSAGES_LOST"): (
        "The consumer offset is below the queue's minimum offset: those messages were deleted "
        "with their commit-log files before they were consumed and cannot be re-consumed from the "
        "broker; replay them from the producer side if they matter, then fix the capacity."),
    (None, "UNKNOWN"): (
        "The data does not say why: check the group's clients with mqadmin consumerStatus -g "
        "GROUP and consumerConnection -g GROUP (ids, subscriptions, strategies)."),
}


def remediation(kind: Column, cause: Column) -> Column:
    """The ``REMEDIATION`` sentence for ``(kind, cause)``; kind-specific first, then any kind."""
    expr = F.lit(REMEDIATION[(None, "UNKNOWN")])
    for (k, c), text in sorted(REMEDIATION.items(), key=lambda kv: kv[0][0] is not None):
        cond = cause == c if k is None else (kind == k) & (cause == c)
        expr = F.when(cond, F.lit(text)).otherwise(expr)
    return expr


def _rank(severity: Column) -> Column:
    expr = F.lit(0)
    for name, rank in SEVERITY_RANKS.items():
        expr = F.when(severity == name, F.lit(rank)).otherwise(expr)
    return expr


def _queue_rows(df: DataFrame, kind: str, start: str, minutes: str) -> DataFrame:
    return df.select(
        "cluster", "group", F.lit(kind).alias("kind"), F.col("root_cause").alias("cause"),
        "severity", F.col(start).alias("first_seen"), "last_seen",
        F.concat_ws("/", "topic", "broker_name", F.col("queue_id").cast("string")).alias("queue"),
        F.col(minutes).cast("double").alias("minutes"), "evidence", "date")


def _rebalance_rows(events_df: DataFrame, rebalance_warn_count: int) -> DataFrame:
    flapping = events_df.where(F.col("flaps_per_hour").isNotNull()).select(
        "cluster", "group", F.lit("REBALANCE").alias("kind"),
        F.lit("SUBSCRIPTION_FLAPPING").alias("cause"), F.lit("WARN").alias("severity"),
        F.col("ts").alias("first_seen"), F.col("ts").alias("last_seen"),
        F.lit(None).cast("string").alias("queue"),
        F.col("flaps_per_hour").cast("double").alias("minutes"), "evidence", "date")
    churn = (events_df.groupBy("cluster", "group", "date")
             .agg(F.count(F.lit(1)).alias("_n"), F.min("ts").alias("first_seen"),
                  F.max("ts").alias("last_seen"))
             .where(F.col("_n") >= rebalance_warn_count)
             .select("cluster", "group", F.lit("REBALANCE").alias("kind"),
                     F.lit("CHURN").alias("cause"), F.lit("WARN").alias("severity"),
                     "first_seen", "last_seen", F.lit(None).cast("string").alias("queue"),
                     F.col("_n").cast("double").alias("minutes"),
                     F.concat(F.col("_n").cast("string"),
                              F.lit(" rebalances in the day, the first at "),
                              F.date_format("first_seen", "HH:mm:ss"),
                              F.lit(" UTC, the last at "), F.date_format("last_seen", "HH:mm:ss"),
                              F.lit(" UTC")).alias("evidence"),
                     "date"))
    return flapping.unionByName(churn)


def _producer_rows(producer_df: DataFrame) -> DataFrame:
    return producer_df.select(
        "cluster", F.explode("groups").alias("group"), F.lit("PRODUCER").alias("kind"),
        F.col("finding").alias("cause"), "severity", "first_seen", "last_seen",
        F.concat_ws("/", "topic", "broker_name", F.col("queue_id").cast("string")).alias("queue"),
        F.col("minutes").cast("double").alias("minutes"), "evidence", "date")


def _backlog_rows(findings_df: DataFrame) -> DataFrame:
    """``jobs.gold.backlog_forecast.backlog_findings`` rows: kind BACKLOG, the finding the cause,
    seen at the forecast's ``as_of``, its queues (the deciding one, or those that lost messages)."""
    return findings_df.select(
        "cluster", "group", F.lit("BACKLOG").alias("kind"), F.col("finding").alias("cause"),
        "severity", F.col("as_of").alias("first_seen"), F.col("as_of").alias("last_seen"),
        F.explode("queues").alias("queue"),
        F.lit(0.0).alias("minutes"), F.col("text").alias("evidence"), "date")


def _master_down_rows(master_down_df: DataFrame, stuck_df: DataFrame) -> DataFrame:
    stuck = (stuck_df.where(F.col("root_cause") == "MASTER_DOWN")
             .groupBy("cluster", "group", "date", "broker_name")
             .agg(F.max(_rank(F.col("severity"))).alias("_r")))
    rank = F.coalesce("_r", F.lit(SEVERITY_RANKS["INFO"]))
    severity = (F.when(rank == 3, F.lit("CRITICAL")).when(rank == 2, F.lit("WARN"))
                .otherwise(F.lit("INFO")))
    minutes = (F.unix_millis(F.coalesce("down_until", "down_from"))
               - F.unix_millis("down_from")) / F.lit(60000.0)
    return (master_down_df.join(stuck, on=["cluster", "group", "date", "broker_name"], how="left")
            .select("cluster", "group", F.lit("BROKER").alias("kind"),
                    F.lit("BROKER_MASTER_DOWN").alias("cause"), severity.alias("severity"),
                    F.col("down_from").alias("first_seen"),
                    F.coalesce("down_until", "down_from").alias("last_seen"),
                    F.col("broker_name").alias("queue"), minutes.cast("double").alias("minutes"),
                    F.concat(F.col("broker_name"), F.lit("'s master was gone from "),
                             F.date_format("down_from", "HH:mm:ss"), F.lit(" UTC "),
                             F.when(F.col("down_until").isNotNull(), F.concat(
                                 F.lit("to "), F.date_format("down_until", "HH:mm:ss"),
                                 F.lit(" UTC"))).otherwise(F.lit("and not back")),
                             F.lit("; this group has queues on it")).alias("evidence"),
                    "date"))


def build_incidents(orphaned_df: DataFrame, double_owned_df: DataFrame, stuck_df: DataFrame,
                    rebalance_events_df: DataFrame, previous_df: DataFrame,
                    rebalance_warn_count: int, producer_df: DataFrame | None = None,
                    master_down_df: DataFrame | None = None,
                    backlog_df: DataFrame | None = None) -> DataFrame:
    """The day's gold finding tables (DESIGN.md §4 columns; ``producer_df``: gold.producer_findings)
    and the stored incidents of the day before (``previous_df``, gold.incidents columns; rows of
    other days are ignored) in, gold.incidents of the day out."""
    rows = (_queue_rows(orphaned_df, "ORPHANED", "first_seen", "orphaned_minutes")
            .unionByName(_queue_rows(double_owned_df, "DOUBLE_OWNED", "first_seen", "minutes"))
            .unionByName(_queue_rows(stuck_df, "STUCK", "stuck_since", "stuck_minutes"))
            .unionByName(_rebalance_rows(rebalance_events_df, rebalance_warn_count)))
    if producer_df is not None:
        rows = rows.unionByName(_producer_rows(producer_df))
    if master_down_df is not None:
        rows = rows.unionByName(_master_down_rows(master_down_df, stuck_df))
    if backlog_df is not None:
        rows = rows.unionByName(_backlog_rows(backlog_df))
    # the sentence of the most severe, then longest row (sort key negated: ascending sort)
    ranked = F.struct((-_rank(F.col("severity"))).alias("r"), (-F.col("minutes")).alias("m"),
                      F.col("evidence").alias("e"))
    grouped = rows.groupBy(*KEY, "date").agg(
        F.max(_rank(F.col("severity"))).alias("_rank"),
        F.min("first_seen").alias("first_seen"), F.max("last_seen").alias("last_seen"),
        sorted_set("queue").alias("queues"),
        F.array_sort(F.collect_list(ranked)).getItem(0).getField("e").alias("_evidence"))
    more = F.size("queues") - 1
    evidence = F.when(more > 0, F.concat(
        F.coalesce(F.col("_evidence"), F.lit("")), F.lit(" (the same on "),
        more.cast("string"), F.when(more == 1, F.lit(" more queue)"))
        .otherwise(F.lit(" more queues)")))).otherwise(F.col("_evidence"))
    severity = F.lit("INFO")
    for name, rank in SEVERITY_RANKS.items():
        severity = F.when(F.col("_rank") == rank, F.lit(name)).otherwise(severity)
    yesterday = (previous_df
                 .join(grouped.select("date").distinct().withColumnRenamed("date", "_today"),
                       F.col("date") == F.date_sub(F.col("_today"), 1))
                 .select(*KEY, F.col("open_since_day").alias("_open_since")))
    return (grouped.join(yesterday, on=KEY, how="left")
            .select("cluster", "group", "kind", "cause", severity.alias("severity"),
                    "first_seen", "last_seen", "queues", evidence.alias("evidence"),
                    remediation(F.col("kind"), F.col("cause")).alias("remediation"),
                    F.coalesce(F.col("_open_since"), F.col("date")).alias("open_since_day"),
                    "date"))
