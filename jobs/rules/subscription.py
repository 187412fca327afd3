"""Subscriptions (DESIGN.md §5): what a member says it subscribes, and what the group consumes.

A record without ``subscriptions`` says nothing about them: its topic set is unknown (null),
never the empty set — a collector that fills the field on some records only (heartbeat v2
sends it only when it changed, facts §4) must not read as a member dropping every topic."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def heartbeat_topics(subscriptions: Column) -> Column:
    """The sorted topics of a ``subscriptions`` list; null when the field is missing."""
    return F.when(subscriptions.isNotNull(), F.array_sort(F.array_distinct(
        F.transform(subscriptions, lambda s: s["topic"]))))


def subscribes(topic: Column, members: Column) -> Column:
    """A live member's own subscriptions name the topic; with no live member or no subscription
    information at all, the offsets record itself says the group consumes it (the broker
    reports consume stats only for topics the group consumes, facts §5.1).
    ``members``: ``array<struct<client_id, topics, ...>>``, ``topics`` null when unknown."""
    known = F.filter(members, lambda m: m["topics"].isNotNull())
    return (F.coalesce(F.size(known), F.lit(0)) == 0) | F.exists(
        known, lambda m: F.array_contains(m["topics"], topic))


def non_subscribers(topic: Column, members: Column) -> Column:
    """The client ids of the ``members`` whose own subscriptions are known and do not name the
    topic (``array<string>``). RocketMQ allocates every subscribed topic's queues over the whole
    group's cidAll, so such a member's share of the topic is never pulled (facts §2.2); and a
    4.x/5.x broker replaces the group's subscription table with each member's heartbeat, so while
    it lacks the topic it refuses the subscribers' pulls of it (``CODE: 24 … subscription not
    exist``; tests/data/real-cluster/README.md, difference 2)."""
    return F.transform(
        F.filter(members, lambda m: m["topics"].isNotNull() & ~F.array_contains(m["topics"], topic)),
        lambda m: m["client_id"])


def changed_topics(subs: Column, prev_subs: Column) -> Column:
    """Some member known in both rounds (``array<struct<client_id, topics>>``) reports another
    topic set; a member whose set is unknown in either round changes nothing. The sets are
    compared as arrays, not as JSON texts: this runs for every pair of members of every round
    (tests/gold/test_array_equality.py: both engines read the two alike)."""
    return F.coalesce(F.exists(subs, lambda s: s["topics"].isNotNull() & F.exists(
        prev_subs, lambda p: (p["client_id"] == s["client_id"]) & p["topics"].isNotNull()
        & (p["topics"] != s["topics"]))), F.lit(False))
