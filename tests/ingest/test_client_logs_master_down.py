"""The three client-log templates of a broker group's master down (DESIGN.md §3.4, §5.3).

Lines are constructed from the client source's format strings and toString methods (4.9.8 and
5.3.3 ``MessageExt``, ``BrokerData``, ``TopicRouteData``; facts §10), with made-up values: no
public thread holds a verbatim send-back or pull-exception line, nor a 4.x/5.x route line that
drops a master. A real 3.x route line that does is in tests/data/real/ (README.md there; read in
test_client_logs_real.py and tests/rules/test_master_down_real.py). Expected ``ts`` values are
computed by hand from the GMT+8 wall clock.
"""

from __future__ import annotations

from tests.ingest.test_client_logs import assert_frames, parse, subset_rows, utc

GROUP = "GID_master_down"
MESSAGE_EXT = (
    "MessageExt [brokerName=broker-b, queueId=2, storeSize=203, queueOffset=4711, sysFlag=0, "
    "bornTimestamp=1763687512000, bornHost=/10.0.5.21:53422, storeTimestamp=1763687512004, "
    "storeHost=/10.0.9.12:10911, msgId=0A00090C00002A9F0000000000126F2A, "
    "commitLogOffset=1208106, bodyCRC=1032136437, reconsumeTimes=17, "
    "preparedTransactionOffset=0, toString()=Message{topic='payments-b', flag=0, "
    "properties={MIN_OFFSET=0, MAX_OFFSET=4800, CONSUME_START_TIME=1763690000123, "
    "UNIQ_KEY=0A000515000018B4AAC27A3A9B2C0001, CLUSTER=rmq-prod, TAGS=pay}, "
    "body=[123, 34, 105, 100, 34], transactionId='null'}]")
SEND_BACK = ["event", "group", "topic", "queues", "offset", "msg_id", "store_host",
             "reconsume_times", "parse_error"]


def test_49_send_back_failure_reads_the_message_ext_fields(spark):
    line = ("2025-11-21 09:13:07,412 ERROR ConsumeMessageThread_3 - sendMessageBack exception, "
            f"group: {GROUP} msg: {MESSAGE_EXT}")

    actual = parse(spark, line).select("ts", "level", "thread", *SEND_BACK)

    assert_frames(actual, subset_rows(
        spark, ["ts", "level", "thread", *SEND_BACK],
        (utc(2025, 11, 21, 1, 13, 7, 412000), "ERROR", "ConsumeMessageThread_3",
         "SEND_BACK_FAILED", GROUP, "payments-b", [("payments-b", "broker-b", 2)], 4711,
         "0A00090C00002A9F0000000000126F2A", "/10.0.9.12:10911", 17, None)))


def test_5x_send_back_failure_in_the_5x_layout_and_a_message_ext_without_broker_name(spark):
    # a 3.x MessageExt has no brokerName: the queue's broker is unknown, not an error
    without_broker = MESSAGE_EXT.replace("brokerName=broker-b, ", "")
    line = ("2025-11-21 09:13:12.418 ERROR [2815] [ConsumeMessageThread_4] "
            "[o.a.r.c.i.c.ConsumeMessageConcurrentlyService#sendMessageBack:325] - "
            f"sendMessageBack exception, group: {GROUP} msg: {without_broker}")

    actual = parse(spark, line).select(*SEND_BACK)

    assert_frames(actual, subset_rows(
        spark, SEND_BACK,
        ("SEND_BACK_FAILED", GROUP, "payments-b", [("payments-b", None, 2)], 4711,
         "0A00090C00002A9F0000000000126F2A", "/10.0.9.12:10911", 17, None)))


def test_inner_send_back_line_and_a_cut_message_ext(spark):
    lines = [
        # the broker path's own ERROR (capital E) comes before the fallback: not this template
        f"2025-11-21 09:13:07,401 ERROR ConsumeMessageThread_3 - sendMessageBack Exception, {GROUP}",
        # a line cut inside the MessageExt keeps its event and says it does not fit
        ("2025-11-21 09:13:07,412 ERROR ConsumeMessageThread_3 - sendMessageBack exception, "
         f"group: {GROUP} msg: {MESSAGE_EXT[:80]}"),
        # the cause line of the stack trace has no date and no template
        ("org.apache.rocketmq.client.exception.MQClientException: No route info of this topic: "
         f"%RETRY%{GROUP}"),
    ]

    actual = parse(spark, *lines).select("event", "parse_error")

    assert_frames(actual, subset_rows(
        spark, ["event", "parse_error"], (None, None),
        ("SEND_BACK_FAILED", "line does not fit the SEND_BACK_FAILED template"), (None, None)))


