"""Progress of a run on stderr: a line per step for people, or JSON Lines for log collectors.

``--log-format json`` (``ROCKETLENS_LOG_FORMAT=json``) prints one JSON object per event with the
``run_id``, so a scheduler's log search can follow one run: ``{"ts", "level", "run_id", "date",
"event", "message", "elapsed", …}`` plus the event's own fields (``stage``, ``table``, ``rows``,
``seconds`` after each table write).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import threading
import time

LOG_FORMATS = ("text", "json")


class RunLog:
    """Callable as ``run_day``'s ``progress``: ``log(message, **fields)``."""

    def __init__(self, run_id: str, run_date: dt.date, fmt: str = "text", stream=None) -> None:
        self.run_id, self.run_date, self.fmt = run_id, run_date, fmt
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        # gold's batches log from two threads at once (engine.batch_threads): one write per line,
        # under a lock; print's separate write of the line end let another thread's event or
        # warning land inside the line, which was then no JSON
        self._lock = threading.Lock()

    def __call__(self, message: str, level: str = "INFO", **fields) -> None:
        elapsed = round(time.monotonic() - self.started, 3)
        if self.fmt == "json":
            record = {"ts": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
                      .replace("+00:00", "Z"), "level": level, "run_id": self.run_id,
                      "date": self.run_date.isoformat(), "event": message.split(" ")[0],
                      "message": message, "elapsed": elapsed, **fields}
            line = json.dumps(record, default=str)
        else:
            detail = "".join(f"  {k}={fields[k]}" for k in ("rows", "seconds") if k in fields)
            line = f"  [{elapsed:7.1f}s] {message}{detail}"
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()
