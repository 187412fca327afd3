"""Allocation replay as Spark SQL: what each client's ``allocate`` call returned (DESIGN.md §7).

Vocabulary (RocketMQ's, rocketmq-facts.md §1):
- a **state** is one row: ``state_id``, ``strategy`` (``getName()``: ``AVG``, ``AVG_BY_CIRCLE``,
  ``CONSISTENT_HASH``, ``CONFIG``, ``MACHINE_ROOM``, ``MACHINE_ROOM_NEARBY-AVG``,
  ``MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE``), ``mq_all`` (array of ``MQ_TYPE``, in the order passed),
  ``cid_all`` (array<string>, duplicates kept), and the optional ``virtual_nodes`` (null = 10),
  ``consumer_idcs`` (null = never set) and ``config_queues`` (null = never set);
- a **call** is ``(state_id, current_cid)``: one client running the state's strategy.

Every strategy is plain Spark SQL (column functions, higher-order array functions, one window),
so the same plan runs on Sail and on classic Spark and no Python worker is involved: the rare
strategies (CONFIG, MACHINE_ROOM, NEARBY) are short array expressions too, so a pandas UDF would
buy nothing, and Sail's support for them is untested. Each distinct (state, client) call is
exploded once into work items and regrouped (answer_calls):
- AVG, AVG_BY_CIRCLE and MACHINE_ROOM are array arithmetic on a SUB_CALL item; CONFIG and the
  validation errors are read off the CALL item.
- MACHINE_ROOM_NEARBY becomes one SUB_CALL per inner call (own room, then each orphan room),
  flattened back in order. Nesting the inner strategy inside a lambda instead gave expression
  trees that took Sail many seconds to plan.
- CONSISTENT_HASH: the first call of a state brings VNODE items (the MD5 ring) and QUEUE items;
  one window over the state's hashes routes each queue (the "ring join").
Single pass on purpose: Sail re-executes a shared sub-plan for every reference (``cache()`` is a
no-op there), so self-joins would recompute the caller's input, e.g. a snapshot hash, each time.

Known limit, CONSISTENT_HASH only: when two vnodes of a state collide on a 32-bit hash *and* a
duplicated client id is added after the collision, Java numbers that duplicate's replicas from
the surviving on-ring count; here they are numbered ``occurrence * virtual_nodes + r``. The
Python reference (:mod:`jobs.replay.reference`) models it exactly. The chance is about
``(vnodes on the ring)^2 / 2^33`` per state, and zero without duplicate ids.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, LongType, StringType, StructField, StructType

from jobs.replay.reference import IAE, NEARBY_PREFIX, NPE, NPE_CONSUMERIDCS_NULL

MQ_TYPE = StructType([
    StructField("topic", StringType()),
    StructField("broker_name", StringType()),
    StructField("queue_id", IntegerType()),
])
MQ_ARRAY = ArrayType(MQ_TYPE)
STRING_ARRAY = ArrayType(StringType())

STATE_COLUMNS = ("state_id", "strategy", "virtual_nodes", "consumer_idcs", "config_queues",
                 "mq_all", "cid_all")
OPTIONAL_STATE_COLUMNS = {"virtual_nodes": IntegerType(), "consumer_idcs": STRING_ARRAY,
                          "config_queues": MQ_ARRAY}
RESULT_COLUMNS = ("allocated", "error_class", "error_message")

# Not a Java class: a state whose strategy this transform cannot replay (an unknown name, or a
# NEARBY inner other than AVG / AVG_BY_CIRCLE). The Python reference covers those.
UNSUPPORTED = "rocketlens.UnsupportedStrategy"
NEARBY_INNERS = ("AVG", "AVG_BY_CIRCLE")
SUPPORTED = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM") + tuple(
    NEARBY_PREFIX + inner for inner in NEARBY_INNERS)
DEFAULT_VIRTUAL_NODES = 10

# Java split("@") gives exactly 2 parts iff one '@' is followed by a non-empty part and only
# trailing '@'s (split drops trailing empty strings): "a@b", "@b" and "a@b@" qualify; "a@",
# "a@b@c", "b" and "@" do not (facts §1.5, vectors README behaviour 6).
_MACHINE_ROOM_PATTERN = r"^([^@]*)@[^@]+@*$"


def _empty_mqs() -> Column:
    return F.array().cast(MQ_ARRAY)


# --- column functions: identifiers and ordering --------------------------------------------------

def mq_to_string(mq: Column) -> Column:
    """``MessageQueue.toString()``: the consistent-hash key of a queue (facts §0)."""
    return F.format_string("MessageQueue [topic=%s, brokerName=%s, queueId=%d]",
                           mq["topic"], mq["broker_name"], mq["queue_id"])


def md5_ring_hash(key: Column) -> Column:
    """ConsistentHashRouter's MD5Hash: first 4 bytes of MD5(UTF-8), big-endian unsigned (§1.3)."""
    return F.conv(F.substring(F.md5(key), 1, 8), 16, 10).cast("bigint")


