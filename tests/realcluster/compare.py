"""Expected findings from what the clients recorded, `rocketlens run` on the collected day, one line per case.

Truth comes from the clients' side files (``<root>/truth/*.jsonl``), never from rocketlens' rules:
- a queue of the group's topics that took messages during the traffic window and from which no process
  of the group received any of them is **orphaned**;
- a queue from which two processes (pids) received messages, their receive spans overlapping by at least
  the stuck/orphan threshold, is **double-owned**;
- the slow message's queue is **stuck** at the slow message's offset (the blocking offset) for as long as
  the listener held it (``slow_taken`` → ``slow_finished``);
- a queue a process held while messages kept arriving and nobody received any for the threshold is
  **stuck** (starved) at the message after the highest offset received before (the queue's first message
  when none was); each such stretch counts, and one within ``SNAPSHOT_BAND_S`` of the threshold may be
  found or not.
A healthy case must come out OK with no WARN or CRITICAL finding.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from tests.realcluster import cases as C
from tests.realcluster.cluster import REPO, log

# Thresholds scaled to a few minutes of traffic (stated in tests/data/real-cluster/README.md).
# THRESHOLDS alone leaves client_log_timezone at its default (GMT+8): the fast tier runs that too.
ZONE_CONF = """\
[ingest]
# the client JVMs run in the machine's zone (UTC here); rocketmq_client.log 4.9.x uses the JVM zone
# (the 5.x clients' lines are read in GMT+8, their pattern's zone, whatever this says)
client_log_timezone = "UTC"
"""
THRESHOLDS = """\
[detection]
orphan_min_duration_seconds = 60
stuck_min_duration_seconds = 60
[producer]
# HOT_QUEUE over 2 minutes of a few hundred messages instead of 60 minutes of 1000
hot_min_minutes = 2
min_messages = 200
"""
CONF = ZONE_CONF + THRESHOLDS
MIN_OVERLAP_S = 60
ARRIVAL_GAP_S = 20   # messages "keep arriving" on a queue when no two consecutive sends are further apart
# How far the product's view of a stall can be off the clients' own: it sees a committed offset, which
# the client persists every 5 s (persistConsumerOffsetInterval), in snapshots 10 s apart (the collector's
# interval). A starved stretch within this of the threshold may be found or not (``stuck_near``).
SNAPSHOT_BAND_S = 20


def load_truth(root: Path) -> list[dict]:
    rows = []
    for f in sorted((root / "truth").glob("*.jsonl")):
        rows += [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
    return rows


def expected(case: C.Case, rows: list[dict]) -> dict:
    names = {cl.name for cl in case.clients}
    sent = [r for r in rows if r["ev"] == "sent" and r["topic"] in case.topics]
    if not sent:
        return {"error": "nothing was sent"}
    w0 = min(r["ts"] for r in sent)
    stops = [r["ts"] for r in rows if r["ev"] in ("stopping", "leave") and r.get("name") in names]
    w1 = min([max(r["ts"] for r in sent), *stops])
    gap = MIN_OVERLAP_S * 1000
    # A stretch of >= the threshold with messages arriving all along (no pause over ARRIVAL_GAP_S) and no receipt
    # from the queue by anyone of the group: **orphaned** when no process held the queue in its own
    # process-queue table then, else **starved** (held, not pulled: expected stuck at the next offset).
    recv: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for r in rows:
        if r["ev"] == "recv" and r.get("name") in names and not r.get("retry_topic") and w0 <= r["ts"] <= w1:
            recv[(r["topic"], r["broker"], r["queue"])].append((r["ts"], r["offset"]))
    sent_ts: dict[tuple, list[int]] = defaultdict(list)
    first_offset: dict[tuple, int] = {}   # the first message the producer put on each queue
    for r in sent:
        q = (r["topic"], r["broker"], r["queue"])
        first_offset[q] = min(first_offset.get(q, r["offset"]), r["offset"])
        if r["ts"] <= w1:
            sent_ts[q].append(r["ts"])
    held = held_spans(rows, names, w0, w1)
    orphaned, starved, starved_near = [], [], []
    for q, ts in sent_ts.items():
        got = sorted(recv.get(q, []))
        edges = [(w0, -1), *got, (w1, -1)]
        done = -1   # the highest offset received so far: a concurrent consumer's receipts come out of order
        for (a, off), (b, _) in zip(edges, edges[1:]):
            done = max(done, off)
            for run in arrival_runs([t for t in ts if a < t < b]):
                took = run[-1] - run[0]
                if took < gap - SNAPSHOT_BAND_S * 1000:
                    continue
                span = [(run[0], run[-1])]
                if any(overlap(ivs, span) >= gap - SNAPSHOT_BAND_S * 1000 for ivs in held.get(q, {}).values()):
                    # pinned at the message after the highest one received, or (nothing received yet) at
                    # the queue's first message
                    pinned = (q, done + 1 if done >= 0 else first_offset[q], round(took / 1000))
                    (starved if took >= gap + SNAPSHOT_BAND_S * 1000 else starved_near).append(pinned)
                elif took >= gap and q not in orphaned:
                    orphaned.append(q)
    # double-owned: two processes' own process-queue tables held the queue at once for >= the threshold
    double = []
    for q, by_pid in held.items():
        pids = sorted(by_pid)
        if any(overlap(by_pid[p1], by_pid[p2]) >= gap for i, p1 in enumerate(pids) for p2 in pids[i + 1:]):
            double.append(q)
    slow = []
    for r in rows:
        if r["ev"] == "slow_taken" and r.get("name") in names:
            fin = next((f for f in rows if f["ev"] == "slow_finished" and f.get("msg_id") == r["msg_id"]), None)
            took = ((fin["ts"] if fin else w1) - r["ts"]) / 1000
            if took >= MIN_OVERLAP_S:
                slow.append(((r["topic"], r["broker"], r["queue"]), r["offset"], round(took)))
    if case.master_down:
        slow += master_down_loops(case, rows)
    slow += starved
    broadcast = any(cl.broadcast for cl in case.clients)
    out = {"orphaned": [] if broadcast else sorted(orphaned), "double": [] if broadcast else sorted(set(double)),
           "stuck": slow, "stuck_near": [] if broadcast else starved_near, "window_s": round((w1 - w0) / 1000)}
    if case.leave:
        out["leave"] = leave_truth(case, rows)
    if case.producer.get("hot-key"):
        out["hot"] = hot_truth(case, sent)
    return out


def cases_in(rows: list[dict]) -> list[C.Case]:
    """The cases whose clients wrote truth records on this day (a day collected before a case was added
    has none of its groups)."""
    names = {r.get("name") for r in rows}
    return [c for c in C.CASES if any(cl.name in names for cl in c.clients)]


def arrival_runs(ts: list[int]) -> list[list[int]]:
    """Send times cut where two consecutive sends are more than ARRIVAL_GAP_S apart."""
    runs: list[list[int]] = []
    for t in ts:
        if runs and t - runs[-1][-1] <= ARRIVAL_GAP_S * 1000:
            runs[-1].append(t)
        else:
            runs.append([t])
    return runs


def overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """The longest single stretch two interval lists share, in ms."""
    return max([min(x1, y1) - max(x0, y0) for x0, x1 in a for y0, y1 in b] + [0])


def master_down_loops(case: C.Case, rows: list[dict]) -> list[tuple[tuple, int, int]]:
    """While broker-b has no master a failed message can be sent back nowhere (its retry topic lives on broker-b
    only): it stays in the process queue and is retried locally, so each queue whose messages the client
    received (and failed) during the outage is pinned at the smallest such offset."""
    names = {cl.name for cl in case.clients}
    k = next((r["ts"] for r in rows if r["ev"] == "master_killed"), None)
    u = next((r["ts"] for r in rows if r["ev"] == "master_restarted"), None)
    if k is None:
        return []
    u = u or max(r["ts"] for r in rows)
    pinned: dict[tuple, int] = {}
    # a retry message reports its original topic with the %RETRY% queue's id and offset: tell it by the
    # receipt just before the failure (older truth files have no retry_topic on "fail" lines)
    receipts: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r["ev"] == "recv" and r.get("name") in names:
            receipts[(r["pid"], r["msg_id"], r["offset"])].append(r)
    for r in rows:
        if r["ev"] == "fail" and r.get("name") in names and k <= r["ts"] <= u:
            before = [x for x in receipts.get((r["pid"], r["msg_id"], r["offset"]), []) if x["ts"] <= r["ts"]]
            retry = r.get("retry_topic") or (before and before[-1].get("retry_topic"))
            topic = f"%RETRY%{case.group}" if retry else r["topic"]
            q = (topic, r["broker"], r["queue"])
            pinned[q] = min(r["offset"], pinned.get(q, r["offset"]))
    return [(q, off, round((u - k) / 1000)) for q, off in sorted(pinned.items())]


def held_spans(rows: list[dict], names: set[str], w0: int, w1: int) -> dict[tuple, dict[int, list[tuple[int, int]]]]:
    """Per queue and pid, the intervals the client's own process-queue table held it ('owned' lines)."""
    out: dict[tuple, dict[int, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    by_pid: dict[int, list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("name") in names and r["ev"] in ("owned", "stopping"):
            by_pid[r["pid"]].append(r)
    for pid, evs in by_pid.items():
        evs.sort(key=lambda r: r["ts"])
        for i, e in enumerate(evs):
            if e["ev"] != "owned":
                continue
            end = evs[i + 1]["ts"] if i + 1 < len(evs) else w1
            a, b = max(e["ts"], w0), min(end, w1)
            if b <= a:
                continue
            for q in filter(None, e["queues"].split(" ")):
                t, br, qid = q.split("|")
                out[(t, br, int(qid))][pid].append((a, b))
    return out


def holders_at(rows: list[dict], names: set[str], ts: int) -> dict[tuple, set[str]]:
    last: dict[str, dict] = {}
    for r in sorted(rows, key=lambda r: r["ts"]):
        if r["ts"] > ts:
            break
        if r.get("name") in names and r["ev"] == "owned":
            last[r["name"]] = r
        if r.get("name") in names and r["ev"] == "stopping":
            last.pop(r["name"], None)
    out: dict[tuple, set[str]] = defaultdict(set)
    for name, r in last.items():
        for q in filter(None, r["queues"].split(" ")):
            t, br, qid = q.split("|")
            if not t.startswith("%RETRY%"):
                out[(t, br, int(qid))].add(name)
    return out


def leave_truth(case: C.Case, rows: list[dict]) -> dict:
    """Queues whose holder changed between just before the leave and 40 s after (clients' own tables)."""
    names = {cl.name for cl in case.clients}
    assert case.leave is not None
    lv = next((r for r in rows if r["ev"] == "leave" and r.get("name") in names), None)
    if lv is None:
        return {"error": "no leave recorded"}
    before = holders_at(rows, names, lv["ts"] - 1000)
    after = holders_at(rows, names, lv["ts"] + 40_000)
    moved = sorted(q for q in set(before) | set(after) if before.get(q) != after.get(q))
    return {"ts": lv["ts"], "moved": len(moved), "clients_before": len(members_at(rows, names, lv["ts"] - 1000)),
            "clients_after": len(members_at(rows, names, lv["ts"] + 40_000))}


def members_at(rows: list[dict], names: set[str], ts: int) -> set[str]:
    """Clients started and not yet stopping at ts (a member may hold no queue under CONSISTENT_HASH)."""
    up = {r["name"] for r in rows if r.get("name") in names and r["ev"] == "start" and r["ts"] <= ts}
    return up - {r["name"] for r in rows if r.get("name") in names and r["ev"] == "stopping" and r["ts"] <= ts}


def hot_truth(case: C.Case, sent: list[dict], window_s: int = 120, factor: float = 2.0) -> dict:
    """Queues that took >= factor x the even share (1 / the topic's queues) of the topic's sends over some
    window_s-long stretch (the producer's own send results; the queue a hash key lands on changes while a
    broker has no master, since the selector only sees the publishable queues)."""
    queues = {(r["topic"], r["broker"], r["queue"]) for r in sent}
    ts = sorted(r["ts"] for r in sent)
    hot = set()
    for start in range(ts[0], ts[-1] - window_s * 1000 + 1, 10_000):
        win = [r for r in sent if start <= r["ts"] < start + window_s * 1000]
        per: dict[tuple, int] = defaultdict(int)
        for r in win:
            per[(r["topic"], r["broker"], r["queue"])] += 1
        for q, n in per.items():
            if n >= factor * len(win) / len(queues):
                hot.add(f"{q[0]}/{q[1]}/{q[2]}")
    return {"queues": sorted(hot), "of": len(queues)}


def sql(lake: Path, query: str) -> list[dict]:
    r = subprocess.run([sys.executable, "-m", "jobs", "sql", query, "--lake", str(lake), "--format", "json"],
                       capture_output=True, text=True, cwd=REPO)
    if r.returncode != 0:
        raise RuntimeError(f"rocketlens sql failed: {r.stderr.strip()[-400:]}")
    out = r.stdout.strip()
    if not out:
        return []
    if out.startswith("["):
        return json.loads(out)
    return [json.loads(ln) for ln in out.splitlines() if ln.strip()]


def qs(qs_: list[tuple]) -> str:
    by: dict[tuple, list[int]] = defaultdict(list)
    for t, b, q in qs_:
        by[(t, b)].append(q)
    return " ".join(f"{t}/{b}/{','.join(map(str, sorted(v)))}" for (t, b), v in sorted(by.items())) or "-"


# The gold rows the comparison reads: name -> (gold table, select expressions, filter or None).
# INFO episodes (STALE_OWNER, REBALANCE_GAP) leave a group OK: listed, not compared with the truth.
_G = "`group` AS g"
_QUEUE = [_G, "topic", "broker_name", "queue_id", "root_cause"]
GOLD_QUERIES: dict[str, tuple[str, list[str], str | None]] = {
    "orphaned": ("orphaned_queues", [*_QUEUE, "severity"], None),
    "double": ("double_owned_queues", [*_QUEUE, "severity"], None),
    "stuck": ("stuck_queues", [*_QUEUE, "blocking_offset"], "root_cause <> 'NO_OWNER'"),
    "health": ("group_health", [_G, "status", "findings"], None),
    "rebalance": ("rebalance_events", [_G, "topic", "CAST(ts AS STRING) AS ts", "trigger",
                                       "clients_before", "clients_after", "queues_moved"], None),
    "producer": ("incidents", [_G, "cause", "queues"], "kind = 'PRODUCER'"),
}


def read_gold_with_cli(lake: Path) -> dict[str, list[dict]]:
    """``GOLD_QUERIES`` through ``rocketlens sql`` (the fast-tier test reads them with its engine)."""
    out = {}
    for name, (table, columns, where) in GOLD_QUERIES.items():
        out[name] = sql(lake, f"SELECT {', '.join(columns)} FROM gold.{table}"
                              + (f" WHERE {where}" if where else ""))
    return out


def verdicts(rows: list[dict], gold: dict[str, list[dict]]) -> list[dict]:
    """Per case of ``cases.CASES``: the truth derived from the clients' records (``rows``), what
    rocketlens found (``gold``: ``GOLD_QUERIES`` rows), ``ok`` and the one-line ``line``."""
    orph_all, dbl_all = gold["orphaned"], gold["double"]
    orph = [x for x in orph_all if x["severity"] != "INFO"]
    dbl = [x for x in dbl_all if x["severity"] != "INFO"]
    stk = gold["stuck"]
    health = {h["g"]: h for h in gold["health"]}
    rebal, hot = gold["rebalance"], gold["producer"]
    report = []
    for case in cases_in(rows):
        exp = expected(case, rows)
        got_o = sorted({(x["topic"], x["broker_name"], x["queue_id"]) for x in orph if x["g"] == case.group})
        got_d = sorted({(x["topic"], x["broker_name"], x["queue_id"]) for x in dbl if x["g"] == case.group})
        got_s = sorted({((x["topic"], x["broker_name"], x["queue_id"]), x["blocking_offset"])
                        for x in stk if x["g"] == case.group})
        causes = sorted({x["root_cause"] for x in orph + dbl + stk if x["g"] == case.group})
        info = sorted({f"{x['root_cause']}:{x['topic']}/{x['broker_name']}/{x['queue_id']}"
                       for x in orph_all + dbl_all if x["g"] == case.group and x["severity"] == "INFO"})
        h = health.get(case.group, {})
        status = h.get("status", "absent")
        exp_s = sorted({(q, off) for q, off, _ in exp.get("stuck", [])})
        near = {(q, off) for q, off, _ in exp.get("stuck_near", [])}
        ok = (exp.get("orphaned") == got_o and exp.get("double") == got_d
              and set(exp_s) <= set(got_s) <= set(exp_s) | near
              and (not case.healthy or status == "OK"))
        extra = ""
        if case.cause:  # every WARN/CRITICAL queue finding names the cause the harness created (NO_OWNER: orphaned)
            ok = ok and bool(causes) and set(causes) <= {case.cause, "NO_OWNER"}
        if "leave" in exp:
            lv = exp["leave"]
            evs = [e for e in rebal if e["g"] == case.group and not e["topic"].startswith("%RETRY%")
                   and e["trigger"] == "CLIENT_LEFT"]
            match = [e for e in evs if e["queues_moved"] == lv.get("moved")]
            ok = ok and (bool(match) or (lv.get("moved") == 0 and not any(e["queues_moved"] for e in evs)))
            extra += (f"; leave truth moved={lv.get('moved')} clients {lv.get('clients_before')}->"
                      f"{lv.get('clients_after')} found CLIENT_LEFT="
                      f"{[(e['queues_moved'], e['clients_before'], e['clients_after']) for e in evs] or '-'}")
        if "hot" in exp:
            found = sorted({q for x in hot if x["g"] == case.group and x["cause"] == "HOT_QUEUE" for q in x["queues"]})
            ok = ok and found == exp["hot"]["queues"]
            extra += f"; hot queues truth={exp['hot']['queues']} found={found or '-'}"
        line = (f"{'PASS' if ok else 'FAIL'} {case.name:<20} seed {case.seed:<7} status={status:<6} "
                f"orphaned truth={qs(exp.get('orphaned', []))} found={qs(got_o)}; "
                f"double-owned truth={qs(exp.get('double', []))} found={qs(got_d)}; "
                f"stuck truth={[(qs([q]), o) for q, o in exp_s] or '-'}"
                + (f" (or not: {[(qs([q]), o) for q, o in sorted(near)]})" if near else "")
                + f" found={[(qs([q]), o) for q, o in got_s] or '-'}"
                f"; causes={','.join(causes) or '-'}{extra}" + (f"; INFO {' '.join(info)}" if info else ""))
        report.append({"case": case.name, "ok": ok, "line": line, "expected": exp, "status": status,
                       "findings": h.get("findings"), "orphaned": got_o, "double": got_d, "stuck": got_s,
                       "causes": causes})
    return report


# The controlled drain (issue 60): forecast settings for a few minutes of traffic. A queue is clear at
# 5 messages of lag; rates over the last minute before the cut.
FORECAST_CLEARED_LAG = 5
FORECAST_CONF = f"""\
[forecast]
cleared_lag = {FORECAST_CLEARED_LAG}
window_minutes = 1
"""
FORECAST_TOLERANCE = 0.15   # |predicted - actual| / (actual - as_of), the acceptance


def drain_truth(case: C.Case, rows: list[dict], cleared_lag: int) -> dict:
    """When the drain case's backlog really cleared, from its own records: per queue, the moment the
    consumer finished the message at (the last offset sent − ``cleared_lag``), i.e. when the queue's
    lag fell to ``cleared_lag`` (its receipt + the listener's ``consume_ms``); the group × topic
    clears with its last queue. ``cut_ms``: traffic start (first send) + ``case.forecast_at``."""
    assert case.forecast_at is not None
    names = {cl.name for cl in case.clients}
    sent = [r for r in rows if r["ev"] == "sent" and r["topic"] in case.topics]
    last: dict[tuple, int] = {}
    for r in sent:
        q = (r["topic"], r["broker"], r["queue"])
        last[q] = max(last.get(q, -1), r["offset"])
    recv = {(r["topic"], r["broker"], r["queue"], r["offset"]): r["ts"] for r in rows
            if r["ev"] == "recv" and r.get("name") in names and not r.get("retry_topic")}
    consume_ms = max(cl.consume_ms for cl in case.clients)
    cleared = {q: recv.get((*q, off - cleared_lag)) for q, off in last.items()}
    missing = sorted(q for q, ts in cleared.items() if ts is None)
    return {"cut_ms": min(r["ts"] for r in sent) + case.forecast_at * 1000, "missing": missing,
            "cleared_ms": None if missing else max(cleared.values()) + consume_ms}


def landing_until(landing: Path, group: str, cut_ms: int, out: Path) -> int:
    """A copy of ``group``'s offsets, connections and running-info files of ``landing`` collected at or
    before ``cut_ms`` (their round's stamp, ``YYYYMMDDTHHMMSSZ``), as the collector had written them by
    then (no client logs: the forecast reads offsets). Returns the files copied."""
    n = 0
    for f in landing.rglob("*"):
        if not f.is_file() or f"group={group}" not in f.parts or f.parts[len(landing.parts)] == "client_logs":
            continue
        stamp = datetime.strptime(f.name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
        if stamp.timestamp() * 1000 <= cut_ms:
            dest = out / f.relative_to(landing)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
            n += 1
    return n


def _utc_ms(text: str) -> float:
    """A UTC timestamp as ``rocketlens sql`` prints it, in epoch milliseconds."""
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000


def hms(ms: float) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%H:%M:%S")


def forecast_verdict(root: Path, day: str, case: C.Case, rows: list[dict]) -> dict:
    """``rocketlens run`` on the drain case's landing up to its cut, with ``CONF`` + ``FORECAST_CONF``; its
    gold.backlog_forecast row for the group × topic against ``drain_truth``."""
    truth = drain_truth(case, rows, FORECAST_CLEARED_LAG)
    head = f"FAIL {case.name:<20} seed {case.seed:<7} "
    if truth["missing"]:
        return {"case": case.name, "ok": False,
                "line": head + f"no receipt of the cleared offset on {truth['missing']}"}
    base = root / "forecast"
    shutil.rmtree(base, ignore_errors=True)
    files = landing_until(root / "landing", case.group, truth["cut_ms"], base / "landing")
    conf = base / "forecast.toml"
    conf.write_text(CONF + FORECAST_CONF)
    r = subprocess.run([sys.executable, "-m", "jobs", "run", "--date", day, "--landing", str(base / "landing"),
                        "--lake", str(base / "lake"), "--conf", str(conf)], capture_output=True, text=True, cwd=REPO)
    (base / "run.log").write_text(r.stdout + r.stderr)
    if r.returncode not in (0, 3):
        return {"case": case.name, "ok": False, "line": head + f"forecast run failed: {r.stderr.strip()[-300:]}"}
    got = sql(base / "lake", "SELECT CAST(as_of AS STRING) AS as_of, CAST(clears_at AS STRING) AS clears_at, "
                             "backlog, drain_rate, trend, deciding_queue, no_clear_reason FROM gold.backlog_forecast "
                             f"WHERE `group` = '{case.group}' AND broker_name IS NULL")
    if len(got) != 1 or got[0]["clears_at"] is None:
        return {"case": case.name, "ok": False, "line": head + f"forecast from {files} files: {got}"}
    f = got[0]
    as_of, clears = _utc_ms(f["as_of"]), _utc_ms(f["clears_at"])
    actual = truth["cleared_ms"]
    error = (clears - actual) / (actual - as_of)
    ok = abs(error) <= FORECAST_TOLERANCE
    line = (f"{'PASS' if ok else 'FAIL'} {case.name:<20} seed {case.seed:<7} forecast as of {hms(as_of)} "
            f"(snapshots up to {hms(truth['cut_ms'])}, {files} files): backlog {f['backlog']}, drain "
            f"{f['drain_rate']:.2f}/s, {f['trend']}, clears {hms(clears)}; the consumer's own records: cleared "
            f"{hms(actual)}; error {error:+.1%} of the {round((actual - as_of) / 1000)} s ahead "
            f"(tolerance ±{FORECAST_TOLERANCE:.0%}); deciding queue {f['deciding_queue']}")
    return {"case": case.name, "ok": ok, "line": line, "error": error, "forecast": f,
            "actual": hms(actual)}


def run_and_compare(root: Path, day: str) -> int:
    lake = root / "lake"
    conf = root / "realcluster.toml"
    conf.write_text(CONF)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "jobs", "run", "--date", day, "--landing", str(root / "landing"),
                        "--lake", str(lake), "--conf", str(conf)], capture_output=True, text=True, cwd=REPO)
    (root / "run.log").write_text(r.stdout + r.stderr)
    log(f"rocketlens run exit {r.returncode} in {time.monotonic() - t0:.0f}s (log {root / 'run.log'})")
    if r.returncode not in (0, 3):
        print(f"realcluster: rocketlens run failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}", flush=True)
        return 1
    rows = load_truth(root)
    report = verdicts(rows, read_gold_with_cli(lake))
    report += [forecast_verdict(root, day, c, rows) for c in cases_in(rows) if c.forecast_at is not None]
    for v in report:
        print(v["line"], flush=True)
    (root / "compare.json").write_text(json.dumps([{k: v for k, v in x.items() if k != "line"} for x in report],
                                                  indent=1, default=str))
    return 0 if all(v["ok"] for v in report) else 1


if __name__ == "__main__":  # python -m tests.realcluster.compare ROOT DAY: compare again without a cluster
    sys.exit(run_and_compare(Path(sys.argv[1]), sys.argv[2]))
