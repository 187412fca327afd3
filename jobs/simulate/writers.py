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

    def __init__(self, landing: Path, clock: Clock, gzip_level: int = 6) -> None:
        self.landing = landing
        self.clock = clock
        self.gzip_level = gzip_level
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