def java_string_order(text: Column) -> Column:
    """A binary that compares like Java ``String.compareTo`` (UTF-16 code units, facts §0).

    Spark compares strings by UTF-8 bytes, i.e. by code point, which puts U+E000..U+FFFF after
    supplementary characters where Java puts them before.
    """
    return F.encode(text, "UTF-16BE")


def sort_mq_all(mq_all: Column) -> Column:
    """``Collections.sort(mqAll)``: topic, brokerName (String order), queueId numerically (§0, §2.2)."""
    keyed = F.transform(mq_all, lambda mq: F.struct(
        java_string_order(mq["topic"]).alias("t"), java_string_order(mq["broker_name"]).alias("b"),
        mq["queue_id"].alias("q"), mq.alias("mq")))
    return F.transform(F.array_sort(keyed), lambda k: k["mq"])


def sort_cid_all(cid_all: Column) -> Column:
    """``Collections.sort(cidAll)``: String order, duplicates kept (facts §0, §1.0)."""
    keyed = F.transform(cid_all, lambda cid: F.struct(java_string_order(cid).alias("k"), cid.alias("cid")))
    return F.transform(F.array_sort(keyed), lambda k: k["cid"])


def first_index(cid_all: Column, cid: Column) -> Column:
    """``cidAll.indexOf(currentCID)``: the FIRST position, so duplicates share it (facts §1.0)."""
    return (F.array_position(cid_all, cid) - 1).cast("int")


# --- column functions: one strategy each ---------------------------------------------------------

def avg_allocation(mq_all: Column, cid_all: Column, cid: Column) -> Column:
    """AVG (facts §1.1): a contiguous block; the first ``N % C`` positions get one extra queue.

    Assumes ``cid`` is in ``cid_all`` and both lists are non-empty; pass plain columns, as every
    argument is used several times. With N < C positions >= N get [] (Java's range is negative
    and its loop does not run).
    """
    n, c, i = F.size(mq_all), F.greatest(F.size(cid_all), F.lit(1)), first_index(cid_all, cid)
    mod = n % c
    gets_extra = (mod > 0) & (i < mod)
    quotient = ((n - mod) / c).cast("int")
    size = F.when(n <= c, F.lit(1)).when(gets_extra, quotient + 1).otherwise(quotient)
    start = F.when(gets_extra, i * size).otherwise(i * size + mod)
    take = F.least(size, n - start)
    return F.slice(mq_all, start + 1, F.greatest(take, F.lit(0)))


def avg_by_circle_allocation(mq_all: Column, cid_all: Column, cid: Column) -> Column:
    """AVG_BY_CIRCLE (facts §1.2): queue j belongs to position ``j % C`` (first index of ``cid``)."""
    c, i = F.size(cid_all), first_index(cid_all, cid)
    return F.filter(mq_all, lambda mq, j: (j >= i) & (j % c == i))


def machine_room_of_broker(broker_name: Column) -> Column:
    """MACHINE_ROOM's room of a broker: ``split("@")[0]`` when split gives 2 parts, else null (§1.5)."""
    return F.when(broker_name.rlike(_MACHINE_ROOM_PATTERN),
                  F.regexp_extract(broker_name, _MACHINE_ROOM_PATTERN, 1))


