"""jobs.rules.evidence.answered_running_info_claims on both engines, against a plain reading of
its rule: a running-info claim is cut ``round_seconds`` after the first round of its group at or
after ``valid_from + round_seconds`` (a round: any client's poll of that group), or left as it
is when no later round comes: on ties, equal times, other groups and gaps."""

import datetime as dt
import random

from jobs.rules.evidence import answered_running_info_claims
from tests.rules.frames import DAY, OWNERSHIP_SCHEMA, T0

ROUND = 60


def claim(cluster, group, client, queue, start_s, end_s):
    start = T0 + dt.timedelta(seconds=start_s)
    end = None if end_s is None else T0 + dt.timedelta(seconds=end_s)
    return (cluster, group, client, "t", "b", queue, "running_info", start, end, DAY)


def reference(rows):
    """Each claim's ``valid_until`` as the rule reads, plainly."""
    polls: dict[tuple[str, str], set[dt.datetime]] = {}
    for row in rows:  # every claim's valid_from is a poll of its group
        polls.setdefault((row[0], row[1]), set()).add(row[7])
    out = []
    for row in rows:
        cluster, group, client, topic, broker, queue, source, start, end, date = row
        probe = start + dt.timedelta(seconds=ROUND)
        later = [t for t in polls[(cluster, group)] if t >= probe]
        until = end
        if later:
            cut = min(later) + dt.timedelta(seconds=ROUND)
            until = cut if end is None else min(end, cut)
        out.append((cluster, group, client, topic, broker, queue, source, start, until, date))
    return sorted(out, key=repr)


CORNERS = [
    # g1: a round exactly round_seconds after the claim counts (at or after)
    claim("c", "g1", "a@1", 0, 0, 600),
    claim("c", "g1", "b@1", 0, 60, 600),
    # g1: a second client polling at the same instant as a probe's time
    claim("c", "g1", "a@1", 1, 120, 130),
    claim("c", "g1", "b@1", 1, 120, None),
    # g2: no round after the claim: left as it is, open end included
    claim("c", "g2", "a@1", 0, 0, None),
    claim("c", "g2", "a@1", 1, 30, 500),
    # g3: the next round comes late; the claim's own end is earlier than the cut
    claim("c", "g3", "a@1", 0, 0, 100),
    claim("c", "g3", "b@1", 0, 1000, 2000),
    # the same group name in another cluster is another group
    claim("d", "g3", "z@1", 0, 70, 90),
    # a millisecond apart (landing times are epoch milliseconds): a round 1 ms before the
    # probe time does not count, 1 ms after does
    claim("c", "g4", "a@1", 0, 0, 900),
    claim("c", "g4", "b@1", 0, 59.999, 900),
    claim("c", "g4", "c@1", 0, 60.001, 900),
]


def random_claims(seed):
    rng = random.Random(seed)
    rows = []
    for group in range(6):
        for client in range(3):
            t = rng.choice([0, 5, 30])
            while t < 1500:
                end = None if rng.random() < 0.2 else t + rng.choice([10, 60, 61, 200, 900])
                rows.append(claim("c", f"r{group}", f"{client}@x", rng.randrange(4), t, end))
                t += rng.choice([30, 60, 60, 60, 90, 400])
    return rows


def _check(spark, rows):
    df = spark.createDataFrame(rows, OWNERSHIP_SCHEMA)
    answered = answered_running_info_claims(df, ROUND).select(*df.columns)
    actual = sorted((tuple(r) for r in answered.collect()), key=repr)
    assert actual == reference(rows)


def test_corner_claims_are_cut_as_the_rule_reads(spark):
    _check(spark, CORNERS)


def test_random_claims_are_cut_as_the_rule_reads(spark):
    rows = random_claims(19)
    assert len(rows) > 200
    _check(spark, rows)