ROUTE = ["event", "topic", "route_brokers", "parse_error"]


def test_49_route_change_that_drops_broker_b_master(spark):
    old = ("TopicRouteData [orderTopicConf=null, queueDatas=[QueueData [brokerName=broker-a, "
           "readQueueNums=4, writeQueueNums=4, perm=6, topicSysFlag=0], QueueData "
           "[brokerName=broker-b, readQueueNums=4, writeQueueNums=4, perm=6, topicSysFlag=0]], "
           "brokerDatas=[BrokerData [brokerName=broker-a, brokerAddrs={0=10.0.9.11:10911, "
           "1=10.0.9.21:10911}], BrokerData [brokerName=broker-b, brokerAddrs={0=10.0.9.12:10911, "
           "1=10.0.9.22:10911}]], filterServerTable={}]")
    new = old.replace("{0=10.0.9.12:10911, 1=10.0.9.22:10911}", "{1=10.0.9.22:10911}")
    line = ("2025-11-21 09:12:30,118 INFO MQClientFactoryScheduledThread - the topic[payments] "
            f"route info changed, old[{old}] ,new[{new}]")

    actual = parse(spark, line).select(*ROUTE)

    assert_frames(actual, subset_rows(
        spark, ROUTE,
        ("ROUTE_CHANGED", "payments",
         [("broker-a", "10.0.9.11:10911"), ("broker-b", None)], None)))


def test_5x_route_change_with_acting_master_field_and_the_3x_odl_spelling(spark):
    new_5x = ("TopicRouteData [orderTopicConf=null, queueDatas=[], brokerDatas=[BrokerData "
              "[brokerName=broker-b, brokerAddrs={0=10.0.9.12:10911, 1=10.0.9.22:10911}, "
              "enableActingMaster=false]], filterServerTable={}, "
              "topicQueueMappingInfoTable=null]")
    lines = [
        ("2025-11-21 09:52:31.006 INFO  [2815] [MQClientFactoryScheduledThread] "
         "[o.a.r.c.i.f.MQClientInstance#updateTopicRouteInfoFromNameServer:806] - the topic"
         f"[payments] route info changed, old[null] ,new[{new_5x}]"),
        ("25-11-21 09:12:30 INFO MQClientFactoryScheduledThread - the topic[payments] route "
         "info changed, odl[null] ,new[TopicRouteData [orderTopicConf=null, queueDatas=[], "
         "brokerDatas=[BrokerData [brokerName=broker-b, brokerAddrs={1=10.0.9.22:10911}]], "
         "filterServerTable={}]]"),
    ]

    actual = parse(spark, *lines).select(*ROUTE)

    # the master returns (5.x BrokerData adds enableActingMaster); 3.x spells old "odl"
    assert_frames(actual, subset_rows(
        spark, ROUTE,
        ("ROUTE_CHANGED", "payments", [("broker-b", "10.0.9.12:10911")], None),
        ("ROUTE_CHANGED", "payments", [("broker-b", None)], None)))


PULL = ["event", "group", "topic", "queues", "parse_error"]


def test_pull_exception_with_and_without_its_queue(spark):
    lines = [
        # 5.2.0+: group and queue
        ("2025-11-21 09:13:01.022 WARN  [2815] [PullMessageService] "
         "[o.a.r.c.i.c.DefaultMQPushConsumerImpl#pullMessage:441] - execute the pull request "
         f"exception, group={GROUP}, messageQueue=MessageQueue [topic=payments-b, "
         "brokerName=broker-b, queueId=2]"),
        # 4.9.x: the bare text, the exception on the next lines
        "2025-11-21 09:13:02,031 WARN PullMessageService - execute the pull request exception",
    ]

    actual = parse(spark, *lines).select(*PULL)

    assert_frames(actual, subset_rows(
        spark, PULL,
        ("PULL_EXCEPTION", GROUP, "payments-b", [("payments-b", "broker-b", 2)], None),
        ("PULL_EXCEPTION", None, None, None, None)))
