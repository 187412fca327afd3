"""``rocketlens migrate`` (jobs/migrate.py): a lake an older release wrote — a table without a column
today's release writes — is brought to today's schema without losing a row, on the pass's engine;
then a day appends into it. And classic Delta's own schema evolution, for comparison."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

from jobs import lake
from jobs.migrate import BACKUP_DIR, MigrationRefused, migrate_lake, today_schemas

DAY = dt.date(2025, 11, 21)
TABLE, NEWEST = "bronze.connections", "broker_addr"  # broker_addr: added by a past release


def value(field, i: int):
    """A value of ``field``'s type for row ``i``: ``date`` = DAY, strings ``<column>#<i>``,
    numbers ``i``, empty arrays and maps, nested structs filled the same way."""
    t = field.dataType
    if isinstance(t, DateType):
        return DAY
    if isinstance(t, StringType):
        return f"{field.name}#{i}"
    if isinstance(t, BooleanType):
        return i % 2 == 0
    if isinstance(t, (ByteType, ShortType, IntegerType, LongType)):
        return i
    if isinstance(t, (FloatType, DoubleType)):
        return float(i)
    if isinstance(t, TimestampType):
        return dt.datetime(2025, 11, 21, 0, i % 60)
    if isinstance(t, ArrayType):
        return []
    if isinstance(t, MapType):
        return {}
    if isinstance(t, StructType):
        return tuple(value(f, i) for f in t.fields)
    return None


def rows_of(spark, schema, n: int):
    """``n`` rows of ``schema``, each column filled by ``value``."""
    return spark.createDataFrame([tuple(value(f, i) for f in schema.fields) for i in range(n)],
                                 schema)


def older_lake(spark, lake_dir, rows: int = 5, incidents_extra: str | None = None):
    """bronze.connections as the release before ``broker_addr`` wrote it, and gold.incidents as
    today's (with a column ``incidents_extra`` that no release writes, when given)."""
    today = today_schemas()[TABLE]
    old = rows_of(spark, today, rows).drop(NEWEST)
    old.write.format("delta").partitionBy("date").save(lake.table_path(lake_dir, "bronze", "connections"))
    incidents = rows_of(spark, today_schemas()["gold.incidents"], 2)
    if incidents_extra:
        incidents = incidents.withColumn(incidents_extra, lake_date(DAY))
    incidents.write.format("delta").partitionBy("date").save(
        lake.table_path(lake_dir, "gold", "incidents"))
    return old


def sorted_rows(df):
    return sorted(tuple(str(v) for v in r) for r in df.collect())


def test_an_older_table_gets_the_new_column_keeps_every_row_and_takes_the_next_day(spark, tmp_path):
    lake_dir = tmp_path / "lake"
    old = older_lake(spark, lake_dir)
    before = sorted_rows(old)
    done = {m.table: m for m in migrate_lake(spark, lake_dir, stamp="s1")}
    assert done[TABLE].added == (NEWEST,) and done[TABLE].rows == 5
    assert done["gold.incidents"].added == ()
    table = lake.read_table(spark, lake_dir, "bronze", "connections")
    assert table.schema.fieldNames() == today_schemas()[TABLE].fieldNames()
    assert sorted_rows(table.drop(NEWEST)) == before
    assert table.where(f"{NEWEST} IS NOT NULL").count() == 0  # the older rows: null
    assert (lake_dir / BACKUP_DIR / "s1" / "bronze" / "connections" / "_delta_log").is_dir()
    assert not (lake_dir / "_migrating").exists()
    # the next run's write of a day is accepted (jobs.lake.check_columns) and lands
    next_day = rows_of(spark, today_schemas()[TABLE], 3).withColumn("date", lake_date(DAY + dt.timedelta(1)))
    lake.write_day(spark, next_day, lake_dir, "bronze", "connections", DAY + dt.timedelta(1))
    assert lake.read_table(spark, lake_dir, "bronze", "connections").count() == 8
    # a second migration finds nothing to do
    assert all(not m.added for m in migrate_lake(spark, lake_dir, stamp="s2"))
    assert not (lake_dir / BACKUP_DIR / "s2").exists()


def lake_date(day: dt.date):
    from pyspark.sql import functions as F

    return F.lit(day)


def test_a_table_with_a_column_no_longer_written_is_refused_and_nothing_changes(spark, tmp_path):
    lake_dir = tmp_path / "lake"
    older_lake(spark, lake_dir, incidents_extra="gone")
    with pytest.raises(MigrationRefused, match=r"gold.incidents cannot be migrated \(has gone no longer"):
        migrate_lake(spark, lake_dir)
    # checked before any change: the older connections table was left as it was
    assert NEWEST not in lake.read_table(spark, lake_dir, "bronze", "connections").columns


def columns(schema):
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


@pytest.mark.delta
def test_todays_schemas_file_holds_the_tables_a_fresh_run_writes(spark, sample_lake):
    """``schemas/lake_tables.json`` (what migrate brings tables to) is what this release writes:
    regenerate it with ``python -m jobs.migrate LAKE`` from a fresh run's lake when this fails."""
    fresh = {f"{layer}.{name}": columns(lake.read_table(spark, sample_lake, layer, name).schema)
             for layer, name, _path in lake.list_tables(sample_lake)}
    assert fresh == {table: columns(schema) for table, schema in today_schemas().items()}


def test_classic_delta_evolves_an_older_table_in_place_and_sail_cannot(spark, engine_name, tmp_path):
    """The in-place alternative docs/operations.md gives for classic Spark + Delta: ``ALTER TABLE
    … ADD COLUMNS`` on the registered table, or an append with ``mergeSchema``; either way the
    next day's ``write_day`` (columns by name) lands. Sail 0.7.2 has no ALTER TABLE ADD COLUMNS."""
    lake_dir = tmp_path / "lake"
    older_lake(spark, lake_dir)
    newest_type = today_schemas()[TABLE][NEWEST].dataType.simpleString()
    lake.register_tables(spark, lake_dir)
    alter = f"ALTER TABLE bronze.connections ADD COLUMNS ({NEWEST} {newest_type})"
    if engine_name == "sail":
        with pytest.raises(Exception, match=r"(?i)alter|not (yet )?(implemented|supported)"):
            spark.sql(alter).collect()
        return
    spark.sql(alter).collect()
    next_day = DAY + dt.timedelta(1)
    today = rows_of(spark, today_schemas()[TABLE], 3).withColumn("date", lake_date(next_day))
    lake.write_day(spark, today, lake_dir, "bronze", "connections", next_day)
    table = lake.read_table(spark, lake_dir, "bronze", "connections")
    assert table.count() == 8 and table.where(f"{NEWEST} IS NOT NULL").count() == 3
    # mergeSchema on append: the other way to add the column, on a second older table
    path = lake.table_path(tmp_path / "lake2", "bronze", "connections")
    rows_of(spark, today_schemas()[TABLE], 4).drop(NEWEST).write.format("delta").partitionBy("date").save(path)
    today.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    merged = spark.read.format("delta").load(path)
    assert NEWEST in merged.columns and merged.count() == 7
    assert merged.where(f"{NEWEST} IS NULL").count() == 4
