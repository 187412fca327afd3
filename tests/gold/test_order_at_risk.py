"""ORDER_AT_RISK (DESIGN.md §5.2) on hand-built frames, and the route lines that give a broker's write
permission (jobs/rules/route_lines.py), including a real 3.x line (tests/data/real/README.md)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from jobs.gold.producer_findings import (
    PUBLISH_LOSS_COLUMNS,
    ProducerRules,
    build_producer_findings,
    orderly_groups,
)
from jobs.rules.route_lines import route_queue_rows, write_perm_losses
from tests.gold.test_producer_load import EIGHT_QUEUES, START, gap_rates, offsets_df, offsets_rows

REAL_3X = Path(__file__).parents[1] / "data" / "real" / "alibaba_3x_route_changed_odl.log"
LOSS_SCHEMA = ("cluster string, topic string, broker_name string, lost_from timestamp, lost_to timestamp, "
               "reason string, order_topic_conf boolean, evidence string")
CONFIG_SCHEMA = "cluster string, group string, client_id string, is_orderly boolean"
ROUTE_SCHEMA = "cluster string, ts timestamp, host string, message string"


def at(minute: int) -> dt.datetime:
    return START + dt.timedelta(minutes=minute)


def even(minutes=60, topic="ORDERS", group="g-orderly"):
    return offsets_rows(topic, {mq: 10 for mq in EIGHT_QUEUES}, minutes, group=group)


def config(spark, *rows):
    return spark.createDataFrame(list(rows), CONFIG_SCHEMA)


ORDERLY = [("c1", "g-orderly", "10.0.0.1@1", True), ("c1", "g-plain", "10.0.0.2@2", False)]


def losses(spark, *rows):
    return spark.createDataFrame([dict(zip(PUBLISH_LOSS_COLUMNS, r)) for r in rows], LOSS_SCHEMA)


def order_rows(spark, offsets, loss_rows, config_rows=ORDERLY):
    df = build_producer_findings(offsets_df(spark, *offsets), ProducerRules(),
                                 orderly_groups_df=orderly_groups(config(spark, *config_rows)),
                                 publish_losses_df=losses(spark, *loss_rows))
    return [r.asDict() for r in df.where("finding = 'ORDER_AT_RISK'").orderBy("topic", "first_seen").collect()]


PERM_OFF = ("c1", "ORDERS", "broker-b", at(10), at(25), "WRITE_PERM_OFF", False,
            "its write permission was off (route line with perm=4 on host app-1)")


def test_order_at_risk_names_the_window_the_broker_and_the_orderly_groups_only(spark):
    [row] = order_rows(spark, [even(group="g-orderly"), even(group="g-plain")], [PERM_OFF])
    assert (row["topic"], row["broker_name"], row["queue_id"], row["severity"]) == (
        "ORDERS", "broker-b", None, "WARN")
    assert (row["first_seen"], row["last_seen"], row["minutes"]) == (at(10), at(25), 15.0)
    assert row["groups"] == ["g-orderly"]  # the concurrent group's order was never promised
    assert (row["share"], row["even_share"]) == (0.5, 0.125)
    assert row["evidence"] == (
        "broker-b left the publish list of ORDERS from 10:10 to 10:25 UTC (its write permission was off "
        "(route line with perm=4 on host app-1)) while orderly g-orderly consume it: keys hashed to its 4 "
        "of 8 queues went to other queues meanwhile, so per-key order is not guaranteed in that window")


def test_a_master_down_window_hits_every_topic_on_that_broker_and_runs_to_the_day_end_if_open(spark):
    down = ("c1", None, "broker-b", at(30), None, "MASTER_DOWN", None, "its master was down")
    rows = order_rows(spark, [even(topic="ORDERS"), even(topic="PAY")], [down])
    assert [(r["topic"], r["first_seen"], r["last_seen"]) for r in rows] == [
        ("ORDERS", at(30), at(60)), ("PAY", at(30), at(60))]
    assert "to the end of the day UTC (its master was down)" in rows[0]["evidence"]


def test_the_master_down_windows_of_5_3_feed_it_too(spark):
    down = spark.createDataFrame([("c1", "broker-b", at(5), at(20))],
                                 "cluster string, broker_name string, down_from timestamp, down_to timestamp")
    df = build_producer_findings(offsets_df(spark, even()), ProducerRules(), master_down_df=down,
                                 orderly_groups_df=orderly_groups(config(spark, *ORDERLY)))
    assert [(r.finding, r.broker_name, r.first_seen, r.last_seen) for r in df.collect()] == [
        ("ORDER_AT_RISK", "broker-b", at(5), at(20))]


@pytest.mark.parametrize("case", ["no_orderly_group", "order_topic_conf", "other_topic", "other_broker",
                                  "retry_topic"])
def test_order_at_risk_does_not_fire(spark, case):
    offsets, loss, cfg = [even()], PERM_OFF, ORDERLY
    if case == "no_orderly_group":  # a concurrent group: nothing promised
        cfg = [("c1", "g-orderly", "10.0.0.1@1", False)]
    elif case == "order_topic_conf":  # the sends fail instead of moving the keys
        loss = PERM_OFF[:6] + (True,) + PERM_OFF[7:]
    elif case == "other_topic":
        loss = ("c1", "PAY") + PERM_OFF[2:]
    elif case == "other_broker":
        loss = PERM_OFF[:2] + ("broker-c",) + PERM_OFF[3:]
    else:
        offsets = [even(topic="%RETRY%g-orderly")]
        loss = ("c1", "%RETRY%g-orderly") + PERM_OFF[2:]
    assert order_rows(spark, offsets, [loss], cfg) == []


def test_latency_fault_starvation_alone_never_puts_order_at_risk(spark):
    """broker-b gets nothing for 20 minutes (producers shun it) under an orderly group, but no route
    line and no master-down window says it left the publish list: BROKER_STARVED only."""
    starved = offsets_rows("ORDERS", gap_rates(10, 30), 60, group="g-orderly")
    df = build_producer_findings(offsets_df(spark, starved), ProducerRules(),
                                 orderly_groups_df=orderly_groups(config(spark, *ORDERLY)))
    assert [r.finding for r in df.collect()] == ["BROKER_STARVED"]


# --- route lines ----------------------------------------------------------------------------------

def _route(topic: str, perm_b: int, conf: str = "null") -> str:
    """A 4.9.x route change line's message (TopicRouteData.toString, MQClientInstance)."""
    qds = ", ".join(f"QueueData [brokerName={b}, readQueueNums=4, writeQueueNums=4, perm={p}, topicSysFlag=0]"
                    for b, p in (("broker-a", 6), ("broker-b", perm_b)))
    route = (f"TopicRouteData [orderTopicConf={conf}, queueDatas=[{qds}], brokerDatas=[BrokerData "
             f"[brokerName=broker-a, brokerAddrs={{0=10.0.9.11:10911}}], BrokerData [brokerName=broker-b, "
             f"brokerAddrs={{0=10.0.9.12:10911}}]], filterServerTable={{}}]")
    return f"the topic[{topic}] route info changed, old[{route}] ,new[{route}]"


