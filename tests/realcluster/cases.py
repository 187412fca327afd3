"""The seed cases the real cluster reproduces (issue 57), and the clients that make them.

Every case is one consumer group on its own topics (8 queues: 4 on broker-a, 4 on broker-b), so the
cases run side by side in one cluster and one collected day. A case names what its clients do; what
rocketlens must find is derived afterwards from what the clients recorded (``truth.py``), never from
these definitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Client:
    name: str
    topics: tuple[str, ...]
    instance: str | None = None      # same instance in two JVMs on one IP -> one client id
    orderly: bool = False
    broadcast: bool = False
    strategy: str = "avg"            # avg | hash
    slow_key: str | None = None
    slow_ms: int = 0
    fail: bool = False
    consume_ms: int = 0              # each message takes this long (a backlog builds)
    threads: int = 2                 # consume threads (consumeThreadMin = Max)
    persist_ms: int = 0              # persistConsumerOffsetInterval when set (the client's default: 5000)
    v5: bool = False                 # the 5.x remoting client (rocketmq-client 5.3.3) instead of 4.9.7


@dataclass(frozen=True)
class Case:
    name: str
    seed: str                         # the seed it reproduces, or "healthy"
    group: str
    topics: tuple[str, ...]
    clients: tuple[Client, ...]
    healthy: bool = False             # must stay OK with no WARN or CRITICAL
    cause: str | None = None          # the root cause the harness created (what it did, not a rule)
    notes: str = ""
    producer: dict = field(default_factory=dict)   # extra SeedProducer options for this case's own producer
    rate: int = 4                     # messages per second of that producer
    leave: tuple[str, int] | None = None            # (client or "busiest", s after traffic starts): SIGTERM, it leaves
    broker: str | None = None         # the topics live on this master only (mqadmin updateTopic -b)
    master_down: tuple[int, int] | None = None      # kill -9 broker-b's master, restart it: s after traffic starts
    forecast_at: int | None = None    # s after traffic starts: the backlog forecast from the snapshots up to then


SLOW_MS = 150_000

CASES: tuple[Case, ...] = (
    Case("healthy-concurrent", "healthy", "GID_rc_healthy", ("TopicRcHealthy",),
         (Client("healthy-1", ("TopicRcHealthy",)), Client("healthy-2", ("TopicRcHealthy",))), healthy=True),
    Case("healthy-5x", "healthy", "GID_rc_healthy5", ("TopicRcHealthy5",),
         (Client("healthy5-1", ("TopicRcHealthy5",), v5=True), Client("healthy5-2", ("TopicRcHealthy5",), v5=True)),
         healthy=True, notes="two 5.3.3 remoting clients against the 4.9.7 brokers"),
    Case("healthy-orderly", "healthy", "GID_rc_orderly", ("TopicRcOrderly",),
         (Client("orderly-1", ("TopicRcOrderly",), orderly=True),
          Client("orderly-2", ("TopicRcOrderly",), orderly=True)), healthy=True, broker="broker-a",
         notes="on broker-a only: broker-b's master goes down (master-down), which rightly puts an orderly "
               "topic there at risk (ORDER_AT_RISK)"),
    Case("healthy-broadcast", "healthy", "GID_rc_bcast", ("TopicRcBcast",),
         (Client("bcast-1", ("TopicRcBcast",), broadcast=True),
          Client("bcast-2", ("TopicRcBcast",), broadcast=True)), healthy=True),
    Case("duplicate-client-id", "000", "GID_rc_dup", ("TopicRcDup",),
         (Client("dup-1", ("TopicRcDup",), instance="dup"), Client("dup-2", ("TopicRcDup",), instance="dup")),
         notes="two JVMs, one instanceName, one IP: one client id 127.0.0.1@dup", cause="DUPLICATE_CLIENT_ID"),
    Case("topicB", "004", "GID_rc_topicb", ("TopicRcA", "TopicRcB"),
         (Client("topicb-1", ("TopicRcA", "TopicRcB")), Client("topicb-2", ("TopicRcA",))),
         notes="one client on TopicRcA+TopicRcB, one on TopicRcA only", cause="SUBSCRIPTION_INCONSISTENT"),
    Case("slow-message", "002", "GID_rc_slow", ("TopicRcSlow",),
         (Client("slow-1", ("TopicRcSlow",), slow_key="SLOW", slow_ms=SLOW_MS),),
         notes=f"one message (key SLOW) takes {SLOW_MS // 1000} s; the others keep flowing",
         producer={"special-key": "SLOW", "special-at": "60"}, cause="SLOW_MESSAGE", broker="broker-a"),
    Case("leave-avg", "003", "GID_rc_leave_avg", ("TopicRcLeaveAvg",),
         tuple(Client(f"leave-avg-{i}", ("TopicRcLeaveAvg",)) for i in range(1, 5)),
         notes="4 clients under AVG, the one holding most queues leaves (clean shutdown) mid-traffic",
         leave=("busiest", 90)),
    Case("leave-hash", "003", "GID_rc_leave_hash", ("TopicRcLeaveHash",),
         tuple(Client(f"leave-hash-{i}", ("TopicRcLeaveHash",), strategy="hash") for i in range(1, 5)),
         notes="4 clients under CONSISTENT_HASH, the one holding most queues leaves (clean shutdown) mid-traffic",
         leave=("busiest", 90)),
    Case("master-down", "002", "GID_rc_mdown", ("TopicRcMdown",),
         (Client("mdown-1", ("TopicRcMdown",), fail=True, consume_ms=1000),),
         notes="every message fails (RECONSUME_LATER); broker-b's master is killed (-9) and restarted, its slave "
               "keeps serving; the topic and so %RETRY%GID_rc_mdown live on broker-b only",
         broker="broker-b", master_down=(100, 170), cause="MASTER_DOWN"),
    Case("producer-skew", "001", "GID_rc_skew", ("TopicRcSkew",),
         (Client("skew-1", ("TopicRcSkew",)), Client("skew-2", ("TopicRcSkew",))),
         notes="SelectMessageQueueByHash on a key that is HOT for 80 % of the messages",
         producer={"hash": "true", "hot-key": "HOT", "hot-share": "0.8"}, rate=8),
    Case("backlog-drain", "forecast", "GID_rc_drain", ("TopicRcDrain",),
         (Client("drain-1", ("TopicRcDrain",), consume_ms=500, threads=2, persist_ms=1000),),
         healthy=True, broker="broker-a", producer={"seconds": "20"}, rate=32, forecast_at=90,
         notes="640 messages in the first 20 s, drained at a controlled 4 messages/s (2 threads, 500 ms each; "
               "offsets persisted every second): the backlog forecast from the snapshots up to 90 s against "
               "when the consumer really got there (issue 60)"),
)


def topics_of(cases: tuple[Case, ...] = CASES) -> list[str]:
    return sorted({t for c in cases for t in c.topics})
