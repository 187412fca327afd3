"""``python -m tests.reliability.replace_day_loop TABLE_DIR DAY N START_FILE``: replace one day
of a shared Delta table N times through ``lake.write_day``, starting when START_FILE appears so
two such processes overlap (test_concurrency.py)."""

import datetime as dt
import sys
import time
from pathlib import Path

from jobs import lake
from jobs.engine import open_session


def main(lake_dir: str, day: str, times: int, start_file: str) -> None:
    run_date = dt.date.fromisoformat(day)
    with open_session("sail") as spark:
        frames = [spark.createDataFrame([(run_date, f"{day}#{i}")], "date date, v string")
                  for i in range(times)]
        while not Path(start_file).exists():
            time.sleep(0.01)
        for df in frames:
            lake.write_day(spark, df, lake_dir, "gold", "t", run_date)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
