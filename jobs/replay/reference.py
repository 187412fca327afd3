"""Pure-Python reference of RocketMQ's client-side queue allocation (rocketmq-facts.md §1).

Each function answers what one ``AllocateMessageQueueStrategy.allocate(group, currentCID, mqAll,
cidAll)`` call returns in RocketMQ 5.3.3 (byte-identical to the classes that produced
``vectors/allocation_vectors_public.jsonl``), including the exception it throws. Inputs are used
as passed: RebalanceImpl sorts ``mqAll`` and ``cidAll`` before the call (facts §2.2 step 4), so
callers that model a client do the same with :func:`sorted_mq_all` and :func:`sorted_cid_all`.

This module is the oracle the Spark transform (:mod:`jobs.replay.spark_replay`) is checked
against, and the engine a simulator calls; it has no Spark dependency.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import NamedTuple

IAE = "java.lang.IllegalArgumentException"
NPE = "java.lang.NullPointerException"

# The text JDK 17's helpful NullPointerException gives when MACHINE_ROOM's consumeridcs was never set
# (vector mroom-nullidcs-01). Other JDKs word it differently; compare NPEs by class only.
NPE_CONSUMERIDCS_NULL = 'Cannot invoke "java.util.Set.contains(Object)" because "this.consumeridcs" is null'

NEARBY_PREFIX = "MACHINE_ROOM_NEARBY-"
STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM")
DEFAULT_VIRTUAL_NODES = 10


class MessageQueue(NamedTuple):
    """RocketMQ's ``MessageQueue``: equality on (topic, brokerName, queueId), facts §0."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        # MessageQueue.toString(): the consistent-hash key and the text inside log lines (facts §0).
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"


class AllocationError(Exception):
    """What a Java ``allocate`` call threw: fully qualified class name and message."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(f"{java_class}: {message}")
        self.java_class = java_class
        self.message = message


# --- Java ordering --------------------------------------------------------------------------------

def java_string_key(text: str) -> bytes:
    """Sort key equal to Java ``String.compareTo``: UTF-16 code-unit order (facts §0).

    Python compares code points, which disagrees with Java for characters above U+FFFF against
    U+E000..U+FFFF; big-endian UTF-16 bytes compare exactly like Java's code units.
    """
    return text.encode("utf-16-be", "surrogatepass")


def mq_sort_key(mq: MessageQueue) -> tuple[bytes, bytes, int]:
    """``MessageQueue.compareTo``: topic, then brokerName (String order), then queueId numerically."""
    return java_string_key(mq.topic), java_string_key(mq.broker_name), mq.queue_id


def sorted_mq_all(mqs: Iterable[MessageQueue]) -> list[MessageQueue]:
    """``Collections.sort(mqAll)`` as RebalanceImpl does: ``broker-10 < broker-9``, ``4 < 14``."""
    return sorted((as_message_queue(mq) for mq in mqs), key=mq_sort_key)


def sorted_cid_all(cids: Iterable[str]) -> list[str]:
    """``Collections.sort(cidAll)``: plain String order, duplicates kept (facts §0, §1.0)."""
    return sorted(cids, key=java_string_key)


def as_message_queue(value) -> MessageQueue:
    """Accept a MessageQueue, a ``{topic, broker_name, queue_id}`` mapping or a 3-sequence."""
    if isinstance(value, MessageQueue):
        return value
    if isinstance(value, dict):
        return MessageQueue(value["topic"], value["broker_name"], int(value["queue_id"]))
    topic, broker_name, queue_id = value
    return MessageQueue(topic, broker_name, int(queue_id))


def java_split(text: str, separator: str) -> list[str]:
    """Java ``String.split`` with limit 0 on a literal one-character separator.

    Java drops trailing empty strings (``"room1@"`` gives one part, ``"@"`` gives none) but keeps
    leading ones (``"@broker-z"`` gives ``["", "broker-z"]``); MACHINE_ROOM depends on it (facts §1.5).
    Without any separator Java returns the string itself, so ``""`` gives ``[""]``.
    """
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


# --- validation -----------------------------------------------------------------------------------

def check(current_cid: str | None, mq_all: Sequence | None, cid_all: Sequence[str] | None) -> bool:
    """``AbstractAllocateMessageQueueStrategy.check`` (facts §1.0).

    Raises in RocketMQ's order (currentCID, mqAll, cidAll) and returns whether ``current_cid`` is
    in ``cid_all``; a caller that is not gets ``[]`` (the ``[BUG] ... not in cidAll`` path).
    """
    if not current_cid:
        raise AllocationError(IAE, "currentCID is empty")
    if not mq_all:
        raise AllocationError(IAE, "mqAll is null or mqAll empty")
    if not cid_all:
        raise AllocationError(IAE, "cidAll is null or cidAll empty")
    return current_cid in cid_all


# --- strategies -----------------------------------------------------------------------------------

def allocate_avg(current_cid, mq_all, cid_all) -> list[MessageQueue]:
    """AVG: contiguous blocks, the first ``N % C`` positions get one extra (facts §1.1).

    ``index`` is the FIRST position of the id, so a duplicated id takes its first copy's block
    and the block of the shadowed position stays unowned. With N < C, positions >= N get [].
    """
    if not check(current_cid, mq_all, cid_all):
        return []
    n, c = len(mq_all), len(cid_all)
    index = cid_all.index(current_cid)
    mod = n % c
    gets_extra = mod > 0 and index < mod
    if n <= c:
        size = 1
    else:
        size = n // c + 1 if gets_extra else n // c
    start = index * size if gets_extra else index * size + mod
    take = min(size, n - start)
    return [mq_all[start + k] for k in range(take)]  # take < 0 runs no iteration, as in Java


def allocate_avg_by_circle(current_cid, mq_all, cid_all) -> list[MessageQueue]:
    """AVG_BY_CIRCLE: queue j goes to position j % C, scanned from the first index (facts §1.2)."""
    if not check(current_cid, mq_all, cid_all):
        return []
    c = len(cid_all)
    index = cid_all.index(current_cid)
    return [mq_all[j] for j in range(index, len(mq_all)) if j % c == index]


def md5_hash(key: str) -> int:
    """ConsistentHashRouter's MD5Hash: first 4 digest bytes, big-endian, unsigned (facts §1.3)."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


