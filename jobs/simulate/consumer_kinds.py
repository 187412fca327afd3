"""Consumer kinds other than the concurrent clustering push consumer (DESIGN.md §5.1, issue #18).

``Group.kind`` picks one; what each changes in the simulated records follows the client and
broker source (rocketmq-facts.md §2.4, §2.7, §3, §5, §6 and docs/consumer-models.md):

- ``push``: ``DefaultMQPushConsumer``, CLUSTERING, client-side rebalance (the default).
- ``orderly``: ``DefaultMQPushConsumer`` with a ``MessageListenerOrderly``: as ``push``, plus
  ``PROP_CONSUMEORDERLY=true`` and every owned queue ``locked`` in running info, the broker lock
  renewed every 20 s (``lockAll``, facts §2.6).
- ``broadcast``: ``DefaultMQPushConsumer`` in BROADCASTING. Every client takes every queue of
  its topics (no cidAll), subscribes no ``%RETRY%`` topic, keeps ``IP@DEFAULT`` (it never calls
  ``changeInstanceNameToPID``) and stores its offsets in ``LocalFileOffsetStore``: it never
  commits to the broker (``pullMessage`` sets ``commitOffsetEnable`` only in CLUSTERING) and
  ``LocalFileOffsetStore.persistAll`` writes a file, no ``[persistAll]`` line. The broker's
  consumer offset is frozen where the group last committed (``getConsumeStats`` lists only
  topics with a stored offset; a group that never had one is not listed at all).
- ``pop``: a 5.x ``DefaultMQPushConsumer`` with ``clientRebalance=false`` on a topic in POP
  mode. Every client pops from every queue; the acks move the broker's consumer offset; the
  heartbeat still says ``CONSUME_PASSIVELY`` (``consumeType()`` of the push consumer; the broker
  records ``CONSUME_POP`` only in its compensation table, which ``consumerConnection`` does not
  read); running info has ``clientRebalance=false`` and an empty ``mqTable`` (the queues are in
  ``mqPopTable``), so ``consumerProgress -s`` shows ``N/A``; no ``[persistAll]`` lines.
- ``lite_pull``: ``DefaultLitePullConsumer.subscribe``: ``RebalanceLitePullImpl`` runs the same
  ``rebalanceByTopic`` (same log lines), ``CONSUME_ACTIVELY``, auto-commit through
  ``RemoteBrokerOffsetStore`` (``[persistAll]`` lines), no ``%RETRY%`` subscription and no
  ``statusTable``; ``mqTable`` only from 5.1.1 (before, its running info has properties and
  subscriptions only).
- ``lite_pull_assign``: ``DefaultLitePullConsumer.assign``: no rebalance at all; the
  application gives each instance its queues (here: instance k of n takes the k-th AVG slice by
  client name) — otherwise as ``lite_pull``.
"""

from __future__ import annotations

from jobs.replay.reference import MessageQueue, allocate, sorted_mq_all

KINDS = ("push", "orderly", "broadcast", "pop", "lite_pull", "lite_pull_assign")
LITE_PULL_MQ_TABLE_FROM = (5, 1, 1)  # DefaultLitePullConsumerImpl.consumerRunningInfo fills mqTable


def keeps_default_instance(kind: str) -> bool:
    """changeInstanceNameToPID runs only in CLUSTERING (facts §3)."""
    return kind == "broadcast"


def subscribes_retry(kind: str) -> bool:
    return kind in ("push", "orderly", "pop")


def rebalances(kind: str) -> bool:
    """Client-side rebalance with ``rebalanced result changed`` lines."""
    return kind in ("push", "orderly", "lite_pull")


def connection_fields(kind: str) -> tuple[str, str]:
    """(consume_type, message_model) of the heartbeat (ConsumerData)."""
    if kind == "broadcast":
        return "CONSUME_PASSIVELY", "BROADCASTING"
    if kind in ("lite_pull", "lite_pull_assign"):
        return "CONSUME_ACTIVELY", "CLUSTERING"
    return "CONSUME_PASSIVELY", "CLUSTERING"


def property_overrides(kind: str, version: tuple[int, int, int]) -> dict[str, str]:
    consume_type, model = connection_fields(kind)
    out = {"messageModel": model, "PROP_CONSUME_TYPE": consume_type}
    if version >= (5, 0, 0) and kind in ("push", "orderly", "broadcast", "pop"):
        out["clientRebalance"] = "false" if kind == "pop" else "true"
    if kind == "orderly":
        out["PROP_CONSUMEORDERLY"] = "true"
    if kind in ("lite_pull", "lite_pull_assign"):
        for key in ("consumeConcurrentlyMaxSpan", "consumeThreadMax", "consumeThreadMin",
                    "consumeTimeout", "consumeMessageBatchMaxSize", "PROP_CONSUMEORDERLY",
                    "PROP_THREADPOOL_CORE_SIZE"):
            out[key] = ""  # DefaultLitePullConsumer has none of these fields (dropped below)
        out["autoCommit"] = "true"
    return out


def reports_mq_table(kind: str, version: tuple[int, int, int]) -> bool:
    if kind == "pop":
        return False
    if kind in ("lite_pull", "lite_pull_assign"):
        return version >= LITE_PULL_MQ_TABLE_FROM
    return True


LOCK_RENEW_MS = 20_000  # RebalanceImpl.lockAll period (facts §2.6)


def locks_queues(kind: str) -> bool:
    return kind == "orderly"


def reports_status_table(kind: str) -> bool:
    return kind not in ("lite_pull", "lite_pull_assign")


def commits_to_broker(kind: str) -> bool:
    return kind != "broadcast"


def logs_persist(kind: str) -> bool:
    return kind not in ("broadcast", "pop")


def static_queues(kind: str, process, members: list, mq_all: dict[str, list[MessageQueue]]
                  ) -> dict[str, tuple[MessageQueue, ...]]:
    """Per topic, the queues a non-rebalancing process holds from its start to its stop."""
    out: dict[str, tuple[MessageQueue, ...]] = {}
    names = sorted({m.spec.name for m in members})
    for topic in process.topics:
        if kind in ("broadcast", "pop"):
            queues = list(mq_all[topic])
        else:  # assign: the application's own split by instance name
            queues = allocate("AVG", process.spec.name, mq_all[topic], names) or []
        out[topic] = tuple(sorted_mq_all(queues))
    return out
