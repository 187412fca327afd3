"""The producer replay's Python reference against RocketMQ's own answers and Java's documented semantics."""

from __future__ import annotations

import pytest

from jobs.replay.producer_cases import parse_producer_case, replay_producer_case_python
from jobs.replay.producer_reference import (
    BrokerData,
    QueueData,
    SendError,
    TopicRoute,
    java_long_hash,
    java_parse_int,
    java_string_hash,
    parse_client_version,
    publish_list,
    route_from_json,
    select_queue,
)
from tests.replay.replay_vectors import PRODUCER_VECTOR_RECORDS, producer_mismatches


@pytest.mark.parametrize("record", PRODUCER_VECTOR_RECORDS, ids=lambda r: r["case_id"])
def test_reference_reproduces_java_producer_vector(record):
    assert producer_mismatches(record, replay_producer_case_python(parse_producer_case(record))) == []


def test_all_public_producer_vectors_are_present(producer_vector_records):
    assert len({r["case_id"] for r in producer_vector_records}) == 267


@pytest.mark.parametrize(("text", "java_hash"), [
    ("", 0), ("hello", 99162322), ("polygenelubricants", -(1 << 31)),
    ("\U0001F600", 1772899),  # one emoji = two UTF-16 units 0xD83D 0xDE00: 0xD83D*31 + 0xDE00
])
def test_string_hash_runs_over_utf16_code_units(text, java_hash):
    assert java_string_hash(text) == java_hash


@pytest.mark.parametrize(("value", "java_hash"), [
    (0, 0), (-1, 0), (1 << 32, 1), ((1 << 63) - 1, -(1 << 31)), (-(1 << 63), -(1 << 31)), (-7, 6),
])
def test_long_hash_folds_the_high_word_into_the_low(value, java_hash):
    assert java_long_hash(value) == java_hash


@pytest.mark.parametrize(("text", "value"), [
    ("4", 4), ("+3", 3), ("007", 7), ("-2147483648", -(1 << 31)), ("2147483647", (1 << 31) - 1),
    ("\u0663", 3),  # ARABIC-INDIC DIGIT THREE: Character.digit reads every Unicode Nd digit
])
def test_parse_int_accepts_what_java_accepts(text, value):
    assert java_parse_int(text) == value


@pytest.mark.parametrize("text", [" 4", "4 ", "", "+", "-", "1_000", "2147483648", "99999999999", "four",
                                  "\U0001D7D1"])  # a supplementary digit is two surrogates in Java
def test_parse_int_rejects_what_python_int_may_accept(text):
    with pytest.raises(SendError) as raised:
        java_parse_int(text)
    assert (raised.value.java_class, raised.value.message) == (
        "java.lang.NumberFormatException", f'For input string: "{text}"')


def _route(*brokers: tuple[str, int, int, tuple[int, ...]], conf: str | None = None) -> TopicRoute:
    """brokers: (name, write queues, perm, broker ids)."""
    return TopicRoute(tuple(QueueData(name, w, w, perm) for name, w, perm, _ in brokers),
                      tuple(BrokerData(name, ids) for name, _, _, ids in brokers), conf)


def test_publish_list_skips_read_only_and_masterless_brokers_in_string_order():
    route = _route(("broker-9", 2, 6, (0, 1)), ("broker-10", 2, 6, (0,)), ("broker-11", 3, 4, (0,)),
                   ("broker-12", 1, 6, (1,)))
    assert publish_list(route).queues() == [("broker-10", 0), ("broker-10", 1), ("broker-9", 0), ("broker-9", 1)]


def test_order_topic_conf_wins_and_keeps_its_order_and_duplicates():
    route = _route(("broker-a", 8, 4, (1,)), conf="broker-c:1;broker-a:2;broker-c:1;")
    assert publish_list(route).queues() == [("broker-c", 0), ("broker-a", 0), ("broker-a", 1), ("broker-c", 0)]


@pytest.mark.parametrize(("conf", "message"), [
    (";broker-a:4", "Index 1 out of bounds for length 1"),
    ("broker-a:", "Index 1 out of bounds for length 1"),
    (":", "Index 1 out of bounds for length 0"),
])
def test_malformed_order_topic_conf_throws_the_raw_array_exception(conf, message):
    with pytest.raises(SendError) as raised:
        publish_list(_route(conf=conf))
    assert (raised.value.java_class, raised.value.message) == ("java.lang.ArrayIndexOutOfBoundsException", message)


def test_a_huge_conf_count_answers_without_building_the_list():
    route = _route(conf="broker-a:2147483647")
    assert select_queue("t", route, "Integer", "2147483646") == ("broker-a", 2147483646)


def test_version_changes_the_min_value_answer_and_the_message_texts():
    route = _route(("broker-a", 7, 6, (0,)))
    assert select_queue("t", route, "Integer", str(-(1 << 31)), "V4_9_7") == ("broker-a", 2)  # 2^31 mod 7
    with pytest.raises(SendError) as raised:
        select_queue("t", route, "Integer", str(-(1 << 31)), "4.7.1")
    assert raised.value.message == ("select message queue throwed exception.\n"
                                    "For more information, please visit the url, http://rocketmq.apache.org/docs/faq/")
    assert raised.value.cause == ("java.lang.IndexOutOfBoundsException", "Index -2 out of bounds for length 7")
    with pytest.raises(SendError) as raised:
        select_queue("t", _route(("broker-a", 4, 4, (0,))), "String", "k", "5.1.0")
    assert raised.value.message == ("No route info for this topic, t\n"
                                    "For more information, please visit the url, "
                                    "https://rocketmq.apache.org/docs/bestPractice/06FAQ")


def test_machine_room_selector_is_a_stub_that_fails_the_send():
    with pytest.raises(SendError) as raised:
        select_queue("t", _route(("broker-a", 4, 6, (0,))), "String", "k", "V5_3_3", selector="MACHINE_ROOM")
    assert raised.value.message.startswith("select message queue return null.\n")


def test_without_masters_moves_hash_keys_to_the_remaining_brokers():
    route = _route(("broker-a", 4, 6, (0, 1)), ("broker-b", 4, 6, (0, 1)))
    assert select_queue("t", route, "Integer", "6") == ("broker-b", 2)
    assert select_queue("t", route.without_masters(["broker-b"]), "Integer", "6") == ("broker-a", 2)


@pytest.mark.parametrize(("text", "version"), [("V4_7_1", (4, 7, 1)), ("4.9.7", (4, 9, 7)),
                                               ("V5_3_3_SNAPSHOT", (5, 3, 3))])
def test_client_versions_are_read_in_both_spellings(text, version):
    assert parse_client_version(text) == version


def test_route_reads_mqadmin_camel_case():
    route = route_from_json({
        "brokerDatas": [{"brokerAddrs": {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}, "brokerName": "broker-a",
                         "cluster": "DefaultCluster"}],
        "filterServerTable": {}, "orderTopicConf": "",
        "queueDatas": [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 8, "topicSysFlag": 0,
                        "writeQueueNums": 4}]})
    assert route == TopicRoute((QueueData("broker-a", 8, 4, 6),), (BrokerData("broker-a", (0, 1)),), "")


@pytest.mark.parametrize("bad", [{}, {"queueDatas": [], "brokerDatas": [{"brokerName": "b"}]},
                                 {"queueDatas": [{"brokerName": "b", "perm": "6", "readQueueNums": 1,
                                                  "writeQueueNums": 1}], "brokerDatas": []},
                                 []])
def test_route_rejects_what_is_not_a_route(bad):
    with pytest.raises(ValueError):
        route_from_json(bad)