def filter_machine_rooms(mq_all: Column, consumer_idcs: Column) -> Column:
    """MACHINE_ROOM's ``premqAll``: the queues whose broker room is in ``consumer_idcs`` (§1.5)."""
    return F.filter(mq_all, lambda mq: F.array_contains(consumer_idcs, machine_room_of_broker(mq["broker_name"])))


def machine_room_allocation(premq_all: Column, cid_all: Column, cid: Column) -> Column:
    """MACHINE_ROOM (facts §1.5) over the filtered list ``premq_all`` (see filter_machine_rooms).

    ``mod = P / C`` consecutive queues from ``i * mod``, then ``premqAll[i + mod * C]`` for the
    first ``P % C`` positions, so the result is not contiguous. The post-4.8.0 code: it indexes
    ``premqAll``, not ``mqAll``. Pass plain columns.
    """
    p, c, i = F.size(premq_all), F.greatest(F.size(cid_all), F.lit(1)), first_index(cid_all, cid)
    rem = p % c
    mod = ((p - rem) / c).cast("int")
    block = F.slice(premq_all, i * mod + 1, mod)
    tail = F.when(rem > i, F.slice(premq_all, i + mod * c + 1, F.lit(1))).otherwise(_empty_mqs())
    return F.concat(block, tail)


def broker_deploy_in(mq: Column) -> Column:
    """The vectors' NEARBY resolver for queues: brokerName before the first ``@``, else ""."""
    name = mq["broker_name"]
    return F.when(F.instr(name, "@") > 0, F.substring_index(name, "@", 1)).otherwise(F.lit(""))


def consumer_deploy_in(cid: Column) -> Column:
    """The vectors' NEARBY resolver for clients: client id before the first ``-``, else ""."""
    return F.when(F.instr(cid, "-") > 0, F.substring_index(cid, "-", 1)).otherwise(F.lit(""))


def _in_room(placed: Column, room: Column) -> Column:
    """The items of a ``struct<room, item>`` array that sit in ``room``, in list order."""
    return F.transform(F.filter(placed, lambda p: p["room"] == room), lambda p: p["item"])


SUB_CALL_TYPE = StructType([
    StructField("strategy", StringType()),
    StructField("mq_all", MQ_ARRAY),
    StructField("cid_all", STRING_ARRAY),
])


def _sub_call(strategy: Column, mq_all: Column, cid_all: Column) -> Column:
    """One inner call, cast to ``SUB_CALL_TYPE`` (all fields nullable): the NEARBY and plain
    branches must agree on nullability, or Sail 0.7 panics building the array when the input
    lists come from an aggregate (declared non-null) rather than from a source."""
    return F.struct(strategy.alias("strategy"), mq_all.alias("mq_all"),
                    cid_all.alias("cid_all")).cast(SUB_CALL_TYPE)


def nearby_sub_calls(inner: Column, placed_mqs: Column, placed_cids: Column, cid_all: Column,
                     own_room: Column) -> Column:
    """MACHINE_ROOM_NEARBY's inner calls, in result order (facts §1.6).

    ``placed_mqs``/``placed_cids`` are ``struct<room, item>`` arrays (mq_all, cid_all with the
    resolver's rooms). First the own room's queues among the own room's consumers (cidAll order),
    skipped when the room has no queue; then every room with queues and no consumer, ascending by
    name (TreeMap, Java String order), each over all of cidAll.
    """
    own_call = F.filter(F.array(_sub_call(inner, _in_room(placed_mqs, own_room), _in_room(placed_cids, own_room))),
                        lambda call: F.size(call["mq_all"]) > 0)
    consumer_rooms = F.transform(placed_cids, lambda p: p["room"])
    orphan_rooms = F.array_distinct(F.filter(
        F.transform(placed_mqs, lambda p: p["room"]),
        lambda room: (room != own_room) & ~F.array_contains(consumer_rooms, room)))
    orphan_rooms = F.transform(
        F.array_sort(F.transform(orphan_rooms, lambda room: F.struct(
            java_string_order(room).alias("k"), room.alias("room")))),
        lambda k: k["room"])
    orphan_calls = F.transform(orphan_rooms, lambda room: _sub_call(inner, _in_room(placed_mqs, room), cid_all))
    return F.concat(own_call, orphan_calls)