def consistent_hash_ring(cid_all: Sequence[str], virtual_nodes: int) -> dict[int, str]:
    """The TreeMap ``ConsistentHashRouter`` builds: ring hash -> physical client id.

    Every list element is a physical node, duplicates included. ``addNode`` numbers a node's
    replicas after the vnodes of that id *currently on the ring* (``getExistingReplicas``), so a
    duplicated id gets ``A-10..A-19``; a colliding ``put`` replaces the earlier vnode, which also
    lowers the owner's on-ring count used by a later duplicate (facts §1.3).
    """
    ring: dict[int, str] = {}
    on_ring: dict[str, int] = {}
    for cid in cid_all:
        existing = on_ring.get(cid, 0)
        for replica in range(existing, existing + virtual_nodes):
            key_hash = md5_hash(f"{cid}-{replica}")
            replaced = ring.get(key_hash)
            if replaced is not None:
                on_ring[replaced] -= 1
            ring[key_hash] = cid
            on_ring[cid] = on_ring.get(cid, 0) + 1
    return ring


def route(ring_hashes: Sequence[int], ring: dict[int, str], key: str) -> str | None:
    """``routeNode``: first ring key >= hash (``tailMap``), wrapping to the smallest; None if empty."""
    if not ring_hashes:
        return None
    from bisect import bisect_left

    h = md5_hash(key)
    at = bisect_left(ring_hashes, h)
    return ring[ring_hashes[at if at < len(ring_hashes) else 0]]


def consistent_hash_owners(mq_all, cid_all, virtual_nodes: int) -> list[str | None]:
    """Owner of each queue of ``mq_all`` (None with an empty ring), in ``mq_all`` order."""
    ring = consistent_hash_ring(cid_all, virtual_nodes)
    hashes = sorted(ring)
    return [route(hashes, ring, str(mq)) for mq in mq_all]


def check_virtual_nodes(virtual_nodes: int) -> None:
    """The constructor's check; it throws before any allocate call (facts §1.3)."""
    if virtual_nodes < 0:
        raise AllocationError(IAE, f"illegal virtualNodeCnt :{virtual_nodes}")


def allocate_consistent_hash(current_cid, mq_all, cid_all, virtual_nodes: int = DEFAULT_VIRTUAL_NODES
                             ) -> list[MessageQueue]:
    """CONSISTENT_HASH: the queues whose ``toString()`` routes to ``current_cid`` (facts §1.3)."""
    check_virtual_nodes(virtual_nodes)
    if not check(current_cid, mq_all, cid_all):
        return []
    owners = consistent_hash_owners(mq_all, cid_all, virtual_nodes)
    return [mq for mq, owner in zip(mq_all, owners) if owner == current_cid]


