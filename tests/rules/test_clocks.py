"""Client-log clocks (DESIGN.md §5.1, issue #18) on hand-built frames, both engines: a host whose
``[persistAll]`` lines sit 8 h before the running-info snapshots that report the same offsets is
found, with its hour offset; a host on time, and a host whose only lines are of an idle queue
(the same offset for hours, which matches any old snapshot), are not. Per-host zones in the
parser are checked here too."""

import datetime as dt

from chispa import assert_df_equality

from jobs.ingest.client_logs import LogZones, glob_regex, parse_client_log_lines
from jobs.rules.clocks import CLOCK_SKEW_SCHEMA, clock_findings, host_clock_skew, without_skewed_hosts
from tests.rules.frames import DAY, T0

EVENTS = ("host string, group string, client_id string, ts timestamp, event string, offset long, "
          "queues array<struct<topic:string,broker_name:string,queue_id:int>>")
# bronze.running_info with the columns the clock check reads (the rest are never looked at)
RI = ("cluster string, group string, client_id string, ts timestamp, _source_file string, "
      "_line_no long, mq_table array<struct<topic:string,broker_name:string,queue_id:int,"
      "commit_offset:long>>, date date")
MINUTES = range(0, 180, 2)  # 10:00-13:00 real time


def _client(host, client_id, queue_id, log_shift_hours, moving=True):
    """Running info every 2 min (10 s after the minute) and a [persistAll] line every 2 min;
    the log's ``ts`` is the real instant shifted by ``log_shift_hours``."""
    def offset(m):
        return 1000 + (100 * m if moving else 0)

    mq = [{"topic": "t", "broker_name": "b", "queue_id": queue_id}]
    events = [(host, "g", client_id, T0 + dt.timedelta(minutes=m, hours=log_shift_hours),
               "PERSIST_OFFSET", offset(m), mq) for m in MINUTES]
    ri = [("c", "g", client_id, T0 + dt.timedelta(minutes=m, seconds=10), "ri.json", m,
           [{**mq[0], "commit_offset": offset(m)}], DAY) for m in MINUTES]
    return events, ri


def test_a_host_whose_log_is_whole_hours_off_running_info_is_found(spark):
    utc_events, utc_ri = _client("utc-1", "10.0.0.1@1", 0, -8)
    ok_events, ok_ri = _client("gmt8-1", "10.0.0.2@1", 1, 0)
    idle_events, idle_ri = _client("idle-1", "10.0.0.3@1", 2, -8, moving=False)
    events = spark.createDataFrame(utc_events + ok_events + idle_events, EVENTS)
    ri = spark.createDataFrame(utc_ri + ok_ri + idle_ri, RI)
    skew = host_clock_skew(events, ri)
    # logged at 02:00-05:00 for 10:00-13:00: one sample per logged hour, 3 hours
    expected = spark.createDataFrame([("c", "g", "utc-1", 8, 3, DAY)], CLOCK_SKEW_SCHEMA)
    assert_df_equality(skew, expected, ignore_row_order=True, ignore_nullable=True)
    # its claims are not ownership: its lines leave what silver.queue_ownership reads
    kept = without_skewed_hosts(events, skew)
    assert {r.host for r in kept.select("host").distinct().collect()} == {"gmt8-1", "idle-1"}
    assert kept.count() == 2 * len(MINUTES)
    (text,) = [r.text for r in clock_findings(skew, "GMT+8").collect()]
    assert text == ("INFO clock: host utc-1 client-log times are 8 h behind running_info "
                    "(its JVM logs in GMT+0?); map it in ingest.client_log_timezones")


def test_without_running_info_no_host_is_judged(spark):
    utc_events, _ = _client("utc-1", "10.0.0.1@1", 0, -8)
    skew = host_clock_skew(spark.createDataFrame(utc_events, EVENTS), spark.createDataFrame([], RI))
    assert skew.collect() == []


def test_each_host_folder_is_read_in_its_own_zone(spark):
    line = ("2025-11-21 10:00:00,000 INFO MQClientFactoryScheduledThread - [persistAll] Group: g "
            "ClientId: 10.0.0.1@1 updateConsumeOffsetToBroker MessageQueue [topic=t, brokerName=b, "
            "queueId=0] 1000")
    rows = [(f"client_logs/date=2025-11-21/{host}/rocketmq_client.log", i, line)
            for i, host in enumerate(["k8s-node-7", "app.gmt8-1", "k8s_node_x"])]
    lines = spark.createDataFrame(rows, "_source_file string, _line_no long, line string")
    zones = LogZones("GMT+8", (("k8s-node-*", "UTC"), ("k8s?node?x", "GMT-3")))
    got = {r._line_no: r.ts for r in parse_client_log_lines(lines, zones).collect()}
    assert got == {0: dt.datetime(2025, 11, 21, 10), 1: dt.datetime(2025, 11, 21, 2),
                   2: dt.datetime(2025, 11, 21, 13)}


def test_a_glob_is_a_regex_of_literal_characters():
    assert glob_regex("k8s-node-*") == "^k8s[-]node[-].*$"
    assert glob_regex("a.b?") == "^a[.]b.$"
