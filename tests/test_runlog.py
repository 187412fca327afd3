"""Run progress on stderr (``jobs.runlog``)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# events from four threads, with warnings (pyspark warns about windows while gold's other
# batch logs) written to the same stderr
_THREADS = """
import datetime as dt
import warnings
from concurrent.futures import ThreadPoolExecutor
from jobs.runlog import RunLog

log = RunLog("run-1", dt.date(2025, 11, 21), "json")
warnings.simplefilter("always")

def burst(thread):
    for n in range(2000):
        log(f"computing gold.t{thread}", table=f"gold.t{thread}", batch=n)
        if n % 7 == 0:
            warnings.warn(f"WindowExpression {n}", UserWarning)

with ThreadPoolExecutor(max_workers=4) as pool:
    list(pool.map(burst, range(4)))
"""


def test_json_events_logged_from_several_threads_stay_one_object_per_line():
    """gold's batches run in threads (``engine.batch_threads``) and log as they go: an event
    and its line end written apart let another thread's warning land between them, and the
    line was no JSON any more (seen in the batched-day test)."""
    proc = subprocess.run([sys.executable, "-c", _THREADS], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    assert {(e["table"], e["batch"]) for e in events} == {
        (f"gold.t{t}", n) for t in range(4) for n in range(2000)}
    assert len(events) == 8000
