"""Issue #18's consume stalls simulated from RocketMQ's mechanics, through every layer, both
engines (scenario ``consume-stalls``): an orderly consumer's poison message, a consumer whose
every thread hangs, a concurrent consumer with one slow message and a healthy orderly group
under steady load, beside every other consumer kind (``consumer-kinds``, no fault there). The
gold tables equal the truth: exactly the poisoned queue is CONSUME_FAILING and the hung client's
queues CONSUMER_HUNG, the slow message stays SLOW_MESSAGE, and no other group — the healthy
orderly one, broadcast, pop, lite pull — has a WARN or CRITICAL finding (issue #18's acceptance).
The hung group and a second slow message (``slow-message-recovery``) answer running info 30 s
after the offsets collection, so one answer of each shows the recovery before the offsets do:
it is no evidence of the cause (issue 56)."""

import datetime as dt

import pytest
from pyspark.sql import functions as F

from tests.gold.conftest import expected, shared_layers
from tests.gold.test_stuck_queues import assert_equal_to_truth

# a simulated day of its own: on classic Spark in the acceptance tier (`make test-acceptance`)
pytestmark = pytest.mark.heavy_day

WINDOW = ("09:55", "10:15")


def stalls_day(spark, tmp_path_factory):
    """(truth, layers) of the consume-stalls day, computed once per run (it is also the
    consumer-kinds day of tests/gold/test_consumer_kinds_day.py, whose groups it holds)."""
    return shared_layers(spark, tmp_path_factory, "consume-stalls", "consume-stalls", WINDOW)


@pytest.fixture(scope="module")
def stalls(spark, tmp_path_factory):
    return stalls_day(spark, tmp_path_factory)


def test_stuck_queues_equal_the_truth_and_are_exactly_the_injected_ones(stalls):
    truth, layers = stalls
    gold = layers["gold"]
    assert not truth["unexplained"]
    assert_equal_to_truth(gold["stuck_queues"], truth)
    got = sorted((r.group, r.queue_id, r.root_cause) for r in gold["stuck_queues"].collect())
    assert got == [("GID_billing", 0, "CONSUMER_HUNG"), ("GID_billing", 1, "CONSUMER_HUNG"),
                   ("GID_seq_orders", 1, "CONSUME_FAILING"),
                   ("GID_slow_payments", 2, "SLOW_MESSAGE"), ("GID_slow_refunds", 1, "SLOW_MESSAGE")]
    assert gold["orphaned_queues"].count() == 0 == len(expected(truth, "expected_orphaned_queues"))
    assert gold["double_owned_queues"].count() == 0


def test_each_row_says_which_signal_decided(stalls):
    _, layers = stalls
    rows = {(r.group, r.queue_id): r for r in layers["gold"]["stuck_queues"].collect()}
    poison = rows[("GID_seq_orders", 1)]
    assert poison.blocking_offset == poison.committed_offset and poison.redelivery_risk == 0
    assert "consume_failed_tps > 0 for the topic at all" in poison.evidence
    assert "orderly consumer: message" in poison.evidence
    hung = rows[("GID_billing", 0)]
    assert hung.blocking_offset is None and hung.flow_controlled
    assert "consume_ok_tps and consume_failed_tps are 0" in hung.evidence
    slow = rows[("GID_slow_payments", 2)]
    assert "later messages finish (consume_ok_tps for the topic up to" in slow.evidence


def test_only_the_injected_groups_are_warn_or_critical(stalls):
    _, layers = stalls
    loud = sorted(r.group for r in layers["gold"]["group_health"].collect()
                  if r.status != "OK" or any(f.startswith(("WARN", "CRITICAL")) for f in r.findings))
    assert loud == ["GID_billing", "GID_seq_orders", "GID_slow_payments", "GID_slow_refunds"]


def test_the_healthy_orderly_group_is_ok(stalls):
    """Under steady load an orderly consumer's fresh last_consume_timestamp, moving cached max
    and the broker locks it holds are no finding."""
    _, layers = stalls
    health = {r.group: r for r in layers["gold"]["group_health"].collect()}
    assert health["GID_seq_audit"].status == "OK", health["GID_seq_audit"].findings
    orderly = layers["silver"]["client_config"].where("`group` = 'GID_seq_audit'").collect()
    assert orderly and all(r.is_orderly for r in orderly)


def test_an_answer_of_the_recovery_falls_between_the_offsets_snapshots(stalls):
    """The day has what issue 56 is about: for each episode of the groups polled on their own
    cycle, an owner's answer after the last pinned offsets snapshot and before the first moved
    one whose mq_table shows the commit past the pin and whose OK rate is above 0."""
    _, layers = stalls
    silver = layers["silver"]
    for row in layers["gold"]["stuck_queues"].where("`group` IN ('GID_billing', 'GID_slow_refunds')").collect():
        answers = (silver["process_queues"].alias("pq")
                   .join(silver["consume_status"].alias("cs"), ["cluster", "group", "client_id", "ts", "topic"])
                   .where((F.col("group") == row.group) & (F.col("queue_id") == row.queue_id)
                          & (F.col("client_id") == row.owner) & (F.col("ts") > row.last_seen)
                          & (F.col("ts") < row.released_at + dt.timedelta(seconds=60))
                          & (F.col("commit_offset") > row.committed_offset) & (F.col("consume_ok_tps") > 0))
                   .count())
        assert answers >= 1, row


def test_the_recovery_answer_is_no_evidence(stalls):
    """The hung client's rates are 0 at every answer while the pin holds; its answer of the
    recovery (OK rate > 0, a refilled cache) counted, it was SLOW_MESSAGE."""
    _, layers = stalls
    rows = {(r.group, r.queue_id): r for r in layers["gold"]["stuck_queues"].collect()}
    hung = rows[("GID_billing", 0)]
    assert hung.root_cause == "CONSUMER_HUNG" and hung.blocking_offset is None
    refunds = rows[("GID_slow_refunds", 1)]
    assert refunds.root_cause == "SLOW_MESSAGE" and refunds.blocking_offset == refunds.committed_offset
    assert refunds.flow_controlled and refunds.in_flight_span >= 2000  # consumeConcurrentlyMaxSpan
