"""Landing-zone files (DESIGN.md §3): layout, gzip, timestamp styles and the client-log layouts.

``<landing>/<source>/date=YYYY-MM-DD/<name>`` for offsets, connections and running_info;
``client_logs/date=D/<host>/rocketmq_client.log`` for client logs. A record goes to the folder of its
UTC day, except that the last minutes of a day land in the next day's folder (collectors flush
late), in a file of its own. Gzip members carry ``mtime=0`` and the file's own name, so the same
seed gives the same bytes.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
from pathlib import Path

DAY_MS = 86_400_000
LATE_FROM_MS = DAY_MS - 120_000  # records from 23:58 UTC are flushed into the next day's folder
GMT8_MS = 8 * 3_600_000  # the client's logback time zone (facts §2.3, DESIGN.md §3.4)


class Clock:
    """Epoch-ms and text renderings of simulation times (ms after midnight of the simulated day)."""

    def __init__(self, day: dt.date) -> None:
        self.day = day
        self.day_ms = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp() * 1000)
        self._seconds: dict[tuple[int, int, str], str] = {}

    def epoch(self, t: int) -> int:
        return self.day_ms + t

    def _second(self, epoch_s: int, shift_ms: int, fmt: str) -> str:
        key = (epoch_s, shift_ms, fmt)  # GMT+8 ISO and GMT+8 log text share a second
        text = self._seconds.get(key)
        if text is None:
            moment = dt.datetime.fromtimestamp(epoch_s + shift_ms // 1000, tz=dt.timezone.utc)
            text = moment.strftime(fmt)
            if len(self._seconds) > 200_000:
                self._seconds.clear()
            self._seconds[key] = text
        return text

    def iso_z(self, t: int) -> str:
        e = self.day_ms + t
        return f"{self._second(e // 1000, 0, '%Y-%m-%dT%H:%M:%S')}.{e % 1000:03d}Z"

    def iso_gmt8(self, t: int) -> str:
        e = self.day_ms + t
        return f"{self._second(e // 1000, GMT8_MS, '%Y-%m-%dT%H:%M:%S')}.{e % 1000:03d}+08:00"

    def log_local(self, t: int, sep: str) -> str:
        """``yyyy-MM-dd HH:mm:ss<sep>SSS`` in GMT+8 (4.9 logback uses ',', 5.x '.')."""
        e = self.day_ms + t
        return f"{self._second(e // 1000, GMT8_MS, '%Y-%m-%d %H:%M:%S')}{sep}{e % 1000:03d}"

    def date_of(self, t: int) -> dt.date:
        return self.day + dt.timedelta(days=t // DAY_MS)

    def folder_date(self, t: int) -> dt.date:
        """Day folder a record of time t lands in (late records go one day further)."""
        day_index = t // DAY_MS
        if t - day_index * DAY_MS >= LATE_FROM_MS:
            day_index += 1
        return self.day + dt.timedelta(days=day_index)

    def is_late(self, t: int) -> bool:
        return t % DAY_MS >= LATE_FROM_MS


class LandingFiles:
    """Buffered, deterministic writers for every file of one simulated day."""

    def __init__(self, landing: Path, clock: Clock, gzip_level: int = 6,
                 landing_format: str = "jsonl") -> None:
        self.landing = landing
        self.clock = clock
        self.gzip_level = gzip_level
        # "mqadmin": offsets, connections and running_info as RocketMQ's own outputs
        self.native = landing_format == "mqadmin"
        self._open: dict[Path, io.BufferedWriter | gzip.GzipFile] = {}
        self._raw: dict[Path, io.BufferedWriter] = {}
        self.lines: dict[str, int] = {}

    def handle(self, path: Path):
        fh = self._open.get(path)
        if fh is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            raw = open(path, "wb", buffering=1 << 20)
            if path.suffix == ".gz":
                self._raw[path] = raw
                fh = gzip.GzipFile(filename=path.name[:-3], mode="wb", fileobj=raw, mtime=0,
                                   compresslevel=self.gzip_level)
            else:
                fh = raw
            self._open[path] = fh
        return fh

    def source_path(self, source: str, t: int, name: str) -> Path:
        folder = self.clock.folder_date(t)
        if self.clock.is_late(t):
            name = "late-00000.jsonl"
        return self.landing / source / f"date={folder.isoformat()}" / name

    def write_lines(self, source: str, t: int, name: str, lines: list[str]) -> None:
        if not lines:
            return
        if self.native and source in NATIVE_WRITERS:
            for rel, text in NATIVE_WRITERS[source]([json.loads(line) for line in lines]):
                path = self.landing / source / f"date={self.clock.folder_date(t).isoformat()}" / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            self.lines[source] = self.lines.get(source, 0) + len(lines)
            return
        self.handle(self.source_path(source, t, name)).write(("\n".join(lines) + "\n").encode())
        self.lines[source] = self.lines.get(source, 0) + len(lines)

    def log_path(self, host: str, t: int) -> Path:
        folder = self.clock.folder_date(t)
        return self.landing / "client_logs" / f"date={folder.isoformat()}" / host / "rocketmq_client.log"

    def write_log(self, host: str, t: int, lines: list[str]) -> None:
        if lines:
            self.handle(self.log_path(host, t)).write(("\n".join(lines) + "\n").encode())
            self.lines["client_logs"] = self.lines.get("client_logs", 0) + len(lines)

    def close(self) -> None:
        for path in sorted(self._open):
            self._open[path].close()
            if path in self._raw:
                self._raw[path].close()
        self._open.clear()
        self._raw.clear()


# --- client log layouts (DESIGN.md §3.4) -----------------------------------------------------------

LOGGERS = {
    "RebalanceService": "org.apache.rocketmq.client.impl.consumer.RebalanceImpl#rebalanceByTopic:{line}",
    "MQClientFactoryScheduledThread":
        "org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore#persistAll:{line}",
    "PullMessageService": "org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl#pullMessage:{line}",
    "NettyClientPublicExecutor_1":
        "org.apache.rocketmq.client.impl.ClientRemotingProcessor#notifyConsumerIdsChanged:{line}",
    "CleanExpireMsgScheduledThread_1": "org.apache.rocketmq.client.impl.consumer.ProcessQueue#cleanExpiredMsg:{line}",
    "main": "org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl#start:{line}",
}


def log_line(clock: Clock, t: int, level: str, thread: str, message: str, *, is_5x: bool, pid: int,
             line_no: int = 0) -> str:
    """One ``rocketmq_client.log`` line: 4.9 ``ts,SSS LEVEL thread - msg``; 5.x with pid and logger."""
    if is_5x:
        logger = LOGGERS.get(thread, "org.apache.rocketmq.client#run:{line}").format(line=line_no or 100)
        return f"{clock.log_local(t, '.')} {level} [{pid}] [{thread}] [{logger}] - {message}"
    return f"{clock.log_local(t, ',')} {level} {thread} - {message}"


# --- RocketMQ's own outputs (docs/landing-mqadmin.md) ----------------------------------------------
# One file per snapshot and group (and client): ``cluster=C/group=G/<UTC stamp>.txt``, the text
# mqadmin 5.x prints (rocketmq-facts.md §5.2, §6.3) and the fastjson dump of ConsumerRunningInfo
# (§0, §6.1). The simulator's records carry more than these outputs do (a connection's
# last_update_timestamp and own subscriptions, last_timestamp's milliseconds); that is dropped.

def _stamp(ts) -> str:
    if isinstance(ts, int):
        moment = dt.datetime.fromtimestamp(ts / 1000, tz=dt.timezone.utc)
    else:
        moment = dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(dt.timezone.utc)
    return moment.strftime("%Y%m%dT%H%M%S") + f"{moment.microsecond // 1000:03d}Z"


def _by(records: list[dict], *keys: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in records:
        out.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    return out


def consumer_progress_text(records: list[dict]) -> str:
    """``mqadmin consumerProgress -g G -s true`` as 5.x prints it, rows sorted by MessageQueue."""
    head = ("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP",
            "#Diff", "#Inflight", "#LastTime")
    out = ["%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s %-20s%s" % head]
    diff_total = inflight_total = 0
    for r in sorted(records, key=lambda r: (r["topic"], r["broker_name"], r["queue_id"])):
        diff = r["broker_offset"] - r["consumer_offset"]
        inflight = r.get("pull_offset", 0) - r["consumer_offset"]
        diff_total += diff
        inflight_total += inflight
        last = r.get("last_timestamp") or 0
        last_text = "N/A" if not last else dt.datetime.fromtimestamp(
            last / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        out.append("%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d %-20d %s" % (
            r["topic"], r["broker_name"], r["queue_id"], r["broker_offset"], r["consumer_offset"],
            r.get("client_ip") or "N/A", diff, inflight, last_text))
    out += ["", "Consume TPS: 0.00", f"Consume Diff Total: {diff_total}",
            f"Consume Inflight Total: {inflight_total}"]
    return "\n".join(out) + "\n"


def consumer_connection_text(records: list[dict]) -> str:
    """``mqadmin consumerConnection -g G -b <broker>`` as it prints it."""
    first = records[0]
    out = ["%-36s %-22s %-10s %s" % ("#ClientId", "#ClientAddr", "#Language", "#Version")]
    out += ["%-36s %-22s %-10s %s" % (r["client_id"], r["client_addr"], r.get("language", "JAVA"),
                                      r.get("version", "")) for r in records]
    out += ["", "Below is subscription:", "%-20s %s" % ("#Topic", "#SubExpression")]
    topics = sorted({s["topic"]: s for r in records for s in r.get("subscriptions") or []}.values(),
                    key=lambda s: s["topic"])
    out += ["%-20s %s" % (s["topic"], s.get("sub_string", "*")) for s in topics]
    out += ["", f"ConsumeType: {first.get('consume_type')}",
            f"MessageModel: {first.get('message_model')}",
            f"ConsumeFromWhere: {first.get('consume_from_where')}"]
    return "\n".join(out) + "\n"


def _fj(value) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


_PQ = (("cachedMsgCount", "cached_msg_count"), ("cachedMsgMaxOffset", "cached_msg_max_offset"),
       ("cachedMsgMinOffset", "cached_msg_min_offset"), ("cachedMsgSizeInMiB", "cached_msg_size_mib"),
       ("commitOffset", "commit_offset"), ("droped", "dropped"),
       ("lastConsumeTimestamp", "last_consume_timestamp"), ("lastLockTimestamp", "last_lock_timestamp"),
       ("lastPullTimestamp", "last_pull_timestamp"), ("locked", "locked"),
       ("transactionMsgCount", "transaction_msg_count"),
       ("transactionMsgMaxOffset", "transaction_msg_max_offset"),
       ("transactionMsgMinOffset", "transaction_msg_min_offset"), ("tryUnlockTimes", "try_unlock_times"))
_CS = (("consumeFailedMsgs", "consume_failed_msgs"), ("consumeFailedTPS", "consume_failed_tps"),
       ("consumeOKTPS", "consume_ok_tps"), ("consumeRT", "consume_rt"), ("pullRT", "pull_rt"),
       ("pullTPS", "pull_tps"))


def running_info_fastjson(r: dict) -> str:
    """A ConsumerRunningInfo as fastjson serialises it: fields sorted, ``mqTable`` keyed by
    MessageQueue objects, ``droped``."""
    mq = ",".join(
        _fj({"brokerName": q["broker_name"], "queueId": q["queue_id"], "topic": q["topic"]}) + ":"
        + _fj({theirs: q[ours] for theirs, ours in _PQ}) for q in r["mq_table"])
    subs = [{"classFilterMode": False, "codeSet": [], "expressionType": s.get("expression_type"),
             "subString": s.get("sub_string"), "subVersion": s.get("sub_version"),
             "tagsSet": s.get("tags") or [], "topic": s["topic"]} for s in r.get("subscriptions") or []]
    status = {s["topic"]: {theirs: s[ours] for theirs, ours in _CS} for s in r.get("status_table") or []}
    return (f'{{"mqPopTable":{{}},"mqTable":{{{mq}}},"properties":{_fj(r["properties"])},'
            f'"statusTable":{_fj(status)},"subscriptionSet":{_fj(subs)},"userConsumerInfo":{{}}}}')


def _offsets_files(records: list[dict]):
    for (cluster, group), rows in sorted(_by(records, "cluster", "group").items()):
        yield (f"cluster={cluster}/group={group}/{_stamp(rows[0]['ts'])}.txt",
               consumer_progress_text(rows))


def _connections_files(records: list[dict]):
    for (cluster, group, broker), rows in sorted(
            _by(records, "cluster", "group", "broker_name").items(), key=str):
        yield (f"cluster={cluster}/group={group}/broker_name={broker}/{_stamp(rows[0]['ts'])}.txt",
               consumer_connection_text(rows))


def _running_info_files(records: list[dict]):
    for r in records:
        yield (f"cluster={r['cluster']}/group={r['group']}/client={r['client_id']}/{_stamp(r['ts'])}.json",
               running_info_fastjson(r) + "\n")


NATIVE_WRITERS = {"offsets": _offsets_files, "connections": _connections_files,
                  "running_info": _running_info_files}