def allocate_by_config(config_queues) -> list[MessageQueue] | None:
    """CONFIG: the configured list for every caller, never validated; None if never set (§1.4)."""
    return None if config_queues is None else [as_message_queue(mq) for mq in config_queues]


def machine_room_of_broker(broker_name: str) -> str | None:
    """MACHINE_ROOM's room: ``brokerName.split("@")`` must give exactly 2 parts (facts §1.5)."""
    parts = java_split(broker_name, "@")
    return parts[0] if len(parts) == 2 else None


def allocate_by_machine_room(current_cid, mq_all, cid_all, consumer_idcs) -> list[MessageQueue]:
    """MACHINE_ROOM: deal the queues of rooms in ``consumer_idcs`` over all of cidAll (facts §1.5).

    Indexes the filtered ``premqAll`` (the post-4.8.0 code): ``mod`` consecutive queues per
    position, then the remainder from the tail, one each to the first ``rem`` positions. The
    consumer's own room is never looked at. ``consumer_idcs=None`` (setter never called) throws
    the NPE at the first queue whose broker name has a room, as Java's ``&&`` short-circuits.
    """
    if not check(current_cid, mq_all, cid_all):
        return []
    index = cid_all.index(current_cid)
    premq_all = []
    for mq in mq_all:
        room = machine_room_of_broker(mq.broker_name)
        if room is None:
            continue
        if consumer_idcs is None:
            raise AllocationError(NPE, NPE_CONSUMERIDCS_NULL)
        if room in consumer_idcs:
            premq_all.append(mq)
    c = len(cid_all)
    mod, rem = divmod(len(premq_all), c)
    result = premq_all[index * mod:index * mod + mod]
    if rem > index:
        result.append(premq_all[index + mod * c])
    return result


def broker_deploy_in(mq: MessageQueue) -> str:
    """The vectors' NEARBY resolver: text before the first ``@`` of brokerName, else ""."""
    at = mq.broker_name.find("@")
    return mq.broker_name[:at] if at >= 0 else ""


def consumer_deploy_in(cid: str) -> str:
    """The vectors' NEARBY resolver: text before the first ``-`` of the client id, else ""."""
    dash = cid.find("-")
    return cid[:dash] if dash >= 0 else ""


def allocate_machine_room_nearby(current_cid, mq_all, cid_all, inner, **inner_params
                                 ) -> list[MessageQueue]:
    """MACHINE_ROOM_NEARBY: own room first, then each orphan room over all of cidAll (facts §1.6).

    Queues and consumers are grouped by room (TreeMap, String order) before anything else, so an
    empty room throws in every call: first scanning mqAll, then cidAll. The own room's queues go
    to the own room's consumers (cidAll order); each room with queues but no consumer is handed
    to the inner strategy separately over all of cidAll, ascending by room name.
    """
    if not check(current_cid, mq_all, cid_all):
        return []
    mqs_by_room: dict[str, list[MessageQueue]] = {}
    for mq in mq_all:
        room = broker_deploy_in(mq)
        if not room:
            raise AllocationError(IAE, f"Machine room is null for mq {mq}")
        mqs_by_room.setdefault(room, []).append(mq)
    cids_by_room: dict[str, list[str]] = {}
    for cid in cid_all:
        room = consumer_deploy_in(cid)
        if not room:
            raise AllocationError(IAE, f"Machine room is null for consumer id {cid}")
        cids_by_room.setdefault(room, []).append(cid)

    own_room = consumer_deploy_in(current_cid)
    result = []
    own_mqs = mqs_by_room.pop(own_room, None)
    if own_mqs:
        result += _allocate_plain(inner, current_cid, own_mqs, cids_by_room.get(own_room), inner_params)
    for room in sorted(mqs_by_room, key=java_string_key):
        if room not in cids_by_room:
            result += _allocate_plain(inner, current_cid, mqs_by_room[room], cid_all, inner_params)
    return result


