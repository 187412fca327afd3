"""Validation and day assignment of JSON landing lines (both engines)."""

import datetime as dt
import json

import pytest

from jobs.ingest.json_records import classify_json_lines
from schemas.landing import CONNECTIONS, OFFSETS

D = dt.date(2025, 11, 21)
NEXT = D + dt.timedelta(days=1)
LINES_DDL = "_source_file string, _folder_date date, _line_no long, line string, _defect string"


def offset(**over):
    rec = {"ts": "2025-11-21T10:00:00Z", "cluster": "c", "group": "g", "topic": "t",
           "broker_name": "b", "queue_id": 0, "broker_offset": 10, "consumer_offset": 5}
    rec.update(over)
    return json.dumps({k: v for k, v in rec.items() if v is not ...})


def classify(spark, lines, source=OFFSETS, folder=D):
    df = spark.createDataFrame([("f", folder, i + 1, line, None) for i, line in enumerate(lines)],
                               LINES_DDL)
    return [(r._status, r._reason) for r in
            classify_json_lines(df, source, D).orderBy("_line_no").collect()]


@pytest.mark.parametrize("line, expected", [
    (offset(), ("accepted", None)),
    (offset(ts=1763719200000), ("accepted", None)),
    (offset(ts="2025-11-21T18:00:00+08:00"), ("accepted", None)),
    ("", ("quarantined", "empty_line")),
    ("{not json", ("quarantined", "malformed_json: not a JSON object")),
    ('{"ts": "2025-11-21T10:00:00Z", "cluster": "c"', ("quarantined", "malformed_json: truncated record")),
    ("[1, 2]", ("quarantined", "malformed_json: not a JSON object")),
    (offset(consumer_offset=...), ("quarantined", "missing_required_field: consumer_offset")),
    (offset(group=None), ("quarantined", "missing_required_field: group")),
    (offset(ts="2025-11-21T10:00:00"), ("quarantined", "invalid_timestamp: ts=2025-11-21T10:00:00")),
    (offset(ts="yesterday"), ("quarantined", "invalid_timestamp: ts=yesterday")),
    (offset(queue_id="0"), ("quarantined", "wrong_type: queue_id")),
    (offset(broker_offset=10.5), ("quarantined", "wrong_type: broker_offset")),
    (offset(pull_offset="x"), ("quarantined", "wrong_type: pull_offset")),
    (offset(broker_offset=-1), ("quarantined", "negative_offset: broker_offset=-1")),
    (offset(consumer_offset=20), ("accepted", None)),
    # the queue's minimum offset (DESIGN.md §3.1, §5.4): optional, an offset like the others
    (offset(min_offset=3), ("accepted", None)),
    (offset(min_offset=-1), ("quarantined", "negative_offset: min_offset=-1")),
    (offset(min_offset="3"), ("quarantined", "wrong_type: min_offset")),
    (offset(ts="2025-11-20T23:59:59Z"), ("other_day", None)),
    (offset(ts="2025-11-19T12:00:00Z"),
     ("quarantined", "out_of_window: record day 2025-11-19 in folder date=2025-11-21")),
    (offset(ts="2025-11-22T00:00:01Z"),
     ("quarantined", "out_of_window: record day 2025-11-22 in folder date=2025-11-21")),
])
def test_a_line_in_the_runs_own_folder(spark, line, expected):
    assert classify(spark, [line]) == [expected]


def test_in_the_next_days_folder_only_records_of_the_run_day_are_taken(spark):
    lines = [offset(ts="2025-11-21T23:59:30Z"), offset(ts="2025-11-22T00:00:30Z"), "{bad",
             offset(ts="2025-11-21T23:59:30Z", queue_id="x")]
    assert classify(spark, lines, folder=NEXT) == [
        ("accepted", None), ("other_day", None), ("other_day", None),
        ("quarantined", "wrong_type: queue_id")]


def test_unknown_fields_are_kept_as_raw_json_text(spark):
    df = spark.createDataFrame([("f", D, 1, offset(tags={"a": [1]}, note="x"), None)], LINES_DDL)
    row = classify_json_lines(df, OFFSETS, D).collect()[0]
    assert row._status == "accepted" and row._extra == {"tags": '{"a":[1]}', "note": "x"}


def test_unknown_enum_values_are_quarantined(spark):
    line = json.dumps({"ts": "2025-11-21T10:00:00Z", "cluster": "c", "group": "g",
                       "client_id": "1.2.3.4@1", "client_addr": "1.2.3.4:5",
                       "message_model": "CLUSTERED"})
    assert classify(spark, [line], source=CONNECTIONS) == [
        ("quarantined", "unknown_enum_value: message_model=CLUSTERED")]


def test_broker_addr_is_an_optional_connections_field_carried_to_bronze(spark):
    """DESIGN.md §3.2 (issue #17 case 5): the broker node that listed the channel; a record
    without it is accepted too."""
    from jobs.ingest.json_sources import bronze_fields

    rec = {"ts": "2025-11-21T10:00:00Z", "cluster": "c", "group": "g", "client_id": "1.2.3.4@1",
           "client_addr": "1.2.3.4:5", "broker_name": "broker-a"}
    lines = [json.dumps(rec | {"broker_addr": "10.9.0.2:10911"}), json.dumps(rec)]
    df = spark.createDataFrame([("f", D, i + 1, line, None) for i, line in enumerate(lines)],
                               LINES_DDL)
    rows = classify_json_lines(df, CONNECTIONS, D).orderBy("_line_no").collect()
    assert [r._status for r in rows] == ["accepted", "accepted"]
    assert [r.broker_addr for r in rows] == ["10.9.0.2:10911", None]
    assert "broker_addr" in bronze_fields(CONNECTIONS)