# --- column functions: the whole call ------------------------------------------------------------

def _error(java_class: str, message: Column | str) -> Column:
    message = F.lit(message) if isinstance(message, str) else message
    return F.struct(F.lit(java_class).alias("error_class"), message.alias("error_message"))


def allocation_error(strategy: Column, current_cid: Column, mq_all: Column, cid_all: Column,
                     virtual_nodes: Column, consumer_idcs: Column) -> Column:
    """The exception of one call as ``struct<error_class, error_message>``, null if none.

    Order as in Java: the CONSISTENT_HASH constructor; then ``check`` (currentCID, mqAll, cidAll,
    facts §1.0), which CONFIG never calls; a caller not in cidAll returns [] before any
    strategy-specific error; then MACHINE_ROOM's NPE (only reached when some broker name has a
    room, as ``&&`` short-circuits) and NEARBY's resolver errors, queues scanned before clients.
    """
    is_nearby = strategy.startswith(NEARBY_PREFIX)
    empty_broker_rooms = F.filter(mq_all, lambda mq: broker_deploy_in(mq) == "")
    empty_consumer_rooms = F.filter(cid_all, lambda cid: consumer_deploy_in(cid) == "")
    return (
        F.when(strategy.isNull() | ~strategy.isin(*SUPPORTED),
               _error(UNSUPPORTED, F.concat(F.lit("no Spark replay for strategy "),
                                            F.coalesce(strategy, F.lit("null")))))
        .when((strategy == "CONSISTENT_HASH") & (virtual_nodes < 0),
              _error(IAE, F.concat(F.lit("illegal virtualNodeCnt :"), virtual_nodes.cast("string"))))
        .when(strategy == "CONFIG", F.lit(None))
        .when(current_cid.isNull() | (current_cid == ""), _error(IAE, "currentCID is empty"))
        .when(mq_all.isNull() | (F.size(mq_all) == 0), _error(IAE, "mqAll is null or mqAll empty"))
        .when(cid_all.isNull() | (F.size(cid_all) == 0), _error(IAE, "cidAll is null or cidAll empty"))
        .when(~F.array_contains(cid_all, current_cid), F.lit(None))
        .when((strategy == "MACHINE_ROOM") & consumer_idcs.isNull()
              & F.exists(mq_all, lambda mq: machine_room_of_broker(mq["broker_name"]).isNotNull()),
              _error(NPE, NPE_CONSUMERIDCS_NULL))
        .when(is_nearby & (F.size(empty_broker_rooms) > 0),
              _error(IAE, F.concat(F.lit("Machine room is null for mq "),
                                   mq_to_string(F.try_element_at(empty_broker_rooms, F.lit(1))))))
        .when(is_nearby & (F.size(empty_consumer_rooms) > 0),
              _error(IAE, F.concat(F.lit("Machine room is null for consumer id "),
                                   F.try_element_at(empty_consumer_rooms, F.lit(1)))))
    )


# --- transforms ----------------------------------------------------------------------------------

def _nullable(name: str) -> Column:
    """``name`` declared nullable: Sail 0.7 fails some joins over a non-nullable key column
    ("Physical input schema should be the same as the one converted from logical input schema")."""
    return F.when(F.col(name).isNotNull(), F.col(name)).alias(name)


def with_state_defaults(states_df: DataFrame) -> DataFrame:
    """Add the optional state columns a caller left out as typed nulls; select the state contract."""
    for name, data_type in OPTIONAL_STATE_COLUMNS.items():
        if name not in states_df.columns:
            states_df = states_df.withColumn(name, F.lit(None).cast(data_type))
    return states_df.select(
        _nullable("state_id"), "strategy", F.col("virtual_nodes").cast("int").alias("virtual_nodes"),
        "consumer_idcs", "config_queues", "mq_all", "cid_all")


