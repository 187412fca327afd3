"""gold.queue_load and gold.producer_findings on hand-built silver.queue_offsets frames (DESIGN.md §5.2)."""

from __future__ import annotations

import datetime as dt

import pytest
from chispa import assert_df_equality
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

from jobs.gold.producer_findings import ProducerRules, build_producer_findings
from jobs.gold.queue_load import build_queue_load

DAY = dt.date(2025, 11, 21)
START = dt.datetime(2025, 11, 21, 10, 0)
OFFSETS_SCHEMA = StructType([
    StructField("date", DateType()), StructField("cluster", StringType()), StructField("group", StringType()),
    StructField("topic", StringType()), StructField("broker_name", StringType()),
    StructField("queue_id", IntegerType()), StructField("ts", TimestampType()),
    StructField("broker_offset", LongType()), StructField("lag", LongType()),
])
EIGHT_QUEUES = [("broker-a", q) for q in range(4)] + [("broker-b", q) for q in range(4)]


def offsets_rows(topic, rates, minutes, group="g1", lag=None, start=START, first_offset=1000, step_seconds=60):
    """One snapshot a minute for ``minutes + 1`` minutes; ``rates[(broker, queue)]`` messages a
    minute (a number, or a function of the minute); ``lag((broker, queue), minute)`` the group's lag.
    ``step_seconds=30``: a collector polling twice a minute, ``minute`` and the rates then per step."""
    rows = []
    for (broker, queue), rate in rates.items():
        offset = first_offset
        for minute in range(minutes * 60 // step_seconds + 1):
            if minute:
                offset += rate(minute) if callable(rate) else rate
            rows.append((DAY, "c1", group, topic, broker, queue, start + dt.timedelta(seconds=minute * step_seconds),
                         offset, lag((broker, queue), minute) if lag else 0))
    return rows


def offsets_df(spark, *row_lists):
    return spark.createDataFrame([row for rows in row_lists for row in rows], OFFSETS_SCHEMA)


def hot_rates(hot=("broker-a", 3), hot_rate=30, other_rate=10, queues=EIGHT_QUEUES):
    return {mq: hot_rate if mq == hot else other_rate for mq in queues}


def gap_rates(gap_start, gap_end, rate=10):
    """broker-b's queues get nothing for the intervals ending after ``gap_start`` up to ``gap_end``."""
    def broker_b(minute):
        return 0 if gap_start < minute <= gap_end else rate
    return {mq: broker_b if mq[0] == "broker-b" else rate for mq in EIGHT_QUEUES}


def findings(spark, *row_lists, rules=None):
    rules = rules or ProducerRules()
    return [r.asDict() for r in build_producer_findings(offsets_df(spark, *row_lists), rules)
            .orderBy("topic", "finding").collect()]


# --- gold.queue_load -------------------------------------------------------------------------------

def test_queue_load_counts_broker_offset_increases_per_hour_once_per_topic_queue(spark):
    rates = {("broker-a", 0): 3, ("broker-a", 1): 1}
    # two groups report the same queues: traffic is counted once; 10:00..11:00 gives 59 intervals
    # ending in hour 10 and one (10:59 -> 11:00) in hour 11
    df = offsets_df(spark, offsets_rows("T", rates, 60, group="g1"), offsets_rows("T", rates, 60, group="g2"))
    expected = spark.createDataFrame([
        (DAY, "c1", "T", "broker-a", 0, 10, 177, 0.75), (DAY, "c1", "T", "broker-a", 0, 11, 3, 0.75),
        (DAY, "c1", "T", "broker-a", 1, 10, 59, 0.25), (DAY, "c1", "T", "broker-a", 1, 11, 1, 0.25),
    ], StructType([StructField("date", DateType()), StructField("cluster", StringType()),
                   StructField("topic", StringType()), StructField("broker_name", StringType()),
                   StructField("queue_id", IntegerType()), StructField("hour", IntegerType()),
                   StructField("messages_in", LongType()), StructField("share", DoubleType())]))
    assert_df_equality(build_queue_load(df), expected, ignore_row_order=True, ignore_nullable=True)


def test_queue_load_takes_a_broker_offset_decrease_as_a_reset_not_traffic(spark):
    rows = offsets_rows("T", {("broker-a", 0): 5}, 3)
    reset = [(*row[:7], 10 + i, 0) for i, row in enumerate(offsets_rows("T", {("broker-a", 0): 0}, 2,
                                                                         start=START + dt.timedelta(minutes=4)))]
    result = build_queue_load(offsets_df(spark, rows, reset)).collect()
    assert [(r["hour"], r["messages_in"]) for r in result] == [(10, 15 + 0 + 1 + 1)]  # 1000->1015, ->10, ->11, ->12


def test_queue_load_share_is_null_for_a_topic_without_traffic(spark):
    result = build_queue_load(offsets_df(spark, offsets_rows("IDLE", {mq: 0 for mq in EIGHT_QUEUES}, 30))).collect()
    assert len(result) == 8 and {(r["messages_in"], r["share"]) for r in result} == {(0, None)}


# --- HOT_QUEUE -------------------------------------------------------------------------------------

def test_hot_queue_fires_on_a_queue_with_far_more_than_its_share(spark):
    # broker-a:3 takes 30 of 100 messages a minute for 90 minutes: 30%, 2.4x the even 12.5%
    [row] = findings(spark, offsets_rows("ORDERS", hot_rates(), 90))
    assert (row["finding"], row["broker_name"], row["queue_id"], row["severity"]) == (
        "HOT_QUEUE", "broker-a", 3, "INFO")
    assert (row["first_seen"], row["last_seen"], row["minutes"]) == (START, START + dt.timedelta(minutes=90), 90.0)
    assert (row["share"], row["even_share"], row["groups"]) == (pytest.approx(0.3), 0.125, ["g1"])
    assert row["evidence"].startswith("queue broker-a/3 of ORDERS took 30.0% of the topic's 9000 messages "
                                      "from 10:00 to 11:30 UTC (90 min), 2.4x the even share of 12.5%")


def test_hot_queue_is_warn_when_a_group_falls_behind_on_that_queue_only(spark):
    slow = offsets_rows("ORDERS", hot_rates(), 90, group="slow",
                        lag=lambda mq, minute: 20 * minute if mq == ("broker-a", 3) else 5)
    fast = offsets_rows("ORDERS", hot_rates(), 90, group="fast")
    [row] = findings(spark, slow, fast)
    assert (row["severity"], row["groups"]) == ("WARN", ["fast", "slow"])
    assert row["evidence"].endswith("; lag grew on this queue only for slow")


def test_hot_queue_stays_info_when_every_queue_of_the_group_lags_more(spark):
    rows = offsets_rows("ORDERS", hot_rates(), 90, lag=lambda mq, m: 10 * m)  # the whole group is behind
    [row] = findings(spark, rows)
    assert row["severity"] == "INFO"



# HOT_QUEUE severity against lag noise (issue 56, DESIGN.md §5.2): healthy lags wobble by tens of
# messages between snapshots; the hot queue's growth is its peak over its lag at the window start.
HOT = ("broker-a", 3)


def wobble(mq, minute):
    """A healthy queue's lag: 40..80 messages, a different phase per queue, never flat."""
    broker, queue = mq
    return 40 + (37 * minute + 11 * queue + (5 if broker == "broker-b" else 0)) % 41


def hot_lag(hot, others=wobble):
    """``lag`` for ``offsets_rows``: ``hot(minute)`` on the hot queue, ``others(mq, minute)`` elsewhere."""
    return lambda mq, minute: hot(minute) if mq == HOT else others(mq, minute)


NOISE_CASES = {
    # the hot queue's lag rises by 1800 while every other queue wobbles by at most 40
    "NOISY_BEHIND": ("WARN", hot_lag(lambda m: 50 + 20 * m)),
    # the backlog builds to 1400 and drains again before the window ends: its ends are level
    "PEAK_INSIDE": ("WARN", hot_lag(lambda m: 50 + 30 * min(m, 90 - m))),
    # every queue's lag grows: the consumers are simply slow (others +450 > 0.1 x 1800)
    "ALL_SLOW": ("INFO", hot_lag(lambda m: 50 + 20 * m, lambda mq, m: 5 * m + wobble(mq, m))),
    # the hot queue drains: its peak is its start
    "DRAINING": ("INFO", hot_lag(lambda m: 2000 - 20 * m)),
    # the hot queue only wobbles too: a growth of tens is within the others' noise
    "WOBBLE_ONLY": ("INFO", hot_lag(lambda m: wobble(HOT, m) + 5)),
    # no lag figure on any other queue (a collector that lost them): nothing to compare with
    "OTHERS_UNKNOWN": ("INFO", hot_lag(lambda m: 50 + 20 * m, lambda mq, m: None)),
    # no lag figure on the hot queue: no growth
    "HOT_UNKNOWN": ("INFO", hot_lag(lambda m: None, lambda mq, m: 0)),
    # the bound: one other queue grows by exactly 0.1 x the hot queue's 900, or by one more
    "AT_NOISE_BOUND": ("WARN", hot_lag(lambda m: 100 + 10 * m,
                                       lambda mq, m: 100 + m if mq == ("broker-b", 0) else 100)),
    "OVER_NOISE_BOUND": ("INFO", hot_lag(lambda m: 100 + 10 * m,
                                         lambda mq, m: 100 + m + (m == 90) if mq == ("broker-b", 0) else 100)),
}


def test_hot_queue_severity_is_judged_against_lag_noise(spark):
    # the input is what the cases claim: in the noisy cases some other queue ends above its start
    # (an end-to-end reading took that for growth) and wobbles by at most 40; PEAK_INSIDE's hot
    # queue ends where it started
    for topic in ("NOISY_BEHIND", "PEAK_INSIDE", "DRAINING"):
        lag = NOISE_CASES[topic][1]
        assert any(lag(mq, 90) > lag(mq, 0) for mq in EIGHT_QUEUES if mq != HOT), topic
        assert max(lag(mq, m) - lag(mq, 0) for mq in EIGHT_QUEUES if mq != HOT for m in range(91)) <= 40
    assert NOISE_CASES["PEAK_INSIDE"][1](HOT, 90) == NOISE_CASES["PEAK_INSIDE"][1](HOT, 0)
    rows = [offsets_rows(topic, hot_rates(), 90, group="slow", lag=lag) for topic, (_, lag) in NOISE_CASES.items()]
    found = {r["topic"]: r for r in findings(spark, *rows)}
    assert {t: (r["finding"], r["severity"]) for t, r in found.items()} == {
        t: ("HOT_QUEUE", severity) for t, (severity, _) in NOISE_CASES.items()}
    for r in found.values():
        assert r["evidence"].endswith("; lag grew on this queue only for slow") == (r["severity"] == "WARN"), r


def test_hot_queue_noise_allowance_comes_from_the_settings(spark):
    from jobs.gold.producer_findings import producer_rules
    from jobs.settings import Settings

    rows = offsets_rows("NOISY_BEHIND", hot_rates(), 90, group="slow", lag=NOISE_CASES["NOISY_BEHIND"][1])
    strict = producer_rules(Settings(producer={"lag_growth_noise": 0.0}))
    assert strict.lag_growth_noise == 0.0 and ProducerRules().lag_growth_noise == 0.1
    # with no allowance for noise, one other queue's wobble of tens keeps it INFO
    assert [r["severity"] for r in findings(spark, rows, rules=strict)] == ["INFO"]

def without_minutes(rows, minutes, start=START):
    """``rows`` less the snapshots taken ``minutes`` after ``start`` (a collector that missed them)."""
    missing = {start + dt.timedelta(minutes=m) for m in minutes}
    return [row for row in rows if row[6] not in missing]


@pytest.mark.parametrize(("missing", "windows"), [
    # snapshots 12:01..12:07 missing: 8 minutes between 12:00 and 12:08 > max_snapshot_gap 300 s
    (range(121, 128), [(START, START + dt.timedelta(minutes=120)),
                       (START + dt.timedelta(minutes=128 - 60), START + dt.timedelta(minutes=180))]),
    # 12:01..12:04 missing: 5 minutes is still one window
    (range(121, 125), [(START, START + dt.timedelta(minutes=180))]),
])
def test_hot_queue_window_breaks_only_at_a_snapshot_gap_longer_than_the_maximum(spark, missing, windows):
    rows = without_minutes(offsets_rows("ORDERS", hot_rates(), 180), missing)
    found = sorted((r["first_seen"], r["last_seen"]) for r in findings(spark, rows))
    assert found == windows


def test_hot_queue_fires_once_per_hot_stretch(spark):
    # 30% for 90 minutes, even for 90, 30% again for 120: two windows, the second from the
    # trailing hour of its first hot snapshot to the end
    def rate(minute):
        return 10 if 90 < minute <= 180 else 30
    found = sorted((r["first_seen"], r["last_seen"]) for r in
                   findings(spark, offsets_rows("ORDERS", hot_rates(hot_rate=rate), 300)))
    assert len(found) == 2
    (first_from, first_to), (second_from, second_to) = found
    assert (first_from, second_to) == (START, START + dt.timedelta(minutes=300))
    assert START + dt.timedelta(minutes=90) <= first_to < second_from


@pytest.mark.parametrize("start", [START, START + dt.timedelta(minutes=7, seconds=30)])
def test_hot_queue_lag_growth_reads_the_window_first_and_last_snapshot(spark, start):
    # the slow group's lag on the hot queue is 100 at the window's first snapshot, 0 in between
    # and 101 at its last: it grew by 1 over the window (the ends are inclusive, and fall on a
    # quarter hour or between two); every other queue's lag stays 0
    def lag(mq, minute):
        if mq != ("broker-a", 3):
            return 0
        return {0: 100, 90: 101}.get(minute, 0)
    slow = offsets_rows("ORDERS", hot_rates(), 90, group="slow", lag=lag, start=start)
    shrinking = offsets_rows("ORDERS", hot_rates(), 90, group="shrinking", start=start,
                             lag=lambda mq, minute: {0: 100, 90: 99}.get(minute, 0) if mq == ("broker-a", 3) else 0)
    [row] = findings(spark, slow, shrinking)
    assert (row["first_seen"], row["last_seen"]) == (start, start + dt.timedelta(minutes=90))
    assert (row["severity"], row["evidence"].rsplit("; ", 1)[-1]) == ("WARN", "lag grew on this queue only for slow")


MUST_NOT_BE_HOT = [
    ("even round robin", offsets_rows("EVEN", {mq: 12 + (mq[1] % 2) for mq in EIGHT_QUEUES}, 180)),
    # a collector that missed ten minutes: the interval after the gap carries every queue's
    # messages of those minutes at once, evenly
    ("even, snapshots missed", without_minutes(
        offsets_rows("EVEN_GAPS", {mq: 12 + (mq[1] % 2) for mq in EIGHT_QUEUES}, 180), range(60, 70))),
    # a collector polling twice a minute: each queue counts once among the eight active ones, so
    # broker-a:3 at 15 of 85 messages (17.6%, 1.4x the even 12.5%) is not hot
    ("even, snapshotted every 30 s", offsets_rows("EVEN_30S", hot_rates(hot_rate=15), 180, step_seconds=30)),
    ("retry topic", offsets_rows("%RETRY%g1", hot_rates(), 180)),
    ("dead-letter topic", offsets_rows("%DLQ%g1", hot_rates(), 180)),
    ("three queues", offsets_rows("SMALL", hot_rates(hot=("broker-a", 2), hot_rate=300,
                                                     queues=[("broker-a", q) for q in range(3)]), 180)),
    ("no traffic", offsets_rows("IDLE", {mq: 0 for mq in EIGHT_QUEUES}, 180)),
    # 30 minutes at 30%, then even: no 60-minute window reaches 25% (at most 1200 of 5400)
    ("hot for 30 minutes only", offsets_rows("BURST", hot_rates(hot_rate=lambda m: 30 if m <= 30 else 10), 180)),
    # 30% of 10 messages a minute for 90 minutes: 900 messages < min_messages 1000
    ("under min_messages", offsets_rows("QUIET", hot_rates(hot_rate=3, other_rate=1), 90)),
    # broker-b gets nothing for two hours: broker-a's 4 queues take 25% each, their even share
    # among the queues still written to (that is BROKER_STARVED, not a hot queue)
    ("other broker starved", offsets_rows("SHUNNED", gap_rates(10, 150), 180)),
]


def test_hot_queue_does_not_fire_on_even_retry_small_idle_short_or_quiet_topics(spark):
    # one frame for all cases (one plan instead of seven); each case is its own topic
    hot = [(r["topic"], r["broker_name"], r["queue_id"]) for r in
           findings(spark, *[rows for _, rows in MUST_NOT_BE_HOT]) if r["finding"] == "HOT_QUEUE"]
    assert hot == []


# --- QUEUE_COUNT_SKEW ------------------------------------------------------------------------------

def test_queue_count_skew_fires_once_per_topic_with_unequal_brokers(spark):
    queues = [("broker-a", q) for q in range(8)] + [("broker-b", q) for q in range(4)]
    [row] = findings(spark, offsets_rows("WIDE", {mq: 10 for mq in queues}, 30),
                     offsets_rows("WIDE", {mq: 10 for mq in queues}, 30, group="g2"))
    assert (row["finding"], row["broker_name"], row["queue_id"], row["severity"]) == (
        "QUEUE_COUNT_SKEW", None, None, "INFO")
    assert (row["share"], row["even_share"], row["groups"]) == (pytest.approx(8 / 12), 0.5, ["g1", "g2"])
    assert "broker-a 8 queues (66.7% of the messages), broker-b 4 queues (33.3% of the messages)" in row["evidence"]


MUST_NOT_SKEW = [
    ("equal counts", offsets_rows("EVEN", {mq: 10 for mq in EIGHT_QUEUES}, 30)),
    ("no traffic", offsets_rows("IDLE", {mq: 0 for mq in [("broker-a", 0), ("broker-a", 1), ("broker-b", 0)]}, 30)),
    ("retry topic", offsets_rows("%RETRY%g1", {mq: 1 for mq in [("broker-a", 0), ("broker-a", 1),
                                                                  ("broker-b", 0)]}, 30)),
]


def test_queue_count_skew_does_not_fire_on_equal_idle_or_retry_topics(spark):
    assert findings(spark, *[rows for _, rows in MUST_NOT_SKEW]) == []


# --- BROKER_STARVED --------------------------------------------------------------------------------

def test_broker_starved_fires_when_one_broker_gets_nothing_while_the_others_keep_their_pace(spark):
    [row] = findings(spark, offsets_rows("PAY", gap_rates(20, 32), 60))
    assert (row["finding"], row["broker_name"], row["queue_id"], row["severity"]) == (
        "BROKER_STARVED", "broker-b", None, "WARN")
    assert (row["first_seen"], row["last_seen"], row["minutes"]) == (
        START + dt.timedelta(minutes=20), START + dt.timedelta(minutes=32), 12.0)
    assert (row["share"], row["even_share"], row["groups"]) == (0.0, 0.5, ["g1"])
    assert row["evidence"].startswith("broker-b got no message of PAY from 10:20 to 10:32 UTC (12 min) while "
                                      "the topic's other brokers kept their usual rate, after 800 messages")


def test_broker_starved_is_info_below_starved_warn_minutes(spark):
    [row] = findings(spark, offsets_rows("PAY", gap_rates(20, 25), 60))
    assert (row["finding"], row["minutes"], row["severity"]) == ("BROKER_STARVED", 5.0, "INFO")


def test_broker_starved_leaves_out_a_master_down_window(spark):
    df = offsets_df(spark, offsets_rows("PAY", gap_rates(20, 32), 60))
    down = spark.createDataFrame([("c1", "broker-b", START + dt.timedelta(minutes=19),
                                   START + dt.timedelta(minutes=33))],
                                 "cluster string, broker_name string, down_from timestamp, down_to timestamp")
    assert build_producer_findings(df, ProducerRules(), master_down_df=down).collect() == []


def lull_rates(minute):
    return 0 if 20 < minute <= 35 else 10


MUST_NOT_STARVE = [
    ("no traffic at all", offsets_rows("IDLE", {mq: 0 for mq in EIGHT_QUEUES}, 60)),
    ("every broker quiet at once", offsets_rows("LULL", {mq: lull_rates for mq in EIGHT_QUEUES}, 60)),
    ("2 minutes without messages", offsets_rows("BLIP", gap_rates(20, 22), 60)),
    ("never received today", offsets_rows("READONLY", gap_rates(-1, 60), 60)),
    # 1 message every 8 minutes per queue: half a message a minute per broker, nothing to keep pace with
    ("sparse traffic", offsets_rows("SPARSE", {mq: (lambda q: lambda m: 1 if m % 8 == 2 * q else 0)(mq[1])
                                               for mq in EIGHT_QUEUES}, 120)),
    ("retry topic", offsets_rows("%RETRY%g1", gap_rates(20, 32), 60)),
]


def test_broker_starved_does_not_fire_on_idle_quiet_short_never_used_sparse_or_retry_topics(spark):
    starved = [(r["topic"], r["broker_name"]) for r in findings(spark, *[rows for _, rows in MUST_NOT_STARVE])
               if r["finding"] == "BROKER_STARVED"]
    assert starved == []


def test_thresholds_come_from_the_producer_section_of_the_settings(spark, tmp_path):
    from jobs.gold.producer_findings import producer_rules
    from jobs.settings import load_settings

    conf = tmp_path / "producer.toml"
    conf.write_text("[producer]\nhot_min_minutes = 30\n")
    burst = offsets_rows("BURST", hot_rates(hot_rate=lambda m: 30 if m <= 30 else 10), 180)
    assert [r["finding"] for r in findings(spark, burst, rules=producer_rules(load_settings(conf)))] == ["HOT_QUEUE"]
