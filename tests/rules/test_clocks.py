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


RI_PROPS = RI.replace(", date date", ", properties map<string,string>, date date")
START_MS = int((T0.replace(tzinfo=dt.timezone.utc)).timestamp() * 1000)


def _started(host, client_id, log_shift_hours, factory_after_seconds=0.178, properties=True):
    """One client that started at T0 (running info's PROP_CONSUMER_START_TIMESTAMP) and logged
    its ``the client factory [id] start OK`` line ``factory_after_seconds`` later, on a clock
    ``log_shift_hours`` off; no [persistAll] line at all."""
    logged = T0 + dt.timedelta(hours=log_shift_hours, seconds=factory_after_seconds)
    events = [(host, None, client_id, logged, "CLIENT_STARTED", None, None)]
    props = {"PROP_CONSUMER_START_TIMESTAMP": str(START_MS)} if properties else {"PROP_CLIENT_VERSION": "V4_9_7"}
    ri = [("c", "g", client_id, T0 + dt.timedelta(seconds=10), "ri.json", 1, [], props, DAY)]
    return events, ri


def test_a_client_start_tells_its_hosts_clock_exactly(spark):
    """The real cluster's 4.9.7 clients logged in UTC read as GMT+8: each client's start line
    against its running info's start time decides the host, without two hours of persist lines.
    Not judged: a host on time; a JVM whose factory a producer started 37 min before this
    consumer was built (no whole-hour offset: no sample); a client whose running info has no
    start time (a 3.x client); a start line of a client that never answered running info."""
    cases = [_started("utc-1", "10.0.0.1@1", -8), _started("gmt8-1", "10.0.0.2@1", 0),
             _started("shared-1", "10.0.0.3@1", 0, factory_after_seconds=-37 * 60),
             _started("old-1", "10.0.0.4@1", -8, properties=False)]
    events = [e for ev, _ in cases for e in ev] + [("silent-1", None, "10.0.0.5@1", T0, "CLIENT_STARTED", None, None)]
    ri = [r for _, rows in cases for r in rows]

    skew = host_clock_skew(spark.createDataFrame(events, EVENTS), spark.createDataFrame(ri, RI_PROPS))

    assert [(r.host, r.offset_hours, r.samples) for r in skew.collect()] == [("utc-1", 8, 2)]


def test_running_info_without_properties_gives_no_start_sample(spark):
    events, ri = _started("utc-1", "10.0.0.1@1", -8)
    without = [r[:7] + r[8:] for r in ri]  # a collector that keeps no properties

    skew = host_clock_skew(spark.createDataFrame(events, EVENTS), spark.createDataFrame(without, RI))

    assert skew.collect() == []


def test_persist_samples_on_time_outvote_one_start_sample(spark):
    """A host whose [persistAll] lines of three hours match running info on time keeps its
    claims although one client's start reads 1 h off (a consumer built an hour before its
    factory started: exact in form, wrong in fact)."""
    on_time, on_time_ri = _client("app-1", "10.0.0.1@1", 0, 0)
    start, start_ri = _started("app-1", "10.0.0.1@2", -1)
    ri = [r[:7] + ({},) + r[7:] for r in on_time_ri] + start_ri

    skew = host_clock_skew(spark.createDataFrame(on_time + start, EVENTS), spark.createDataFrame(ri, RI_PROPS))

    assert skew.collect() == []
