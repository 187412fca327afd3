"""Delta table maintenance of a lake: ``OPTIMIZE`` then ``VACUUM`` every table (docs/contract.md §1,
``rocketlens maintain``; docs/operations.md, "Table maintenance").

Input: a lake root and a retention in hours. Output: per table, its files compacted (each nightly
run replaces a day by DELETE + append, leaving the day's old files unreferenced and its new ones
small) and the files no version newer than ``retain_hours`` references deleted. Rows never change;
time travel to versions older than the retention stops working (Delta's rule).

The rule: ``VACUUM`` below Delta's default of 168 hours (7 days) needs Delta's safety check off
(``spark.databricks.delta.retentionDurationCheck.enabled``), which this sets for the session
only then: a reader or a run still using an older version would then lose its files, so a short
retention is for a lake no run is writing at that moment.

Sail 0.7.2 has neither statement: the first refusal becomes :class:`MaintenanceUnsupported`,
one line saying to run it with ``--engine spark`` (no engine is named in the code: the engine's
answer decides).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from jobs import lake

DEFAULT_RETAIN_HOURS = 168  # Delta's own default retention (delta.deletedFileRetentionDuration)
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


class MaintenanceUnsupported(Exception):
    """The engine refused OPTIMIZE or VACUUM (Sail 0.7.2 has neither)."""


@dataclass(frozen=True)
class TableMaintenance:
    table: str  # layer.name
    files_before: int  # live data files before OPTIMIZE
    files_after: int  # live data files after OPTIMIZE


def maintain_lake(spark: SparkSession, lake_dir: str | Path,
                  retain_hours: int = DEFAULT_RETAIN_HOURS) -> list[TableMaintenance]:
    """``OPTIMIZE`` and ``VACUUM … RETAIN retain_hours HOURS`` every lake table (module docstring)."""
    if retain_hours < 0:
        raise ValueError("retain_hours must be at least 0")
    done = []
    for index, (layer, name, path) in enumerate(lake.list_tables(Path(lake_dir).resolve())):
        target = f"delta.`{path}`"
        try:
            before = _live_files(spark, target)
            spark.sql(f"OPTIMIZE {target}").collect()
            if retain_hours < DEFAULT_RETAIN_HOURS:
                spark.conf.set(RETENTION_CHECK, "false")
            spark.sql(f"VACUUM {target} RETAIN {retain_hours} HOURS").collect()
        except Exception as exc:
            if index == 0:  # the engine cannot, rather than this table being broken
                first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
                raise MaintenanceUnsupported(
                    f"this engine cannot OPTIMIZE or VACUUM Delta tables ({first}): run "
                    "'rocketlens maintain --engine spark' (classic Spark + Delta), see "
                    "docs/operations.md, Table maintenance") from exc
            raise
        done.append(TableMaintenance(f"{layer}.{name}", before, _live_files(spark, target)))
    return done


def _live_files(spark: SparkSession, target: str) -> int:
    detail = spark.sql(f"DESCRIBE DETAIL {target}").select("numFiles").first()
    return int(detail[0]) if detail is not None else 0
