"""Topic routes as the client logs them, and the windows in which a broker's write permission is off.

``MQClientInstance.updateTopicRouteInfoFromNameServer`` logs every route change as
``the topic[T] route info changed, old[…] ,new[TopicRouteData [orderTopicConf=…, queueDatas=[QueueData
[brokerName=B, readQueueNums=R, writeQueueNums=W, perm=P, topicSysFlag=F], …], brokerDatas=[…]…]]``
(3.x writes ``odl[`` and ``topicSynFlag``; rocketmq-facts.md §10, DESIGN.md §5.3). The publish list
keeps only queue datas whose ``perm`` has the write bit (``PermName.PERM_WRITE`` = 2, facts §7), so a
route with a broker's perm lacking it takes that broker out of every producer's list — the
``ORDER_AT_RISK`` evidence of DESIGN.md §5.2 besides a master being down. Pure column functions: the
caller hands the route-change messages (``cluster, ts, host, message``) of its client logs.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

PERM_WRITE = 2
ROUTE_CHANGE = r"the topic\[(.*?)\] route info changed, (?:old|odl)\[(.*)\] ,new\[(.*)\]\s*$"
_QUEUE_DATA = (r"^brokerName=([^,\[\]]*), readQueueNums=(-?[0-9]+), writeQueueNums=(-?[0-9]+), "
               r"perm=(-?[0-9]+)")
_ORDER_CONF = r"^TopicRouteData \[orderTopicConf=(.*?), queueDatas="


def route_change_topic(message: Column) -> Column:
    """The topic of a ``route info changed`` line, else null."""
    return F.when(message.rlike(ROUTE_CHANGE), F.regexp_extract(message, ROUTE_CHANGE, 1))


def new_route(message: Column) -> Column:
    """The ``new[…]`` TopicRouteData text of a ``route info changed`` line, else null."""
    return F.when(message.rlike(ROUTE_CHANGE), F.regexp_extract(message, ROUTE_CHANGE, 3))


def order_topic_conf(route: Column) -> Column:
    """The route's ``orderTopicConf`` (null when it prints ``null`` or is empty)."""
    conf = F.regexp_extract(route, _ORDER_CONF, 1)
    return F.when(~conf.isin("", "null"), conf)


def queue_perms(route: Column) -> Column:
    """``array<struct<broker_name, write_queue_nums, perm>>`` of the route's queue datas."""
    parts = F.slice(F.split(route, r"QueueData \["), 2, 1_000_000)
    return F.transform(parts, lambda p: F.struct(
        F.regexp_extract(p, _QUEUE_DATA, 1).alias("broker_name"),
        F.regexp_extract(p, _QUEUE_DATA, 3).cast("int").alias("write_queue_nums"),
        F.regexp_extract(p, _QUEUE_DATA, 4).cast("int").alias("perm")))


def route_queue_rows(route_lines_df: DataFrame) -> DataFrame:
    """One row per route line and queue data: ``cluster, ts, host, topic, broker_name, perm,
    writable, order_topic_conf``. Lines that are no route change are dropped."""
    lines = (route_lines_df
             .select("cluster", "ts", "host", route_change_topic(F.col("message")).alias("topic"),
                     new_route(F.col("message")).alias("_route"))
             .where(F.col("topic").isNotNull()))
    return (lines
            .select("cluster", "ts", "host", "topic", order_topic_conf(F.col("_route")).alias("order_topic_conf"),
                    F.explode(queue_perms(F.col("_route"))).alias("_qd"))
            .select("cluster", "ts", "host", "topic", F.col("_qd.broker_name").alias("broker_name"),
                    F.col("_qd.perm").alias("perm"),
                    (F.col("_qd.perm").bitwiseAND(PERM_WRITE) == PERM_WRITE).alias("writable"),
                    "order_topic_conf")
            .where(F.col("broker_name") != ""))


def write_perm_losses(route_lines_df: DataFrame) -> DataFrame:
    """Windows in which a topic's route gives a broker no write permission: from the first route
    line without the write bit (after a writable one, or the first of the day) to the next line
    with it (null: still off at the end). Columns: ``cluster, topic, broker_name, lost_from,
    lost_to, reason`` (``WRITE_PERM_OFF``), ``order_topic_conf`` (a conf in the route: sends
    fail instead of moving), ``evidence``."""
    rows = route_queue_rows(route_lines_df)
    key = ["cluster", "topic", "broker_name"]
    ordered = Window.partitionBy(*key).orderBy("ts", "host")
    later = ordered.rowsBetween(1, Window.unboundedFollowing)
    starts = (rows
              .withColumn("_prev_writable", F.lag("writable").over(ordered))
              .withColumn("lost_to", F.min(F.when(F.col("writable"), F.col("ts"))).over(later))
              .where(~F.col("writable") & F.coalesce(F.col("_prev_writable"), F.lit(True))))
    return starts.select(
        *key, F.col("ts").alias("lost_from"), "lost_to", F.lit("WRITE_PERM_OFF").alias("reason"),
        F.col("order_topic_conf").isNotNull().alias("order_topic_conf"),
        F.format_string("its write permission was off (route line with perm=%d on host %s)",
                        F.col("perm"), F.col("host")).alias("evidence"))