# Work items: one call explodes into the rows that answer it, so a call frame is read once (Sail
# re-executes a shared sub-plan for every reference and ignores cache()).
CALL, SUB_CALL, QUEUE, VNODE = 0, 1, 2, 3  # QUEUE < VNODE: a queue sorts before a vnode of equal hash
ITEM_TYPE = StructType([
    StructField("kind", IntegerType()),
    StructField("part", IntegerType()),
    StructField("sub_strategy", StringType()),
    StructField("sub_mq_all", MQ_ARRAY),
    StructField("sub_cid_all", STRING_ARRAY),
    StructField("hash", LongType()),
    StructField("owner", StringType()),
    StructField("put_order", LongType()),
    StructField("qpos", IntegerType()),
    StructField("mq", MQ_TYPE),
])


def _item(kind: int, **fields: Column) -> Column:
    values = {**fields, "kind": F.lit(kind)}
    return F.struct(*[values.get(f.name, F.lit(None)).cast(f.dataType).alias(f.name) for f in ITEM_TYPE.fields])


def _items(items: Column) -> Column:
    """An item array cast to ``array<ITEM_TYPE>``, all nullable: Sail concatenates only arrays whose
    types agree on nullability too, and its simplifier sees through tricks on single fields."""
    return items.cast(ArrayType(ITEM_TYPE))


def vnode_items(cid_all: Column, virtual_nodes: Column, when: Column) -> Column:
    """The ring's ``put``s in order (facts §1.3): each element of cidAll, duplicates included, adds
    vnodes ``<cid>-<replica>``; the k-th copy of an id numbers replicas from ``k * virtual_nodes``
    (``getExistingReplicas``). ``put_order`` ranks the puts, so on a hash collision the later wins.
    """
    nodes = F.filter(F.transform(cid_all, lambda cid, pos: F.struct(
        cid.alias("cid"), pos.alias("pos"),
        F.size(F.filter(F.slice(cid_all, 1, pos), lambda other: other == cid)).alias("occurrence"))),
        lambda node: when)
    return F.flatten(F.transform(nodes, lambda node: F.transform(
        F.sequence(F.lit(0), virtual_nodes - 1), lambda r: _item(
            VNODE,
            hash=md5_ring_hash(F.concat(node["cid"], F.lit("-"),
                                        (node["occurrence"] * virtual_nodes + r).cast("string"))),
            owner=node["cid"],
            put_order=node["pos"].cast("long") * virtual_nodes + r))))


def queue_items(mq_all: Column, when: Column) -> Column:
    """Each queue with the hash of its ``toString()``, the key CONSISTENT_HASH routes (facts §1.3)."""
    return F.transform(F.filter(mq_all, lambda mq: when), lambda mq, qpos: _item(
        QUEUE, hash=md5_ring_hash(mq_to_string(mq)), qpos=qpos, mq=mq))


def sub_call_items(strategy: Column, mq_all: Column, cid_all: Column, current_cid: Column,
                   consumer_idcs: Column, when: Column) -> Column:
    """The plain strategy calls that answer a row-local call, ``part`` in result order.

    MACHINE_ROOM deals its filtered ``premqAll``; NEARBY becomes its inner calls
    (nearby_sub_calls), possibly none, which answers []; the others are one call each.
    """
    placed_mqs = F.transform(mq_all, lambda mq: F.struct(broker_deploy_in(mq).alias("room"), mq.alias("item")))
    placed_cids = F.transform(cid_all, lambda cid: F.struct(consumer_deploy_in(cid).alias("room"), cid.alias("item")))
    nearby = nearby_sub_calls(F.substring(strategy, len(NEARBY_PREFIX) + 1, 64), placed_mqs, placed_cids,
                              cid_all, consumer_deploy_in(current_cid))
    plain_mqs = F.when(strategy == "MACHINE_ROOM", filter_machine_rooms(mq_all, consumer_idcs)).otherwise(mq_all)
    calls = F.when(strategy.startswith(NEARBY_PREFIX), nearby).otherwise(
        F.array(_sub_call(strategy, plain_mqs, cid_all)))
    return F.transform(F.filter(calls, lambda call: when), lambda call, part: _item(
        SUB_CALL, part=part, sub_strategy=call["strategy"], sub_mq_all=call["mq_all"],
        sub_cid_all=call["cid_all"]))


