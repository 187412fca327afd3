"""``rocketlens maintain`` (jobs/maintain.py): OPTIMIZE and VACUUM every lake table on classic
Spark + Delta — rows unchanged, files compacted, unreferenced files deleted; on an engine without
them (Sail 0.7.2) one line saying to use ``--engine spark``."""

from __future__ import annotations

import datetime as dt

import pytest

from jobs import lake
from jobs.maintain import MaintenanceUnsupported, maintain_lake
from tests.conftest import cli_engine_args, run_cli

D1, D2 = dt.date(2025, 1, 1), dt.date(2025, 1, 2)


def day_frame(spark, day, tag, n=30):
    return spark.createDataFrame([(day, f"{tag}#{i}") for i in range(n)],
                                 "date date, v string").repartition(3)


def data_files(table):
    return sorted(p for p in table.rglob("*.parquet") if "_delta_log" not in p.parts)


def test_maintain_compacts_and_vacuums_every_table_keeping_its_rows(spark, engine_name, tmp_path):
    for tag in ("a", "b", "c"):  # each replace of D1 leaves the previous files unreferenced
        lake.write_day(spark, day_frame(spark, D1, tag), tmp_path, "gold", "t", D1)
    lake.write_day(spark, day_frame(spark, D2, "d"), tmp_path, "gold", "t", D2)
    lake.write_day(spark, day_frame(spark, D2, "e"), tmp_path, "silver", "u", D2)
    before = {t: sorted(r.v for r in lake.read_table(spark, tmp_path, *t.split(".")).collect())
              for t in ("gold.t", "silver.u")}
    if engine_name == "sail":  # Sail 0.7.2 has neither statement: refused before any change
        with pytest.raises(MaintenanceUnsupported, match=r"run 'rocketlens maintain --engine spark'"):
            maintain_lake(spark, tmp_path, retain_hours=0)
        return
    on_disk = len(data_files(tmp_path / "gold" / "t"))
    done = {m.table: m for m in maintain_lake(spark, tmp_path, retain_hours=0)}
    assert set(done) == {"gold.t", "silver.u"}
    for table, rows in before.items():
        assert sorted(r.v for r in lake.read_table(spark, tmp_path, *table.split(".")).collect()) == rows
    # one file per day partition after OPTIMIZE; VACUUM left only those on disk
    assert done["gold.t"].files_before > done["gold.t"].files_after == 2
    assert on_disk > len(data_files(tmp_path / "gold" / "t")) == 2
    assert len(data_files(tmp_path / "silver" / "u")) == done["silver.u"].files_after == 1


@pytest.mark.classic_cli
def test_the_maintain_command_on_the_pass_engine(spark, engine_name, tmp_path):
    """``rocketlens maintain`` as users run it: on Sail (the CLI's default) exit 2 and one line
    saying what to do, nothing changed; with ``--engine spark`` (the classic pass) exit 0 and a
    line per table."""
    for tag in ("a", "b"):
        lake.write_day(spark, day_frame(spark, D1, tag), tmp_path, "gold", "t", D1)
    files = data_files(tmp_path / "gold" / "t")
    proc = run_cli("maintain", "--lake", str(tmp_path), "--retain-hours", "0", *cli_engine_args(),
                   check=False)
    if engine_name == "sail":
        assert proc.returncode == 2, proc.stderr[-2000:]
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("rocketlens: this engine cannot OPTIMIZE or VACUUM Delta tables ("), last
        assert "run 'rocketlens maintain --engine spark'" in last
        assert data_files(tmp_path / "gold" / "t") == files
    else:
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "gold.t" in proc.stdout and len(data_files(tmp_path / "gold" / "t")) == 1
