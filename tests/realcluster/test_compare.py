"""The harness's own truth rules (``tests/realcluster/compare.py``) on hand-stated client records: no
cluster, no engine. What a real run's records look like: tests/data/real-cluster/README.md."""

from __future__ import annotations

import datetime as dt

from tests.realcluster import cases as C
from tests.realcluster import compare


def case(name: str) -> C.Case:
    return next(c for c in C.CASES if c.name == name)


def test_a_starved_stretch_is_pinned_after_the_highest_offset_received_not_the_last_in_time():
    """A concurrent consumer's receipts of one pull come out of order (a run of session 37: offsets 0..28
    received in one second, offset 3 last). Hand-stated records: one held queue, offsets 0..9 received at
    10 s in reverse order, then 110 s of messages nobody receives, then a 105 s stretch after offsets 10..19
    and a 55 s one after 20..24: the first two are stuck at 10 and 20; the last, within the band of the
    60 s threshold, may be found or not."""
    topicb = case("topicB")
    q = {"topic": "TopicRcB", "broker": "broker-a", "queue": 0}
    who = {"name": "topicb-1", "pid": 1}
    rows = [{"ev": "owned", "ts": 0, **who, "queues": "TopicRcB|broker-a|0"}]
    rows += [{"ev": "sent", "ts": t * 1000, **q, "offset": t} for t in range(0, 300)]
    rows += [{"ev": "recv", "ts": 10_000 + (9 - o), **who, **q, "offset": o} for o in range(10)]
    rows += [{"ev": "recv", "ts": 120_000 + o, **who, **q, "offset": o} for o in range(10, 20)]
    rows += [{"ev": "recv", "ts": 225_000 + o, **who, **q, "offset": o} for o in range(20, 25)]
    rows += [{"ev": "recv", "ts": 280_000 + o, **who, **q, "offset": o} for o in range(25, 300)]
    exp = compare.expected(topicb, rows)
    key = ("TopicRcB", "broker-a", 0)
    assert sorted(off for k, off, _ in exp["stuck"] if k == key) == [10, 20]
    assert [off for k, off, _ in exp["stuck_near"] if k == key] == [25]


def test_the_drain_clears_when_each_queue_s_lag_falls_to_the_cleared_lag_and_the_last_one_decides():
    """drain_truth: a queue's lag is ``cleared_lag`` once the message at (last offset sent − cleared_lag)
    is done, i.e. received + the listener's ``consume_ms``; the group × topic clears with its last queue."""
    drain = case("backlog-drain")
    t0 = 1_000_000
    rows = [{"ev": "sent", "ts": t0 + o * 10, "topic": "TopicRcDrain", "broker": "broker-a", "queue": q,
             "offset": o} for q in (0, 1) for o in range(40)]
    # queue 0 is drained 1 message/s from t0 + 5 s, queue 1 at 1 message/2 s
    rows += [{"ev": "recv", "ts": t0 + 5_000 + o * 1000, "name": "drain-1", "topic": "TopicRcDrain",
              "broker": "broker-a", "queue": 0, "offset": o} for o in range(40)]
    rows += [{"ev": "recv", "ts": t0 + 5_000 + o * 2000, "name": "drain-1", "topic": "TopicRcDrain",
              "broker": "broker-a", "queue": 1, "offset": o} for o in range(40)]

    got = compare.drain_truth(drain, rows, 5)

    assert got["missing"] == []
    assert got["cleared_ms"] == t0 + 5_000 + 34 * 2000 + drain.clients[0].consume_ms  # queue 1, offset 39 - 5
    assert got["cut_ms"] == t0 + drain.forecast_at * 1000
    # a queue whose cleared offset was never received: no clear time, named
    short = [r for r in rows if not (r["ev"] == "recv" and r["queue"] == 1 and r["offset"] >= 30)]
    assert compare.drain_truth(drain, short, 5)["missing"] == [("TopicRcDrain", "broker-a", 1)]


def test_the_forecast_landing_holds_the_group_s_files_collected_by_the_cut(tmp_path):
    """landing_until: the group's offsets, connections and running-info files of the rounds at or before
    the cut, in the landing's layout; other groups' files, later rounds and client logs left out."""
    landing = tmp_path / "landing"
    day = "date=2026-12-07/cluster=C"
    files = {
        f"offsets/{day}/group=G/20261207T120000Z.txt": True,
        f"offsets/{day}/group=G/20261207T120010Z.unlisted.jsonl": True,
        f"offsets/{day}/group=G/20261207T120020Z.txt": False,     # after the cut
        f"offsets/{day}/group=H/20261207T120000Z.txt": False,     # another group
        f"connections/{day}/group=G/broker_name=b/broker_addr=x:1/20261207T120010Z.txt": True,
        f"running_info/{day}/group=G/client=c@1/20261207T120000Z.json": True,
        "client_logs/date=2026-12-07/localhost/group=G-client.log": False,
    }
    for name in files:
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_text("x")
    cut = dt.datetime(2026, 12, 7, 12, 0, 10, tzinfo=dt.timezone.utc).timestamp() * 1000

    n = compare.landing_until(landing, "G", int(cut), tmp_path / "out")

    kept = sorted(str(f.relative_to(tmp_path / "out")) for f in (tmp_path / "out").rglob("*") if f.is_file())
    assert kept == sorted(k for k, keep in files.items() if keep) and n == len(kept)