def sub_call_allocation(item: Column, current_cid: Column) -> Column:
    """The answer of one plain sub-call (AVG, AVG_BY_CIRCLE or MACHINE_ROOM over premqAll)."""
    strategy, mq_all, cid_all = item["sub_strategy"], item["sub_mq_all"], item["sub_cid_all"]
    return (F.when(strategy == "AVG", avg_allocation(mq_all, cid_all, current_cid))
            .when(strategy == "AVG_BY_CIRCLE", avg_by_circle_allocation(mq_all, cid_all, current_cid))
            .when(strategy == "MACHINE_ROOM", machine_room_allocation(mq_all, cid_all, current_cid)))


def explode_work_items(calls_df: DataFrame) -> DataFrame:
    """One row per work item of each distinct call (``state_id, current_cid`` + state columns).

    Every call gets a CALL item (its error, CONFIG list, membership); a call that reaches its
    strategy gets SUB_CALL items; the first call of each valid CONSISTENT_HASH state brings the
    state's VNODE and QUEUE items, so the ring is built once per state, not once per client.
    """
    strategy, mq_all, cid_all = F.col("strategy"), F.col("mq_all"), F.col("cid_all")
    virtual_nodes = F.coalesce("virtual_nodes", F.lit(DEFAULT_VIRTUAL_NODES))
    error = allocation_error(strategy, F.col("current_cid"), mq_all, cid_all, virtual_nodes, F.col("consumer_idcs"))
    is_in_cid_all = F.coalesce(F.array_contains(cid_all, F.col("current_cid")), F.lit(False))
    first_call = Window.partitionBy("state_id").orderBy(F.col("current_cid").asc_nulls_first())
    builds_ring = ((F.col("_call_rank") == 1) & (strategy == "CONSISTENT_HASH") & (virtual_nodes > 0)
                   & (F.size(mq_all) > 0) & (F.size(cid_all) > 0))
    reaches_strategy = (F.col("_error").isNull() & F.col("_is_in_cid_all")
                        & ~strategy.isin("CONFIG", "CONSISTENT_HASH"))
    # Item arrays are built by transform() and emptied by filter(), never by when(), and cast to
    # one type: Sail concatenates only arrays whose types agree on nullability as well. Null
    # lists (Java nulls) would null the whole concat and lose the call; only the error reads them.
    some_mqs = F.coalesce(mq_all, _empty_mqs())
    some_cids = F.coalesce(cid_all, F.array().cast(STRING_ARRAY))
    items = F.concat(
        _items(F.transform(F.array(F.lit(0)), lambda _: _item(CALL))),
        _items(sub_call_items(strategy, some_mqs, some_cids, F.col("current_cid"), F.col("consumer_idcs"),
                              reaches_strategy)),
        _items(vnode_items(some_cids, virtual_nodes, builds_ring)),
        _items(queue_items(some_mqs, builds_ring)))
    return (calls_df
            .withColumn("_error", error)
            .withColumn("_is_in_cid_all", is_in_cid_all)
            .withColumn("_call_rank", F.row_number().over(first_call))
            .select("state_id", "current_cid", "strategy", "config_queues", "_error", "_is_in_cid_all",
                    F.explode(items).alias("item")))


