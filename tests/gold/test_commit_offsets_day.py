"""``build_commit_offsets`` (the clock check's slim read of running info) on a simulated day, on
the test engine: exactly ``build_process_queues``' rows for the columns it keeps, so narrowing the
mq_table entries changes no clock verdict."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from jobs.silver.process_queues import build_commit_offsets, build_process_queues

# a single-scenario day: on classic Spark in the acceptance tier (`make test-acceptance`)
pytestmark = pytest.mark.heavy_day

COLUMNS = ["cluster", "group", "client_id", "ts", "topic", "broker_name", "queue_id",
           "commit_offset", "date"]


def test_commit_offsets_are_the_process_queues_commit_offsets(scenario_day):
    _truth, layers = scenario_day("healthy")
    running_info = layers["bronze"]["running_info"]
    got = build_commit_offsets(running_info).select(*COLUMNS)
    want = build_process_queues(running_info).select(*COLUMNS)
    assert want.count() > 500
    assert_df_equality(got, want, ignore_row_order=True, ignore_nullable=True)
