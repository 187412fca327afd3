"""Run replay cases (the ``vectors/`` format) through the Spark transform.

Cases become a states frame (``state_id`` = ``case_id``) and a calls frame (one row per call, with
its order), one plan answers all of them, and the rows are regrouped per case in input order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from jobs.replay.cases import Call, Case, result_json
from jobs.replay.reference import MessageQueue
from jobs.replay.spark_replay import MQ_ARRAY, STRING_ARRAY, with_allocation

STATES_SCHEMA = StructType([
    StructField("state_id", StringType()),
    StructField("strategy", StringType()),
    StructField("virtual_nodes", IntegerType()),
    StructField("consumer_idcs", STRING_ARRAY),
    StructField("config_queues", MQ_ARRAY),
    StructField("mq_all", MQ_ARRAY),
    StructField("cid_all", STRING_ARRAY),
])
CALLS_SCHEMA = StructType([
    StructField("state_id", StringType()),
    StructField("call_no", LongType()),
    StructField("current_cid", StringType()),
])


def _mqs(mqs: list[MessageQueue] | None):
    return None if mqs is None else [tuple(mq) for mq in mqs]


def cases_frames(spark: SparkSession, cases: list[Case]) -> tuple[DataFrame, DataFrame]:
    """(states_df, calls_df) for ``cases``; null lists stay null (Java nulls), empty stay empty."""
    states = [(case.case_id, case.strategy, case.virtual_nodes, case.consumer_idcs,
               _mqs(case.config_queues), _mqs(case.mq_all), case.cid_all) for case in cases]
    calls = [(case.case_id, n, call.current_cid) for case in cases for n, call in enumerate(case.calls)]
    return (spark.createDataFrame(states, STATES_SCHEMA), spark.createDataFrame(calls, CALLS_SCHEMA))


def replay_cases_spark(spark: SparkSession, cases: Iterable[Case]) -> Iterator[dict]:
    """Every call of every case through :func:`jobs.replay.spark_replay.with_allocation`."""
    cases = list(cases)
    if not cases:
        return
    states_df, calls_df = cases_frames(spark, cases)
    rows = calls_df.transform(with_allocation(states_df)).collect()
    by_call: dict[str, dict[int, Row]] = defaultdict(dict)
    for row in rows:
        by_call[row["state_id"]][row["call_no"]] = row
    for case in cases:
        results = []
        for n, call in enumerate(case.calls):
            row = by_call[case.case_id][n]
            allocated = None if row["allocated"] is None else [
                MessageQueue(mq["topic"], mq["broker_name"], mq["queue_id"]) for mq in row["allocated"]]
            error = None if row["error_class"] is None else (row["error_class"], row["error_message"])
            results.append(result_json(Call(call.current_cid_index, call.current_cid), allocated, error))
        yield {"case_id": case.case_id, "results": results}