def with_routed_owner(items_df: DataFrame) -> DataFrame:
    """Route QUEUE items to their CONSISTENT_HASH owner: the first vnode with hash >= the queue's
    (``tailMap`` includes equality), wrapping to the smallest, the latest put winning a collision;
    no vnode (0 virtual nodes) owns nothing. Adds ``key_cid``: the owner for queues, else the caller.
    """
    kind = F.col("item.kind")
    by_hash = (Window.partitionBy("state_id")
               .orderBy(F.col("item.hash").asc_nulls_first(), kind.asc(), F.col("item.put_order").desc_nulls_last()))
    vnode_owner = F.when(kind == VNODE, F.col("item.owner"))
    owner = F.coalesce(
        F.first(vnode_owner, ignorenulls=True).over(by_hash.rowsBetween(Window.currentRow, Window.unboundedFollowing)),
        F.first(vnode_owner, ignorenulls=True).over(by_hash.rowsBetween(Window.unboundedPreceding,
                                                                         Window.unboundedFollowing)))
    return (items_df
            .withColumn("key_cid", F.when(kind == QUEUE, owner).otherwise(F.col("current_cid")))
            .filter((kind != VNODE) & ((kind != QUEUE) | F.col("key_cid").isNotNull())))


def answer_calls(calls_df: DataFrame) -> DataFrame:
    """Answer distinct calls that carry their state's columns, reading them once.

    Input: one row per distinct (``state_id``, ``current_cid``) with the state columns (a repeated
    call would be counted twice). Returns ``state_id, current_cid, allocated, error_class,
    error_message``. CONFIG returns its configured list to
    anyone, unvalidated, null if never set (facts §1.4); the others return [] to a caller not in
    cidAll (facts §1.0), else their strategy's list; a call that threw gets null.
    """
    kind = F.col("item.kind")
    answers_df = (calls_df
                  .transform(explode_work_items)
                  .transform(with_routed_owner)
                  .groupBy("state_id", "key_cid")
                  .agg(F.max((kind == CALL).cast("int")).alias("_is_call"),
                       F.first(F.when(kind == CALL, F.col("strategy")), ignorenulls=True).alias("strategy"),
                       F.first(F.when(kind == CALL, F.col("config_queues")), ignorenulls=True).alias("config_queues"),
                       F.first(F.when(kind == CALL, F.col("_error")), ignorenulls=True).alias("_error"),
                       F.first(F.when(kind == CALL, F.col("_is_in_cid_all")), ignorenulls=True).alias("_is_in_cid_all"),
                       F.collect_list(F.when(kind == SUB_CALL, F.struct(
                           F.col("item.part").alias("part"),
                           sub_call_allocation(F.col("item"), F.col("key_cid")).alias("allocated")))).alias("_parts"),
                       F.collect_list(F.when(kind == QUEUE, F.struct("item.qpos", "item.mq"))).alias("_owned"))
                  .filter(F.col("_is_call") == 1))
    allocated = (F.when(F.col("_error").isNotNull(), F.lit(None).cast(MQ_ARRAY))
                 .when(F.col("strategy") == "CONFIG", F.col("config_queues"))
                 .when(~F.col("_is_in_cid_all"), _empty_mqs())
                 .when(F.col("strategy") == "CONSISTENT_HASH",
                       F.transform(F.sort_array("_owned"), lambda owned: owned["mq"]))
                 .otherwise(F.flatten(F.transform(F.sort_array("_parts"), lambda part: part["allocated"]))))
    return answers_df.select(
        "state_id", F.col("key_cid").alias("current_cid"), allocated.alias("allocated"),
        F.col("_error.error_class").alias("error_class"), F.col("_error.error_message").alias("error_message"))


