"""The report's backlog section (docs/contract.md §5.4): gold.backlog_forecast's group × topic
rows as a table (durations in hours and minutes), a plot per group × topic of the day's summed
lag with the forecast line to its clear time and the loss horizon, and the previous night's
forecast error (gold.forecast_accuracy). A lake written before those tables gets a note."""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from jobs import lake as lake_mod
from jobs.report.plots import pyplot, svg_figure, utc, utc_time_axis

MAX_BACKLOG_PLOTS = 10
MAX_POINTS = 300


def hours_minutes(seconds: float) -> str:
    """``"5 h 07 min"`` / ``"42 min"`` (rounded to the minute; as the findings' lines read)."""
    minutes = max(0, round(seconds / 60))
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest:02d} min" if hours else f"{rest} min"


def _rows(spark: SparkSession, lake: Path, table: str, day: dt.date, where: str | None = None):
    if not (lake / "gold" / table).is_dir():
        return None
    df = lake_mod.read_day(spark, lake, "gold", table, day)
    return [r.asDict() for r in (df.where(where) if where else df).collect()]


def _series(spark: SparkSession, lake: Path, day: dt.date, keys: list[tuple]) -> dict[tuple, list]:
    """The summed lag of each (cluster, group, topic) per snapshot ts, at most ``MAX_POINTS``."""
    if not keys:
        return {}
    wanted = spark.createDataFrame(keys, "cluster string, `group` string, topic string")
    offsets = lake_mod.read_day(spark, lake, "silver", "queue_offsets", day)
    span = offsets.agg(F.min("ts").alias("a"), F.max("ts").alias("b")).first()
    if span is None or span["a"] is None:
        return {}
    bucket = max(60, int((span["b"] - span["a"]).total_seconds() // MAX_POINTS) + 1)
    start = F.unix_timestamp("ts") - F.unix_timestamp("ts") % bucket
    summed = (offsets.join(wanted, ["cluster", "group", "topic"], "inner")
              .groupBy("cluster", "group", "topic", "ts").agg(F.sum("lag").alias("lag"))
              .groupBy("cluster", "group", "topic", start.alias("_b"))
              .agg(F.max("ts").alias("t"), F.max("lag").alias("lag")))
    out: dict[tuple, list] = {}
    for r in summed.collect():
        out.setdefault((r["cluster"], r["group"], r["topic"]), []).append((r["t"], r["lag"]))
    return {k: sorted(v) for k, v in out.items()}


def _figure(row: dict, points: list, cleared_lag: int):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(10, 2.8))
    ax.plot([utc(t) for t, _ in points], [v for _, v in points], color="#1f77b4", lw=1.2,
            label="backlog (msgs, all queues)")
    as_of, backlog = row["as_of"], row["backlog"]
    net = (row["drain_rate"] or 0.0) - (row["arrival_rate"] or 0.0)
    if row["clears_at"] is not None:
        end, value = row["clears_at"], cleared_lag
        label = f"forecast: clears {row['clears_at']:%H:%M} UTC"
    else:  # the trend over as long again as the day shown, or 6 h
        end = as_of + max(dt.timedelta(hours=6), as_of - points[0][0])
        value = max(0.0, backlog - net * (end - as_of).total_seconds())
        label = f"forecast: {(row['no_clear_reason'] or 'no clear').lower()}"
    ax.plot([utc(as_of), utc(end)], [backlog, value], color="#1f77b4", ls="--", lw=1.2,
            label=label)
    if row["loss_at"] is not None and row["loss_at"] <= end + dt.timedelta(hours=6):
        ax.axvline(utc(row["loss_at"]), color="#7b3294", ls=":", lw=1.4,
                   label=f"loss horizon {row['loss_at']:%Y-%m-%d %H:%M} UTC")
    ax.set_ylabel("backlog (msgs)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{row['group']} · {row['topic']} ({row['cluster']}): deciding "
                 f"{row['deciding_queue']}", fontsize=10, loc="left")
    utc_time_axis(ax)
    ax.legend(loc="best", fontsize=7, frameon=False)
    return fig


def _table(rows: list[dict]) -> str:
    head = ("<tr><th>cluster</th><th>group</th><th>topic</th><th>backlog</th><th>trend</th>"
            "<th>clears</th><th>deciding queue</th><th>loss</th><th>lost messages</th>"
            "<th>advice</th></tr>")
    body = []
    for r in rows:
        clears = (f"{r['clears_at']:%Y-%m-%d %H:%M} UTC (in "
                  f"{hours_minutes((r['clears_at'] - r['as_of']).total_seconds())})"
                  if r["clears_at"] else f"will not clear: {r['no_clear_reason']}")
        loss = (f"{r['loss_at']:%Y-%m-%d %H:%M} UTC (in "
                f"{hours_minutes((r['loss_at'] - r['as_of']).total_seconds())})"
                if r["loss_at"] else "unknown")
        lost = "unknown" if r["lost_messages"] is None else str(r["lost_messages"])
        cells = [r["cluster"], r["group"], r["topic"], str(r["backlog"]), r["trend"] or "",
                 clears, r["deciding_queue"] or "", loss, lost, r["advice"] or ""]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return f'<table id="backlog-forecast">{head}{"".join(body)}</table>'


def _accuracy(rows: list[dict]) -> str:
    by_topic: dict[tuple, list[dict]] = {}
    for r in rows:
        by_topic.setdefault((r["cluster"], r["group"], r["topic"]), []).append(r)
    body = []
    for (cluster, group, topic), qs in sorted(by_topic.items()):
        errors = [q["error_minutes"] for q in qs if q["error_minutes"] is not None]
        worst = max(errors, key=abs) if errors else None
        text = ("not cleared this day" if worst is None else
                f"{'late' if worst > 0 else 'early'} by {hours_minutes(abs(worst) * 60)}")
        body.append(f"<tr><td>{html.escape(cluster)}</td><td>{html.escape(group)}</td>"
                    f"<td>{html.escape(topic)}</td><td>{len(qs)}</td><td>{len(errors)}</td>"
                    f"<td>{html.escape(text)}</td></tr>")
    return ('<table id="forecast-accuracy"><tr><th>cluster</th><th>group</th><th>topic</th>'
            "<th>queues forecast</th><th>cleared</th><th>largest error</th></tr>"
            f'{"".join(body)}</table>')


def backlog_section(spark: SparkSession, lake: Path, day: dt.date, cleared_lag: int = 100
                    ) -> tuple[list[str], int]:
    """The section's HTML parts and the number of plots drawn."""
    parts = ["<h2>Backlog: when it clears, when it is lost (gold.backlog_forecast)</h2>"]
    topics = _rows(spark, lake, "backlog_forecast", day, "queue_id IS NULL")
    if topics is None:
        parts.append("<p class='note'>This lake has no gold.backlog_forecast yet: rerun the day "
                     "with this version to get it.</p>")
        return parts, 0
    if not topics:
        parts.append("<p>No group is behind at the day's end.</p>")
    else:
        topics.sort(key=lambda r: (r["clears_at"] is not None, -(r["backlog"] or 0)))
        parts.append("<p class='note'>At each queue's last snapshot of the day, rates over the "
                     "forecast window; will-not-clear first.</p>")
        parts.append(_table(topics))
    drawn = topics[:MAX_BACKLOG_PLOTS]
    series = _series(spark, lake, day, [(r["cluster"], r["group"], r["topic"]) for r in drawn])
    plots = 0
    for i, row in enumerate(drawn):
        points = series.get((row["cluster"], row["group"], row["topic"]))
        if points:
            title = f"backlog forecast · {row['group']} · {row['topic']}"
            parts.append(svg_figure(_figure(row, points, cleared_lag), f"backlog-{i}", title))
            plots += 1
    accuracy = _rows(spark, lake, "forecast_accuracy", day)
    if accuracy:
        parts.append("<h3>Last night's forecast against this day (gold.forecast_accuracy)</h3>")
        parts.append(_accuracy(accuracy))
    return parts, plots