def test_write_perm_losses_run_from_the_first_line_without_the_write_bit_to_the_next_with_it(spark):
    lines = spark.createDataFrame([
        ("c1", at(0), "app-1", _route("ORDERS", 6)),
        ("c1", at(10), "app-1", _route("ORDERS", 4)),
        ("c1", at(11), "app-2", _route("ORDERS", 4)),  # another host sees the same change later
        ("c1", at(25), "app-2", _route("ORDERS", 6)),
        ("c1", at(40), "app-1", _route("PAY", 4, conf="broker-a:4;broker-b:4")),
        ("c1", at(41), "app-1", "rebalanced result changed. something else"),
    ], ROUTE_SCHEMA)
    rows = [r.asDict() for r in write_perm_losses(lines).orderBy("topic", "lost_from").collect()]
    assert [(r["topic"], r["broker_name"], r["lost_from"], r["lost_to"], r["order_topic_conf"]) for r in rows] == [
        ("ORDERS", "broker-b", at(10), at(25), False), ("PAY", "broker-b", at(40), None, True)]
    assert rows[0]["evidence"] == "its write permission was off (route line with perm=4 on host app-1)"
    # and they feed ORDER_AT_RISK for the orderly group of ORDERS (PAY has an orderTopicConf)
    found = order_rows(spark, [even(), even(topic="PAY")], [tuple(r[c] for c in PUBLISH_LOSS_COLUMNS) for r in rows])
    assert [(r["topic"], r["first_seen"], r["last_seen"]) for r in found] == [("ORDERS", at(10), at(25))]


def test_a_real_3x_route_line_with_odl_is_read(spark):
    """alibaba RocketMQ 3.2.2's client writes ``odl[`` and ``topicSynFlag``; both brokers' perms
    keep the write bit, so no window."""
    text = REAL_3X.read_text(encoding="utf-8").splitlines()
    messages = [line.split(" - ", 1)[1] for line in text if "route info changed" in line]
    lines = spark.createDataFrame([("c1", at(i), "licp-host", m) for i, m in enumerate(messages)], ROUTE_SCHEMA)
    rows = sorted((r.topic, r.broker_name, r.perm, r.writable, r.order_topic_conf)
                  for r in route_queue_rows(lines).collect())
    assert rows == [("%RETRY%testConsumer", "licp", 6, True, None), ("TBW102", "licp", 7, True, None),
                    ("TopicTest", "licp", 6, True, None)]
    assert write_perm_losses(lines).count() == 0


def test_order_at_risk_becomes_a_warn_incident_of_the_orderly_group_with_its_remediation(spark):
    from jobs.gold.group_health import build_group_health
    from jobs.gold.incidents import REMEDIATION, SCHEMA, build_incidents
    from tests.gold.test_producer_health import FINDINGS, _empty, _offsets

    finding = spark.createDataFrame([
        (START.date(), "c1", "orders", "broker-b", None, "ORDER_AT_RISK", at(10), at(25), 15.0, 0.5, 0.125,
         ["g-slow"], "broker-b left the publish list", "WARN")], FINDINGS)
    orphaned, double, stuck, events = _empty(spark)
    [incident] = build_incidents(orphaned, double, stuck, events, spark.createDataFrame([], SCHEMA), 10,
                                 producer_df=finding).collect()
    assert (incident.group, incident.kind, incident.cause, incident.severity, incident.queues) == (
        "g-slow", "PRODUCER", "ORDER_AT_RISK", "WARN", ["orders/broker-b"])
    assert incident.remediation == REMEDIATION[("PRODUCER", "ORDER_AT_RISK")]
    assert "orderTopicConf" in incident.remediation
    health = {r.group: (r.status, r.findings) for r in build_group_health(
        orphaned, double, stuck, events, _offsets(spark), 10, producer_df=finding).collect()}
    assert health["g-slow"] == ("WARN", ["WARN producer ORDER_AT_RISK orders broker-b (15.0 min)"])
    assert health["g-ok"] == ("OK", [])
