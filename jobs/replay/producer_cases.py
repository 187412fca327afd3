"""Producer replay cases (records with a ``selector`` field, ``vectors/README.md``; DESIGN.md §7.1).

Output per case: ``{"case_id", "broker_name", "queue_id", "error"}``; ``error`` is ``{"class",
"message"}`` as in §7, plus ``"cause": {"class", "message"}`` when the Java exception has one
(4.7.1's failing ``Integer.MIN_VALUE`` hash), as the vectors write it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from jobs.replay.producer_reference import (
    SendError,
    TopicRoute,
    parse_client_version,
    parse_key,
    route_from_json,
    select_queue,
)


@dataclass(frozen=True)
class ProducerCase:
    case_id: str
    selector: str
    client_version: str | None
    topic: str
    key_type: str
    key_value: str
    route: TopicRoute
    raw: dict = field(default_factory=dict, repr=False, compare=False)


def is_producer_record(record: dict) -> bool:
    return isinstance(record, dict) and "selector" in record


def parse_producer_case(record: dict) -> ProducerCase:
    """A ProducerCase from one JSON object; ValueError/KeyError/TypeError when it is not one."""
    key = record["key"]
    key_type, value = key["type"], key["value"]
    key_value = parse_key(key_type, value)  # the key must be a value of its Java class
    parse_client_version(record.get("client_version"))
    return ProducerCase(case_id=record["case_id"], selector=record["selector"],
                        client_version=record.get("client_version"), topic=record["topic"],
                        key_type=key_type, key_value=str(key_value), route=route_from_json(record["route"]),
                        raw=record)


def output_json(case_id: str, broker_name: str | None, queue_id: int | None, error: dict | None) -> dict:
    return {"case_id": case_id, "broker_name": broker_name, "queue_id": queue_id, "error": error}


def replay_producer_case_python(case: ProducerCase) -> dict:
    """One case through the pure-Python reference."""
    try:
        broker, queue_id = select_queue(case.topic, case.route, case.key_type, case.key_value,
                                        case.client_version, case.selector)
    except SendError as exc:
        return output_json(case.case_id, None, None, exc.as_json())
    return output_json(case.case_id, broker, queue_id, None)


def replay_producer_cases_python(cases: Iterable[ProducerCase]) -> Iterator[dict]:
    for case in cases:
        yield replay_producer_case_python(case)


def _route_row(route: TopicRoute) -> tuple:
    return (route.order_topic_conf,
            [(qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm) for qd in route.queue_datas],
            [(bd.broker_name, list(bd.broker_ids)) for bd in route.broker_datas])


def producer_cases_frame(spark: SparkSession, cases: list[ProducerCase]):
    """One row per case with the input columns of :func:`jobs.replay.producer_spark.with_publish_queue`."""
    from jobs.replay.producer_spark import ROUTE_TYPE

    schema = StructType([StructField("case_no", LongType())]
                        + [StructField(name, StringType()) for name in
                         ("case_id", "selector", "client_version", "topic", "key_type", "key_value")]
                        + [StructField("route", ROUTE_TYPE)])
    rows = [(n, c.case_id, c.selector, c.client_version, c.topic, c.key_type, c.key_value, _route_row(c.route))
            for n, c in enumerate(cases)]
    return spark.createDataFrame(rows, schema)


def replay_producer_cases_spark(spark: SparkSession, cases: Iterable[ProducerCase]) -> Iterator[dict]:
    """Every case through the Spark transform, in input order."""
    from jobs.replay.producer_spark import with_publish_queue

    cases = list(cases)
    if not cases:
        return
    rows = {row["case_no"]: row for row in
            producer_cases_frame(spark, cases).transform(with_publish_queue).collect()}
    for n, case in enumerate(cases):
        row = rows[n]
        error = None
        if row["error_class"] is not None:
            error = {"class": row["error_class"], "message": row["error_message"]}
            if row["error_cause_class"] is not None:
                error["cause"] = {"class": row["error_cause_class"], "message": row["error_cause_message"]}
        yield output_json(case.case_id, row["broker_name"], row["queue_id"], error)
