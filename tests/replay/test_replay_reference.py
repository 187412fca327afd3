"""The pure-Python reference against RocketMQ's own outputs and documented Java semantics."""

from __future__ import annotations

import pytest

from jobs.replay.cases import parse_case, replay_case_python
from jobs.replay.reference import (
    AllocationError,
    MessageQueue,
    allocate,
    allocate_all,
    java_split,
    machine_room_of_broker,
    md5_hash,
    sorted_cid_all,
    sorted_mq_all,
)
from tests.replay.replay_vectors import VECTOR_RECORDS, mismatches, vector_record


@pytest.mark.parametrize("record", VECTOR_RECORDS, ids=lambda r: r["case_id"])
def test_reference_reproduces_java_vector(record):
    assert mismatches(record, replay_case_python(parse_case(record))) == []


def test_all_public_vectors_are_present(vector_records):
    assert len(vector_records) == 240


@pytest.mark.parametrize("case_id", ["avg-grid-019", "avg-grid-064", "circle-grid-017", "chash-vdef-leave-before",
                                     "mroom-grid-025", "nearby-avg-orphan-02"])
def test_sorting_reproduces_the_lists_rebalanceimpl_passed(case_id):
    record = vector_record(case_id)
    mq_all = [MessageQueue(**mq) for mq in record["mq_all"]]
    assert sorted_mq_all(reversed(mq_all)) == mq_all
    assert sorted_cid_all(reversed(record["cid_all"])) == record["cid_all"]


def test_broker_names_sort_as_strings_and_queue_ids_as_numbers():
    mqs = [MessageQueue("t", "broker-9", 4), MessageQueue("t", "broker-10", 15),
           MessageQueue("t", "broker-10", 4), MessageQueue("t", "broker-11", 14)]
    assert sorted_mq_all(mqs) == [MessageQueue("t", "broker-10", 4), MessageQueue("t", "broker-10", 15),
                                  MessageQueue("t", "broker-11", 14), MessageQueue("t", "broker-9", 4)]


def test_client_ids_sort_by_utf16_code_units_like_java():
    # Java compares UTF-16 code units: U+10000 is the surrogate pair D800 DC00, below U+FFFF.
    assert sorted_cid_all(["\uffff", "\U00010000", "10.0.0.83@1", "10.0.0.117@1"]) == [
        "10.0.0.117@1", "10.0.0.83@1", "\U00010000", "\uffff"]


@pytest.mark.parametrize(("text", "parts"), [
    ("room1@broker-a", ["room1", "broker-a"]),
    ("room1@", ["room1"]),
    ("@broker-z", ["", "broker-z"]),
    ("room1@broker@y", ["room1", "broker", "y"]),
    ("a@b@", ["a", "b"]),
    ("@", []),
    ("", [""]),
])
def test_java_split_drops_trailing_empty_strings_only(text, parts):
    assert java_split(text, "@") == parts


@pytest.mark.parametrize(("broker_name", "room"), [
    ("room1@broker-a", "room1"), ("room1@", None), ("room1@broker@y", None), ("broker-x", None),
    ("@broker-z", ""),
])
def test_machine_room_needs_exactly_two_split_parts(broker_name, room):
    assert machine_room_of_broker(broker_name) == room


def test_md5_hash_is_first_four_digest_bytes_unsigned_big_endian():
    # md5("a") = 0cc175b9c0f1b6a831c399e269772661
    assert md5_hash("a") == 0x0CC175B9


def test_validation_order_is_current_cid_then_mq_all_then_cid_all():
    with pytest.raises(AllocationError) as err:
        allocate("AVG", "", [], [])
    assert (err.value.java_class, err.value.message) == ("java.lang.IllegalArgumentException", "currentCID is empty")
    with pytest.raises(AllocationError, match="mqAll is null or mqAll empty"):
        allocate("AVG_BY_CIRCLE", "A", None, None)


def test_client_not_in_cid_all_gets_empty_list_not_error():
    mqs = [MessageQueue("t", "b", i) for i in range(4)]
    assert allocate("CONSISTENT_HASH", "Z", mqs, ["A", "B"]) == []


def test_config_ignores_inputs_and_returns_null_when_never_set():
    assert allocate("CONFIG", "", None, None) is None
    assert allocate("CONFIG", None, [], [], config_queues=[("t", "b", 7)]) == [MessageQueue("t", "b", 7)]


def test_negative_virtual_node_count_is_rejected_like_the_constructor():
    with pytest.raises(AllocationError, match=r"^java.lang.IllegalArgumentException: illegal virtualNodeCnt :-1$"):
        allocate("CONSISTENT_HASH", "A", [("t", "b", 0)], ["A"], virtual_nodes=-1)


@pytest.mark.parametrize("case_id", ["avg-dup-02", "chash-dup-05", "mroom-grid-025", "nearby-avg-orphan-02",
                                     "chash-v3-leave-before", "circle-dup-01"])
def test_allocate_all_gives_each_distinct_client_its_java_result(case_id):
    record = vector_record(case_id)
    case = parse_case(record)
    params = {k: v for k, v in case.params().items() if v is not None}
    result = allocate_all(case.strategy, case.mq_all, case.cid_all, **params)
    expected = {r["current_cid"]: [MessageQueue(**mq) for mq in r["allocated"]]
                for r in record["results"] if r["current_cid_index"] is not None}
    assert result == expected