def _allocate_plain(strategy: str, current_cid, mq_all, cid_all, params: dict):
    if strategy == "AVG":
        return allocate_avg(current_cid, mq_all, cid_all)
    if strategy == "AVG_BY_CIRCLE":
        return allocate_avg_by_circle(current_cid, mq_all, cid_all)
    if strategy == "CONSISTENT_HASH":
        return allocate_consistent_hash(current_cid, mq_all, cid_all,
                                        params.get("virtual_nodes", DEFAULT_VIRTUAL_NODES))
    if strategy == "CONFIG":
        return allocate_by_config(params.get("config_queues"))
    if strategy == "MACHINE_ROOM":
        return allocate_by_machine_room(current_cid, mq_all, cid_all, params.get("consumer_idcs"))
    raise ValueError(f"unknown allocation strategy {strategy!r}; "
                     f"expected one of {', '.join(STRATEGIES)} or {NEARBY_PREFIX}<inner>")


# --- entry points ---------------------------------------------------------------------------------

def split_strategy(strategy: str, inner_strategy: str | None = None) -> tuple[str, str | None]:
    """``MACHINE_ROOM_NEARBY-AVG`` -> (``MACHINE_ROOM_NEARBY``, ``AVG``); plain names pass through."""
    if strategy.startswith(NEARBY_PREFIX):
        return "MACHINE_ROOM_NEARBY", strategy[len(NEARBY_PREFIX):]
    if strategy == "MACHINE_ROOM_NEARBY":
        if not inner_strategy:
            raise ValueError("MACHINE_ROOM_NEARBY needs an inner strategy")
        return strategy, inner_strategy
    return strategy, None


def allocate(strategy: str, current_cid, mq_all, cid_all, *, consumer_group: str = "",
             virtual_nodes: int | None = DEFAULT_VIRTUAL_NODES, consumer_idcs=None, config_queues=None,
             inner_strategy: str | None = None) -> list[MessageQueue] | None:
    """One ``allocate`` call of the strategy whose ``getName()`` is ``strategy``.

    ``mq_all`` items may be MessageQueues, mappings or 3-sequences; ``None`` lists are passed on as
    Java nulls. ``consumer_group`` is accepted for parity; RocketMQ uses it only for logging.
    Returns None only for CONFIG without a configured list. Raises :class:`AllocationError`
    exactly where Java throws, ``ValueError`` for a strategy name RocketMQ does not have.
    """
    del consumer_group
    base, inner = split_strategy(strategy, inner_strategy)
    mq_all = None if mq_all is None else [as_message_queue(mq) for mq in mq_all]
    cid_all = None if cid_all is None else list(cid_all)
    params = {"virtual_nodes": DEFAULT_VIRTUAL_NODES if virtual_nodes is None else virtual_nodes,
              "consumer_idcs": None if consumer_idcs is None else set(consumer_idcs),
              "config_queues": config_queues}
    if base == "MACHINE_ROOM_NEARBY":
        if inner == "CONSISTENT_HASH":
            check_virtual_nodes(params["virtual_nodes"])
        return allocate_machine_room_nearby(current_cid, mq_all, cid_all, inner, **params)
    return _allocate_plain(base, current_cid, mq_all, cid_all, params)


def allocate_all(strategy: str, mq_all, cid_all, **params) -> dict[str, list[MessageQueue] | None]:
    """Every distinct client's allocation in one state (duplicates share their first copy's).

    CONSISTENT_HASH builds its ring once for all clients instead of once per call. Raises the
    AllocationError of the first member (cidAll order) whose call throws; apart from an empty id,
    RocketMQ's errors do not depend on which member calls.
    """
    distinct = list(dict.fromkeys(cid_all or []))
    base, _ = split_strategy(strategy, params.get("inner_strategy"))
    if base == "CONSISTENT_HASH" and distinct:
        virtual_nodes = params.get("virtual_nodes")
        virtual_nodes = DEFAULT_VIRTUAL_NODES if virtual_nodes is None else virtual_nodes
        check_virtual_nodes(virtual_nodes)
        check(distinct[0], mq_all, cid_all)
        mqs = [as_message_queue(mq) for mq in mq_all]
        owners = consistent_hash_owners(mqs, list(cid_all), virtual_nodes)
        owned: dict[str, list[MessageQueue]] = {cid: [] for cid in distinct}
        for mq, owner in zip(mqs, owners):
            if owner is not None:
                owned[owner].append(mq)
        return {cid: queues for cid, queues in owned.items()}
    return {cid: allocate(strategy, cid, mq_all, cid_all, **params) for cid in distinct}
