"""Batches of whole groups and topics (``engine.group_batch_rows``, issue #19): the per-group silver
tables and the per-topic producer tables computed batch by batch give the same lake as one pass.
The sample day (every fault and consumer kind, several groups and topics) run again with a batch
size that cuts it into several batches; every silver and gold table must hold the same rows as
the one-batch lake of ``sample_lake``."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import shutil

import pytest
from pyspark.sql import functions as F

from jobs import lake
from jobs.pipeline import (
    BatchedFrames,
    in_batch,
    key_batches,
    rows_per_key,
    topic_batches,
    with_batch,
    with_parse_batch,
)
from tests.conftest import SAMPLE_DAY, run_cli

DAY = dt.date.fromisoformat(SAMPLE_DAY)
RUN_METADATA = {"_run_id", "_ingested_at", "run_id"}


def _rows(spark, lake_dir, layer, name) -> list[str]:
    df = lake.read_day(spark, lake_dir, layer, name, DAY)
    cols = sorted(c for c in df.columns if c not in RUN_METADATA)
    return sorted(r[0] for r in df.select(F.to_json(F.struct(*cols))).collect())


@pytest.fixture(scope="module")
def batched_lake(spark, sample_lake, tmp_path_factory):
    root = tmp_path_factory.mktemp("batched")
    offsets = lake.read_day(spark, sample_lake, "bronze", "offsets", DAY)
    batch_rows = offsets.count() // 3 + 1
    assert len(key_batches(rows_per_key(offsets, "group"), batch_rows)) >= 3
    conf = root / "batches.toml"
    # gold's batches two at a time, as by default: they must still equal the one-pass lake
    conf.write_text(f"[engine]\ngroup_batch_rows = {batch_rows}\nbatch_threads = 2\n")
    proc = run_cli("run", "--date", SAMPLE_DAY, "--landing", str(sample_lake.parent / "landing"),
                   "--lake", str(root / "lake"), "--conf", str(conf), "--log-format", "json")
    events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    return root / "lake", events


@pytest.mark.delta
def test_the_sample_day_is_computed_in_several_batches(batched_lake):
    _, events = batched_lake
    batches = {e["table"]: e["batches"] for e in events if e.get("batches")}
    # no topic of the sample day is consumed by groups of two batches
    (planned,) = [e for e in events if e["event"] == "planned"]
    assert planned["of_groups"] is True
    assert planned["topic_batches"] == batches["gold.producer_findings"] == batches[
        "silver.queue_state"]
    assert batches["silver.queue_state"] >= 3
    assert batches["gold.producer_findings"] >= 2
    assert batches["gold.group_health"] == batches["gold.incidents"] == batches["silver.queue_state"]
    seen = {(e["table"], e["batch"]) for e in events if e.get("batches")}
    assert {b for t, b in seen if t == "silver.queue_state"} == set(
        range(1, batches["silver.queue_state"] + 1))
    # each batch stages its own intermediates, and the log names them with their seconds
    staged = [e for e in events if e.get("event") == "staged"]
    assert {e["batch"] for e in staged if e["table"] == "silver.claims_in_force"} == set(
        range(1, batches["silver.queue_state"] + 1))
    assert {e["batch"] for e in staged if e["table"] == "gold.hot_queue_windows"} == set(
        range(1, batches["gold.producer_findings"] + 1))
    # gold's batches run two at a time, so each stages its intermediates under its own batch
    assert {e["batch"] for e in staged if e["table"] == "gold.orphaned_queues.snapshots"} == set(
        range(1, batches["silver.queue_state"] + 1))
    assert all(e["seconds"] >= 0 and e["stage"] == "staging" for e in staged)


def _differing(spark, one_pass_lake, batched_lake, layer) -> list[str]:
    one_pass = {name for lyr, name, _ in lake.list_tables(one_pass_lake) if lyr == layer}
    assert one_pass == {name for lyr, name, _ in lake.list_tables(batched_lake) if lyr == layer}
    return [name for name in sorted(one_pass)
            if _rows(spark, one_pass_lake, layer, name) != _rows(spark, batched_lake, layer, name)]


@pytest.mark.delta
@pytest.mark.parametrize("layer", ["silver", "gold"])
def test_batched_tables_equal_the_one_pass_tables(spark, sample_lake, batched_lake, layer):
    lake_dir, _ = batched_lake
    assert _differing(spark, sample_lake, lake_dir, layer) == []


@pytest.fixture(scope="module")
def shared_topic_lakes(spark, sample_lake, tmp_path_factory):
    """The sample landing, plus queue 0 of a topic of the first batch's largest group committed
    also by the last batch's largest group (those offsets lines copied under its name): no
    batch of groups holds that topic whole. Run in one pass and in batches."""
    root = tmp_path_factory.mktemp("shared_topic")
    landing = root / "landing"
    shutil.copytree(sample_lake.parent / "landing", landing)
    offsets = lake.read_day(spark, sample_lake, "bronze", "offsets", DAY)
    batch_rows = offsets.count() // 3 + 1
    plan = key_batches(rows_per_key(offsets, "group"), batch_rows)
    first, last = plan[0][0], plan[-1][0]
    folder = landing / "offsets" / f"date={SAMPLE_DAY}"
    copied, topic = [], None
    for path in sorted(folder.iterdir()):
        with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as lines:
            for record in map(json.loads, lines):
                topic = topic or (record["topic"] if record["group"] == first else None)
                if (record["group"], record["topic"], record["queue_id"]) == (first, topic, 0):
                    copied.append(json.dumps({**record, "group": last}))
    assert copied
    (folder / "part-shared.jsonl").write_text("\n".join(copied) + "\n")
    conf = root / "batches.toml"
    conf.write_text(f"[engine]\ngroup_batch_rows = {batch_rows}\n")
    lakes = {"one_pass": root / "one_pass", "batched": root / "batched"}
    run_cli("run", "--date", SAMPLE_DAY, "--landing", str(landing), "--lake",
            str(lakes["one_pass"]))
    proc = run_cli("run", "--date", SAMPLE_DAY, "--landing", str(landing), "--lake",
                   str(lakes["batched"]), "--conf", str(conf), "--log-format", "json")
    events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    return lakes, events


@pytest.mark.delta
def test_a_topic_of_two_batches_of_groups_is_batched_by_topic_to_the_same_tables(
        spark, shared_topic_lakes):
    lakes, events = shared_topic_lakes
    (planned,) = [e for e in events if e["event"] == "planned"]
    assert planned["of_groups"] is False
    assert max(e.get("batches", 1) for e in events if e.get("table") == "silver.queue_state") >= 3
    for layer in ("silver", "gold"):
        assert _differing(spark, lakes["one_pass"], lakes["batched"], layer) == []


def test_key_batches_pack_the_largest_keys_first_and_give_a_large_key_its_own_batch():
    rows = {"big": 900, "a": 400, "b": 300, "c": 300, "d": 200, None: 50}
    assert key_batches(rows, 600) == [["big"], ["a", "d"], ["b", "c"]]
    assert key_batches(rows, 10_000) == [["big", "a", "b", "c", "d"]]
    assert key_batches({}, 10) == [[]]


def test_the_batches_hold_every_row_once_and_whole_groups(spark):
    rows = [(g, q) for g in ("g-a", "g-b", "g-c", "g-d", "only-in-logs", None) for q in range(3)]
    df = spark.createDataFrame(rows, "group string, queue_id int")
    plan = [["g-a"], ["g-b", "g-c"], ["g-d"]]  # "only-in-logs" and null: in no list
    parts = [in_batch("group", b, plan)(df).collect() for b in range(len(plan))]
    assert sorted(map(tuple, sum(parts, [])), key=str) == sorted(rows, key=str)
    groups = [{r["group"] for r in part} for part in parts]
    assert groups == [{"g-a"}, {"g-b", "g-c"}, {"g-d", "only-in-logs", None}]
    cluster_wide = spark.createDataFrame([("broker-a",)], "broker_name string")
    assert in_batch("group", 1, plan)(cluster_wide).count() == 1


def test_with_batch_numbers_each_row_as_in_batch_keeps_it(spark):
    rows = [(g, q) for g in ("g-a", "g-b", "g-c", "g-d", "only-in-logs", None) for q in range(3)]
    df = spark.createDataFrame(rows, "group string, queue_id int")
    plan = [["g-a"], ["g-b", "g-c"], ["g-d"]]
    numbered = with_batch(df, "group", plan)
    assert numbered.columns == ["group", "queue_id", lake.BATCH_COLUMN]
    got = sorted(((r["group"], r["queue_id"], r[lake.BATCH_COLUMN]) for r in numbered.collect()),
                 key=str)
    kept = sorted(((r["group"], r["queue_id"], b) for b in range(len(plan))
                   for r in in_batch("group", b, plan)(df).collect()), key=str)
    assert got == kept


def test_a_day_split_once_reads_each_batch_back_alone(spark, tmp_path):
    rows = [(g, q) for g in ("g-a", "g-b", "g-c", None) for q in range(2)]
    df = spark.createDataFrame(rows, "group string, queue_id int")
    plan = [["g-a"], ["g-b"], ["g-x"], ["g-c"]]  # g-x has no rows: its batch is empty
    parts = lake.stage_batches(spark, with_batch(df, "group", plan), tmp_path, "run", "t",
                               len(plan))
    assert [p.columns for p in parts] == [df.columns] * len(plan)
    assert [sorted(map(tuple, p.collect()), key=str) for p in parts] == [
        [("g-a", 0), ("g-a", 1)], [("g-b", 0), ("g-b", 1)], [],
        sorted([("g-c", 0), ("g-c", 1), (None, 0), (None, 1)], key=str)]
    frames = BatchedFrames("group", plan, {"t": df}, {"t": parts})
    assert frames.batch(1)["t"].count() == 2


def test_a_line_without_a_group_is_read_by_every_batch_of_groups(spark, tmp_path):
    """``send expire msg back`` names no group (facts §5.3); the stuck detector matches it to any
    group's episode by topic, queue and offset, so every batch must read it (with ``in_batch``'s
    rule it reached the last batch only). A line not accepted reaches no batch."""
    rows = [("accepted", "g-a", 1), ("accepted", "g-b", 2), ("accepted", None, 3),
            ("quarantined", None, 4), ("other_day", "g-a", 5)]
    df = spark.createDataFrame(rows, "_status string, group string, line int")
    plan = [["g-a"], ["g-b"], ["g-c"]]
    parts = lake.stage_batches(spark, with_parse_batch(df, plan), tmp_path, "run", "t",
                               len(plan), shared=len(plan))
    assert [sorted(r["line"] for r in p.collect()) for p in parts] == [[1, 3], [2, 3], [3]]
    tail = lake.stage_batches(spark, with_batch(df, "group", plan, nulls_apart=True), tmp_path,
                              "run", "tail", len(plan), shared=len(plan))
    assert [sorted(r["line"] for r in p.collect()) for p in tail] == [[1, 3, 4, 5], [2, 3, 4],
                                                                      [3, 4]]


def test_batches_staged_one_by_one_read_back_whole(spark, tmp_path):
    schema = "group string, queue_id int"
    for b, rows in enumerate([[("g-a", 1)], [], [("g-b", 2), ("g-b", 3)]]):
        lake.stage_batch(spark, spark.createDataFrame(rows, schema), tmp_path, "run", "t", b)
    whole = lake.read_staged_batches(spark, spark.createDataFrame([], schema).schema, tmp_path,
                                     "run", "t")
    assert sorted(map(tuple, whole.collect())) == [("g-a", 1), ("g-b", 2), ("g-b", 3)]
    assert whole.columns == ["group", "queue_id"]


def test_topic_batches_are_the_batches_of_groups_unless_two_batches_share_a_topic(spark):
    """The producer tables need each topic's rows in one batch: the batches of groups serve when
    no topic has groups in two of them (a group of no batch counts to the last, as in_batch
    keeps it); otherwise topics are packed by their rows."""
    plan = [["g1"], ["g2", "g3"]]
    schema = "group string, topic string"
    rows = [("g1", "t1"), ("g1", "%RETRY%g1"), ("g2", "t2"), ("g3", "t2"), ("g3", "t3"),
            ("g9", "t9")]
    assert topic_batches(spark.createDataFrame(rows, schema), plan, 3) == (
        [["%RETRY%g1", "t1"], ["t2", "t3", "t9"]], True)
    shared = spark.createDataFrame([*rows, ("g1", "t3")], schema)
    assert topic_batches(shared, plan, 3) == (
        key_batches({"t1": 1, "%RETRY%g1": 1, "t2": 2, "t3": 2, "t9": 1}, 3), False)