def with_allocation(states_df: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """Transform factory: add ``allocated``, ``error_class``, ``error_message`` to a calls frame.

    ``calls_df`` needs ``state_id`` and ``current_cid`` (other columns are kept, rows are neither
    added nor dropped unless a call has no state: inner join). Each distinct call is answered once
    from its state in ``states_df`` (module docstring) and joined back. ``allocated`` is RocketMQ's
    returned list in order; null when the call threw (``error_class``/``error_message`` name the
    Java exception) or for CONFIG without a list.
    """
    def transform(calls_df: DataFrame) -> DataFrame:
        states = with_state_defaults(states_df)
        distinct_df = (calls_df.select(_nullable("state_id"), _nullable("current_cid")).distinct()
                       .join(states, "state_id", "inner"))
        call_columns = [c for c in calls_df.columns if c not in RESULT_COLUMNS]
        return _join_answers(calls_df.select(*call_columns), _renamed_keys(answer_calls(distinct_df)))
    return transform


def _renamed_keys(answers_df: DataFrame) -> DataFrame:
    return answers_df.select(F.col("state_id").alias("_state_id"), F.col("current_cid").alias("_current_cid"),
                             *RESULT_COLUMNS)


def replay_states(states_df: DataFrame) -> DataFrame:
    """One row per (state, position of cid_all): ``state_id, cid_index, current_cid`` + results.

    Duplicated ids appear once per position with the same result (facts §1.0: ``indexOf``).
    """
    calls_df = with_state_defaults(states_df).select(
        "state_id", F.posexplode("cid_all").alias("cid_index", "current_cid"))
    return calls_df.transform(with_allocation(states_df)).select(
        "state_id", "cid_index", "current_cid", *RESULT_COLUMNS)


def with_state_id(sort_inputs: bool = True) -> Callable[[DataFrame], DataFrame]:
    """Transform factory: add ``state_id``, a hash of (strategy, parameters, mq_all, cid_all).

    With ``sort_inputs`` the lists are first sorted as RebalanceImpl does (facts §2.2 step 4), so
    the same membership seen in another order is the same state. Null and empty lists differ.
    """
    def transform(snapshots_df: DataFrame) -> DataFrame:
        df = snapshots_df
        for name, data_type in OPTIONAL_STATE_COLUMNS.items():
            if name not in df.columns:
                df = df.withColumn(name, F.lit(None).cast(data_type))
        if sort_inputs:
            df = (df.withColumn("mq_all", sort_mq_all(F.col("mq_all")))
                  .withColumn("cid_all", sort_cid_all(F.col("cid_all"))))
        state = F.struct(*[F.col(c) for c in STATE_COLUMNS if c != "state_id"])
        return df.withColumn("state_id", F.sha2(F.to_json(state), 256))
    return transform


def replay_snapshots(snapshots_df: DataFrame, *, sort_inputs: bool = True) -> DataFrame:
    """Each client's allocation at each snapshot, replayed once per distinct state and joined back.

    ``snapshots_df``: one row per (snapshot, client) with ``current_cid``, ``strategy``, ``mq_all``,
    ``cid_all`` and optionally ``virtual_nodes``, ``consumer_idcs``, ``config_queues``; other
    columns are kept. Adds ``state_id`` and the result columns. The replay runs on the distinct
    (state, client) calls, so its cost grows with membership and route changes, not with the
    number of snapshots; what stays per snapshot row is hashing the state (once for the dedup,
    once for the join back: Sail does not cache) and the join itself.
    """
    keyed_df = snapshots_df.transform(with_state_id(sort_inputs))
    # A window, not dropDuplicates: Sail's aggregate charges each kept array value with the
    # whole batch it was sliced from, and outgrew its memory pool on a few thousand distinct
    # calls (gold.strategy_whatif).
    first_call = Window.partitionBy("state_id", "current_cid").orderBy("state_id")
    distinct_df = (keyed_df.select(*STATE_COLUMNS, "current_cid")
                   .withColumn("_call_rank", F.row_number().over(first_call))
                   .where(F.col("_call_rank") == 1)
                   .select(*[_nullable(c) if c in ("state_id", "current_cid") else c
                             for c in (*STATE_COLUMNS, "current_cid")]))
    return _join_answers(keyed_df, _renamed_keys(answer_calls(distinct_df)))


def _join_answers(calls_df: DataFrame, answers_df: DataFrame) -> DataFrame:
    """Attach answers (``_state_id``, ``_current_cid`` + results) to calls; a null cid is a call too.

    The answers derive from the calls, so their keys are renamed first: a self-join on equal
    column names is ambiguous on Spark Connect.
    """
    condition = ((F.col("state_id") == F.col("_state_id"))
                 & F.col("current_cid").eqNullSafe(F.col("_current_cid")))
    return (calls_df.join(answers_df, condition, "inner")
            .select(*calls_df.columns, *RESULT_COLUMNS))
