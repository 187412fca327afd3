"""The hand-written day through bronze and silver frames, without Delta: runs on both engines."""

import datetime as dt

import pytest

from jobs import lake
from jobs.pipeline import bronze_frames, silver_frames
from jobs.settings import Settings
from tests.pipeline import hand_day_expected as E
from tests.pipeline.assertions import assert_bronze, assert_silver


@pytest.fixture(scope="module")
def bronze(spark, tmp_path_factory):
    staging = tmp_path_factory.mktemp("lake")

    def stage(df, name):  # the pipeline's own staging (Parquet), which needs no Delta
        return lake.stage(spark, df, staging, "test-run", name)

    return bronze_frames(spark, E.HAND_DAY, E.RUN_DATE, Settings(), "test-run",
                         dt.datetime(2025, 11, 22, 1, 0), stage)


def test_bronze_counts_quarantine_and_events_match_the_hand_day(spark, bronze):
    assert_bronze(spark, bronze)


def test_every_file_reconciles_lines_with_outcomes(bronze):
    for row in bronze["ingest_counts"].collect():
        assert row.lines == row.accepted + row.quarantined + row.other_day + row.unmatched


def test_silver_tables_match_the_hand_day(spark, bronze):
    assert_silver(spark, silver_frames(bronze, Settings()))


def test_unknown_extra_fields_are_kept_in_bronze(bronze):
    extras = {r.client_id: r._extra for r in bronze["connections"].where("group = 'GID_billing'")
              .select("client_id", "_extra").collect()}
    assert extras == {E.C3: {"labels": '{"team":"billing"}'}}


def test_epoch_ms_and_iso_timestamps_land_as_the_same_utc_instant(bronze):
    rows = (bronze["offsets"].where("queue_id = 0 and broker_name = 'broker-a'")
            .where("topic in ('orders', 'billing')").select("topic", "ts").distinct().collect())
    assert {(r.topic, r.ts) for r in rows} == {
        ("orders", E.T1), ("orders", E.T2), ("billing", E.T1), ("billing", E.T2),
        ("billing", E.LATE)}
