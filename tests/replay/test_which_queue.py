"""``rocketlens which-queue`` as a user runs it, on routes as ``mqadmin topicRoute`` prints them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jobs.replay.which_queue import quote_bare_keys
from tests.replay.replay_vectors import REPO_ROOT

# Verbatim layout of 'mqadmin topicRoute' (fastjson pretty print: tabs, unquoted Long keys).
TWO_BROKERS = """{
\t"brokerDatas":[
\t\t{
\t\t\t"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"
\t\t\t},
\t\t\t"brokerName":"broker-a",
\t\t\t"cluster":"DefaultCluster"
\t\t},
\t\t{
\t\t\t"brokerAddrs":{0:"10.0.0.3:10911",1:"10.0.0.4:10911"
\t\t\t},
\t\t\t"brokerName":"broker-b",
\t\t\t"cluster":"DefaultCluster"
\t\t}
\t],
\t"filterServerTable":{},%s
\t"queueDatas":[
\t\t{
\t\t\t"brokerName":"broker-b",
\t\t\t"perm":6,
\t\t\t"readQueueNums":4,
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":4
\t\t},
\t\t{
\t\t\t"brokerName":"broker-a",
\t\t\t"perm":6,
\t\t\t"readQueueNums":4,
\t\t\t"topicSysFlag":0,
\t\t\t"writeQueueNums":4
\t\t}
\t]
}
"""


def which_queue(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobs", "which-queue", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def route_file(tmp_path):
    path = tmp_path / "route.json"
    path.write_text(TWO_BROKERS % "")
    return path


@pytest.fixture
def ordered_route_file(tmp_path):
    path = tmp_path / "ordered.json"
    path.write_text(TWO_BROKERS % '\n\t"orderTopicConf":"broker-a:4;broker-b:4",')
    return path


def _json(completed: subprocess.CompletedProcess) -> dict:
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_key_moves_to_the_remaining_broker_while_broker_b_master_is_down(route_file):
    # Integer 6 hashes to 6: 6 % 8 -> index 6 = broker-b:2 (broker-a sorts first); with broker-b
    # gone the list is broker-a's 4 queues and 6 % 4 = 2.
    out = _json(which_queue("--route", str(route_file), "--key", "6", "--key-type", "Integer",
                            "--down", "broker-b", "--format", "json"))
    assert (out["broker_name"], out["queue_id"], out["error"]) == ("broker-b", 2, None)
    assert (out["down"]["broker_name"], out["down"]["queue_id"], out["down"]["moved"]) == ("broker-a", 2, True)


def test_a_key_on_the_surviving_broker_stays_when_it_comes_first_with_equal_counts(route_file):
    # Integer 3 -> index 3 of 8 = broker-a:3; with 4 queues left 3 % 4 = 3: the same queue.
    stays = _json(which_queue("--route", str(route_file), "--key", "3", "--key-type", "Integer",
                              "--down", "broker-b", "--format", "json"))
    assert (stays["broker_name"], stays["queue_id"], stays["down"]["moved"]) == ("broker-a", 3, False)


def test_text_answer_says_before_and_during(route_file):
    completed = which_queue("--route", str(route_file), "--key", "6", "--key-type", "Integer", "--down", "broker-b")
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[1].startswith("now: broker-b queue 2 ")
    assert lines[2].startswith("while the master of broker-b is down: broker-a queue 2 ")
    assert "The key moves from broker-b queue 2" in lines[2]


def test_order_topic_conf_fails_the_send_instead_of_moving_the_key(ordered_route_file):
    out = _json(which_queue("--route", str(ordered_route_file), "--key", "6", "--key-type", "Integer",
                            "--down", "broker-b", "--format", "json"))
    assert (out["broker_name"], out["queue_id"]) == ("broker-b", 2)
    assert out["down"]["error"]["class"] == "org.apache.rocketmq.client.exception.MQClientException"
    assert out["down"]["error"]["message"].split("\n")[0] == "The broker[broker-b] not exist"
    text = which_queue("--route", str(ordered_route_file), "--key", "6", "--key-type", "Integer",
                       "--down", "broker-b").stdout
    assert "the send fails" in text and "the key does not move" in text


def test_order_topic_conf_key_on_an_up_broker_stays(ordered_route_file):
    out = _json(which_queue("--route", str(ordered_route_file), "--key", "1", "--key-type", "Integer",
                            "--down", "broker-b", "--format", "json"))
    assert (out["down"]["broker_name"], out["down"]["queue_id"], out["down"]["error"]) == ("broker-a", 1, None)


def test_logger_lines_before_the_json_are_skipped(tmp_path):
    path = tmp_path / "route.txt"
    path.write_text("RocketMQLog:WARN No appenders could be found for logger "
                    "(io.netty.util.internal.PlatformDependent0).\n"
                    "RocketMQLog:WARN Please initialize the logger system properly.\n" + TWO_BROKERS % "")
    out = _json(which_queue("--route", str(path), "--key", "6", "--key-type", "Integer", "--format", "json"))
    assert (out["broker_name"], out["queue_id"]) == ("broker-b", 2)


def test_a_vectors_case_record_is_a_route_file_too(tmp_path, producer_vector_records):
    record = next(r for r in producer_vector_records if r["case_id"] == "ph-str-order-004")
    path = tmp_path / "case.json"
    path.write_text(json.dumps(record))
    out = _json(which_queue("--route", str(path), "--key", record["key"]["value"], "--client-version",
                            record["client_version"], "--format", "json"))
    assert (out["topic"], out["broker_name"], out["queue_id"]) == ("PAY_RESULT", "broker-a", 3)


@pytest.mark.parametrize(("content", "reason"), [
    ('{"queueDatas": [', "not JSON"),
    ('{"queueDatas": []}', "a route needs the lists queueDatas and brokerDatas"),
    ('{"queueDatas": [{"brokerName": "b", "perm": "rw", "readQueueNums": 1, "writeQueueNums": 1}], '
     '"brokerDatas": []}', "perm 'rw' is not an integer"),
])
def test_a_malformed_route_file_is_one_line_and_exit_2(tmp_path, content, reason):
    path = tmp_path / "bad.json"
    path.write_text(content)
    completed = which_queue("--route", str(path), "--key", "k")
    assert completed.returncode == 2
    assert completed.stdout == ""
    [line] = completed.stderr.splitlines()
    assert line.startswith(f"rocketlens: --route {path}: not a topic route: {reason}")


def test_a_missing_route_file_is_a_usage_error(tmp_path):
    completed = which_queue("--route", str(tmp_path / "nope.json"), "--key", "k")
    assert completed.returncode == 2
    assert completed.stderr.strip() == f"rocketlens: --route {tmp_path / 'nope.json'}: no such file"


def test_a_broker_not_in_the_route_is_a_usage_error(route_file):
    completed = which_queue("--route", str(route_file), "--key", "k", "--down", "broker-z")
    assert completed.returncode == 2
    assert completed.stderr.startswith("rocketlens: --down broker-z: not a broker of the route")


def test_quote_bare_keys_leaves_strings_alone():
    text = '{"brokerAddrs":{0:"10.0.0.1:10911", -1 :"x"},"note":"{1:2},3:4"}'
    assert json.loads(quote_bare_keys(text)) == {"brokerAddrs": {"0": "10.0.0.1:10911", "-1": "x"},
                                                 "note": "{1:2},3:4"}
