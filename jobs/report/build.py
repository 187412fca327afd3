"""Build the HTML report of one day from the lake (DESIGN.md §1, README, Report).

Spark reads and downsamples (time buckets, so a long day stays a few hundred points per series);
matplotlib draws on the driver and each plot is inline SVG: the file carries no script, opens
offline (from disk or mail) and stays small (≤ 2 MB on the demo day, tests/test_report.py).
"""

from __future__ import annotations

import datetime as dt
import html
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs import lake as lake_mod
from jobs.report.backlog import backlog_section
from jobs.report.plots import pyplot, svg_figure, utc, utc_time_axis

MAX_POINTS = 300  # time buckets per timeline / heatmap column count
MAX_FINDINGS = 40  # timelines drawn, most severe first; the rest are listed
MAX_HEATMAPS = 20
HOT_QUEUE_COLOUR = "#7b3294"
MAX_LOAD_PLOTS = 10  # topics with producer findings drawn (per-queue share of the day)
PAD = dt.timedelta(minutes=30)  # timeline context around a finding
SEVERITY_RANK = {"CRITICAL": 0, "WARN": 1, "INFO": 2, "OK": 3}
STATE_COLOURS = {0: "#d62728", 1: "#2ca02c", 2: "#ff7f0e"}
STATE_NAMES = {0: "orphaned", 1: "owned", 2: "double-owned"}
KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]


@dataclass
class Finding:
    kind: str
    cluster: str
    group: str
    topic: str
    broker_name: str
    queue_id: int
    start: dt.datetime
    end: dt.datetime
    root_cause: str
    severity: str
    evidence: str

    @property
    def key(self) -> tuple:
        return (self.cluster, self.group, self.topic, self.broker_name, self.queue_id)

    @property
    def title(self) -> str:
        return (f"{self.kind} · {self.group} · {self.topic} {self.broker_name}:{self.queue_id} · "
                f"{self.root_cause} · {self.severity}")


def _bucket_seconds(spark_df: DataFrame) -> int:
    row = spark_df.agg(F.min("ts").alias("lo"), F.max("ts").alias("hi")).first()
    if row is None or row["lo"] is None:
        return 60
    span = (row["hi"] - row["lo"]).total_seconds()
    return max(60, int(-(-span // MAX_POINTS)))


def _bucket(col: str, seconds: int):
    return F.timestamp_seconds(F.floor(F.unix_timestamp(col) / seconds) * seconds)


def _findings(spark: SparkSession, lake: Path, day: dt.date) -> list[Finding]:
    specs = [("orphaned", "orphaned_queues", "first_seen", "last_seen"),
             ("double-owned", "double_owned_queues", "first_seen", "last_seen"),
             ("stuck", "stuck_queues", "stuck_since", "last_seen")]
    found = []
    for kind, table, start, end in specs:
        df = lake_mod.read_day(spark, lake, "gold", table, day).select(
            *KEY, F.col(start).alias("start"), F.col(end).alias("end"), "root_cause", "severity",
            "evidence")
        found += [Finding(kind, **r.asDict()) for r in df.collect()]
    found.sort(key=lambda f: (SEVERITY_RANK.get(f.severity, 9), f.group, f.topic, f.kind,
                              f.broker_name, f.queue_id))
    return found


def _keys_frame(spark: SparkSession, keys: list[tuple], columns: list[str]) -> DataFrame:
    return spark.createDataFrame([tuple(k) for k in keys], ",".join(
        f"`{c}` {'int' if c == 'queue_id' else 'string'}" for c in columns))


def _timelines(spark, lake, day, findings: list[Finding]) -> dict[tuple, list[dict]]:
    """Per finding queue: lag and time lag per time bucket (max), the whole day."""
    if not findings:
        return {}
    offsets = lake_mod.read_day(spark, lake, "silver", "queue_offsets", day)
    keys = _keys_frame(spark, sorted({f.key for f in findings}), KEY)
    sel = offsets.join(F.broadcast(keys), KEY).select(*KEY, "ts", "lag", "time_lag_seconds")
    seconds = _bucket_seconds(offsets)
    rows = (sel.groupBy(*KEY, _bucket("ts", seconds).alias("t"))
            .agg(F.max("lag").alias("lag"), F.max("time_lag_seconds").alias("time_lag"))
            .orderBy(*KEY, "t").collect())
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in KEY), []).append(
            {"t": r["t"], "lag": r["lag"], "time_lag": r["time_lag"]})
    return out


def _ownership(spark, lake, day, pairs: list[tuple]) -> dict[tuple, list[dict]]:
    """Per affected (cluster, group, topic): ownership state per queue × time bucket."""
    if not pairs:
        return {}
    state = lake_mod.read_day(spark, lake, "silver", "queue_state", day)
    cols = ["cluster", "group", "topic"]
    keys = _keys_frame(spark, pairs, cols)
    seconds = _bucket_seconds(state)
    rows = (state.join(F.broadcast(keys), cols)
            .groupBy(*cols, "broker_name", "queue_id", _bucket("ts", seconds).alias("t"))
            .agg(F.min("owner_count").alias("lo"), F.max("owner_count").alias("hi"))
            .orderBy(*cols, "broker_name", "queue_id", "t").collect())
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        s = 2 if r["hi"] >= 2 else (0 if r["lo"] == 0 else 1)
        out.setdefault(tuple(r[c] for c in cols), []).append(
            {"queue": f"{r['broker_name']}:{r['queue_id']}", "t": r["t"], "state": s})
    return out


def _incidents(spark, lake, day) -> list[dict] | None:
    """The day's gold.incidents, most severe and newest first (None: the lake has none yet)."""
    if not (Path(lake) / "gold" / "incidents").is_dir():
        return None
    rows = [r.asDict(recursive=True)
            for r in lake_mod.read_day(spark, lake, "gold", "incidents", day).collect()]
    rows.sort(key=lambda r: (SEVERITY_RANK.get(r["severity"], 9),
                             (r["open_since_day"] or day) < day, r["cluster"], r["group"],
                             r["kind"], r["cause"]))
    return rows


STRIP_DAYS = 14


def _status_strip(spark, lake, day) -> tuple[list[dt.date], dict[tuple, dict]]:
    """gold.group_health status per (cluster, group) over the ``STRIP_DAYS`` days up to ``day``."""
    days = [day - dt.timedelta(days=k) for k in range(STRIP_DAYS - 1, -1, -1)]
    df = (lake_mod.read_table(spark, lake, "gold", "group_health")
          .where((F.col("date") >= F.lit(days[0])) & (F.col("date") <= F.lit(day)))
          .select("cluster", "group", "date", "status"))
    strip: dict[tuple, dict] = {}
    for r in df.collect():
        strip.setdefault((r["cluster"], r["group"]), {})[r["date"]] = r["status"]
    return days, strip


def _strip_table(days: list[dt.date], strip: dict[tuple, dict]) -> str:
    head = "<th>group</th>" + "".join(f"<th>{d:%m-%d}</th>" for d in days)
    body = []
    for (cluster, group), by_day in sorted(strip.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cells = "".join(
            f'<td class="{by_day[d]}" title="{d} {by_day[d]}">{by_day[d][0]}</td>'
            if d in by_day else f'<td title="{d}: not in the lake">·</td>' for d in days)
        body.append(f"<tr><td>{html.escape(group)} ({html.escape(cluster)})</td>{cells}</tr>")
    return f'<table id="status-strip"><tr>{head}</tr>{"".join(body)}</table>'


def _incident_sections(incidents: list[dict], day: dt.date) -> str:
    """One section per incident: what, since when, the queues, evidence, what to do."""
    parts = []
    for i, r in enumerate(incidents):
        since = r["open_since_day"] or day
        age = ("new today" if since >= day
               else f"open since {since} ({(day - since).days + 1} days, continuing)")
        queues = r["queues"] or []
        shown = ", ".join(html.escape(q) for q in queues[:20]) + (
            f" … (+{len(queues) - 20})" if len(queues) > 20 else "")
        parts.append(
            f'<div class="incident" id="incident-{i}">'
            f'<h3><span class="{html.escape(r["severity"])}">{html.escape(r["severity"])}</span> '
            f'{html.escape(r["group"])} · {html.escape(r["kind"])} · {html.escape(r["cause"])}'
            f'</h3><table>'
            f'<tr><th>since</th><td>{age}</td></tr>'
            f'<tr><th>seen</th><td>{r["first_seen"]:%Y-%m-%d %H:%M:%S} – '
            f'{r["last_seen"]:%Y-%m-%d %H:%M:%S} UTC</td></tr>'
            f'<tr><th>queues ({len(queues)})</th><td>{shown or "-"}</td></tr>'
            f'<tr><th>evidence</th><td>{html.escape(r["evidence"] or "-")}</td></tr>'
            f'<tr><th>what to do</th><td>{html.escape(r["remediation"] or "-")}</td></tr>'
            f'</table></div>')
    return "\n".join(parts)


def _health(spark, lake, day) -> list[dict]:
    df = lake_mod.read_day(spark, lake, "gold", "group_health", day)
    rows = [r.asDict(recursive=True) for r in df.collect()]
    rows.sort(key=lambda r: (SEVERITY_RANK.get(r["status"], 9), r["cluster"], r["group"]))
    return rows


def _producer_topics(spark, lake, day) -> list[dict]:
    """Per (cluster, topic) with a gold.producer_findings row: its findings, most severe first
    (empty when the lake has no producer tables yet)."""
    if not (Path(lake) / "gold" / "producer_findings").is_dir():
        return []
    by_topic: dict[tuple, list[dict]] = {}
    for r in lake_mod.read_day(spark, lake, "gold", "producer_findings", day).collect():
        by_topic.setdefault((r["cluster"], r["topic"]), []).append(r.asDict(recursive=True))
    ranked = sorted(by_topic.items(), key=lambda kv: (min(SEVERITY_RANK.get(f["severity"], 9) for f in kv[1]),
                                                      kv[0]))
    return [{"cluster": c, "topic": t, "findings": fs} for (c, t), fs in ranked[:MAX_LOAD_PLOTS]]


def _queue_shares(spark, lake, day, topics: list[dict]) -> dict[tuple, list[dict]]:
    """gold.queue_load rows (hour, queue, share) of the given topics."""
    if not topics or not (Path(lake) / "gold" / "queue_load").is_dir():
        return {}
    keys = _keys_frame(spark, [(t["cluster"], t["topic"]) for t in topics], ["cluster", "topic"])
    rows = (lake_mod.read_day(spark, lake, "gold", "queue_load", day)
            .join(keys, ["cluster", "topic"], "inner")
            .select("cluster", "topic", "broker_name", "queue_id", "hour", "share").collect())
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["cluster"], r["topic"]), []).append(r.asDict())
    return out


def _load_figure(topic: dict, rows: list[dict]):
    """Per-queue share of the topic's messages per UTC hour, the even share dashed; the queue of a
    HOT_QUEUE in purple, the queues of a starved or lost broker dotted, their windows shaded."""
    plt = pyplot()
    queues = sorted({(r["broker_name"], r["queue_id"]) for r in rows})
    even = 1.0 / len(queues)
    hot = {(f["broker_name"], f["queue_id"]) for f in topic["findings"] if f["finding"] == "HOT_QUEUE"}
    lost = {f["broker_name"] for f in topic["findings"] if f["finding"] in ("BROKER_STARVED", "ORDER_AT_RISK")}
    fig, ax = plt.subplots(figsize=(10, 3.2))
    # no red, green or orange: those mark ownership states elsewhere in the report
    palette = plt.get_cmap("viridis")
    for i, (broker, queue) in enumerate(queues):
        pts = sorted((r["hour"], r["share"]) for r in rows
                     if (r["broker_name"], r["queue_id"]) == (broker, queue) and r["share"] is not None)
        if not pts:
            continue
        colour = palette(i / max(1, len(queues) - 1) * 0.9)
        style = ({"color": HOT_QUEUE_COLOUR, "lw": 2.2} if (broker, queue) in hot else
                 {"color": colour, "ls": ":", "lw": 1.4} if broker in lost else
                 {"color": colour, "lw": 0.9, "alpha": 0.8})
        ax.step([h for h, _ in pts], [v for _, v in pts], where="post", label=f"{broker}:{queue}", **style)
    ax.axhline(even, color="#555", ls="--", lw=1, label=f"even share {even:.1%}")
    for f in topic["findings"]:
        if f["finding"] in ("HOT_QUEUE", "BROKER_STARVED", "ORDER_AT_RISK") and f["first_seen"]:
            start = f["first_seen"].hour + f["first_seen"].minute / 60
            end = f["last_seen"].hour + f["last_seen"].minute / 60 if f["last_seen"] else 24
            ax.axvspan(start, max(end, start + 0.1), color="#888888", alpha=0.15, lw=0)
    ax.set_xlim(0, 24)
    ax.set_xticks(range(0, 25, 2))
    ax.set_xlabel("hour (UTC)")
    ax.set_ylabel("share of the topic's messages")
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    names = ", ".join(sorted({f["finding"] for f in topic["findings"]}))
    ax.set_title(f"{topic['topic']} ({topic['cluster']}): {names}", fontsize=10, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False,
              ncols=1 if len(queues) <= 16 else 2)
    return fig




def _timeline_figure(f: Finding, points: list[dict]):
    plt = pyplot()
    lo, hi = f.start - PAD, f.end + PAD
    pts = [p for p in points if lo <= p["t"] <= hi] or points
    times = [utc(p["t"]) for p in pts]
    fig, ax = plt.subplots(figsize=(10, 2.8))
    ax.plot(times, [p["lag"] for p in pts], color="#1f77b4", lw=1.2, label="lag (msgs)")
    ax.set_ylabel("lag (msgs)")
    ax2 = ax.twinx()
    ax2.plot(times, [p["time_lag"] for p in pts], color="#9467bd", lw=1.2, ls=":",
             label="time lag (s)")
    ax2.set_ylabel("time lag (s)")
    ax.axvspan(utc(f.start), utc(max(f.end, f.start + dt.timedelta(seconds=30))),
               color=STATE_COLOURS[0] if f.kind != "double-owned" else STATE_COLOURS[2],
               alpha=0.12, lw=0)
    ax.set_title(f.title, fontsize=10, loc="left")
    utc_time_axis(ax)
    fig.legend(loc="upper right", ncols=2, fontsize=8, frameon=False)
    return fig


def _heatmap_figure(title: str, cells: list[dict]):
    import matplotlib.dates as mdates
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    plt = pyplot()
    queues = sorted({c["queue"] for c in cells},
                    key=lambda q: (q.rsplit(":", 1)[0], int(q.rsplit(":", 1)[1])))
    times = sorted({c["t"] for c in cells})
    qi = {q: i for i, q in enumerate(queues)}
    ti = {t: i for i, t in enumerate(times)}
    nan = float("nan")
    z = [[nan] * len(times) for _ in queues]
    for c in cells:
        z[qi[c["queue"]]][ti[c["t"]]] = c["state"]
    step = (times[1] - times[0]) if len(times) > 1 else dt.timedelta(minutes=1)
    x0, x1 = mdates.date2num(utc(times[0])), mdates.date2num(utc(times[-1] + step))
    cmap = ListedColormap([STATE_COLOURS[i] for i in range(3)])
    cmap.set_bad("#ffffff")  # no state in the bucket: unknown, drawn blank (not healthy, not bad)
    fig, ax = plt.subplots(figsize=(10, max(1.8, 0.7 + 0.2 * len(queues))))
    ax.imshow(z, aspect="auto", interpolation="nearest", cmap=cmap,
              norm=BoundaryNorm([-0.5, 0.5, 1.5, 2.5], 3), extent=(x0, x1, len(queues) - 0.5, -0.5))
    ax.set_yticks(range(len(queues)), queues, fontsize=8)
    ax.xaxis_date(tz=dt.timezone.utc)
    ax.set_title(title, fontsize=10, loc="left")
    utc_time_axis(ax)
    ax.legend(handles=[Patch(color=STATE_COLOURS[i], label=STATE_NAMES[i]) for i in range(3)],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    return fig


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f4f4f4}.CRITICAL{background:#f8d0d0}
.WARN{background:#fdebc8}.OK{background:#d9f2d9}.INFO{background:#e4eefb}
.note{color:#666;font-size:13px}.finding{margin:8px 0 4px;font-size:13px}
.incident h3{font-size:15px;margin:18px 0 4px}.incident th{width:120px}
#status-strip td{text-align:center;min-width:22px}
.plot{margin:4px 0 16px}.plot svg{max-width:100%;height:auto}
"""


def _health_table(rows: list[dict]) -> str:
    cols = ["cluster", "group", "status", "orphaned_queues", "double_owned_queues",
            "stuck_queues", "max_lag", "max_time_lag_seconds", "rebalances", "findings"]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            if c == "findings":
                text = "<br>".join(html.escape(s) for s in (v or []))
            else:
                text = html.escape("" if v is None else str(v))
            cls = f' class="{html.escape(str(v))}"' if c == "status" else ""
            cells.append(f"<td{cls}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table id="group-health"><tr>{head}</tr>{"".join(body)}</table>'


def build_report(spark: SparkSession, lake: str | Path, day: dt.date) -> tuple[str, dict]:
    """The report's HTML and a summary ``{"groups", "timelines", "heatmaps", "findings"}``."""
    lake = Path(lake)
    health = _health(spark, lake, day)
    findings = _findings(spark, lake, day)
    drawn = findings[:MAX_FINDINGS]
    series = _timelines(spark, lake, day, drawn)
    pairs = list(dict.fromkeys((f.cluster, f.group, f.topic) for f in findings))[:MAX_HEATMAPS]
    ownership = _ownership(spark, lake, day, pairs)

    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'>"
             f"<title>rocketlens report {day}</title><style>{CSS}</style></head><body>",
             f"<h1>rocketlens report · {day} (UTC day; every time in this report is UTC)</h1>",
             f"<p class='note'>{len(health)} groups, {len(findings)} findings "
             f"(orphaned, double-owned, stuck). Series are downsampled to at most {MAX_POINTS} "
             "time buckets (max per bucket).</p>",
             "<h2>Group health</h2>", _health_table(health)]
    incidents = _incidents(spark, lake, day)
    parts.append("<h2>Incidents: what to do</h2>")
    if incidents is None:
        parts.append("<p class='note'>This lake has no gold.incidents yet: rerun the day with "
                     "this version to get them.</p>")
    elif not incidents:
        parts.append("<p>No incidents on this day.</p>")
    else:
        alerting = sum(r["severity"] in ("WARN", "CRITICAL") for r in incidents)
        parts.append(f"<p class='note'>{len(incidents)} incidents ({alerting} WARN or "
                     "CRITICAL), most severe and new first; times are UTC.</p>")
        parts.append(_incident_sections(incidents, day))
    days, strip = _status_strip(spark, lake, day)
    parts.append(f"<h2>Status of the last {STRIP_DAYS} days (gold.group_health)</h2>")
    parts.append("<p class='note'>O OK, W WARN, C CRITICAL; · the day is not in the lake.</p>")
    parts.append(_strip_table(days, strip))
    parts.append("<h2>Ownership heatmaps (queue × time)</h2>")
    parts.append("<p class='note'>Per affected group and topic: green owned by one live process, "
                 "red orphaned (no live owner), orange double-owned.</p>")
    heatmaps = 0
    for i, pair in enumerate(pairs):
        if pair in ownership:
            title = f"{pair[1]} · {pair[2]} ({pair[0]})"
            parts.append(svg_figure(_heatmap_figure(title, ownership[pair]), f"heatmap-{i}", title))
            heatmaps += 1
    if not pairs:
        parts.append("<p>No findings: nothing to draw.</p>")

    parts.append("<h2>Findings: lag and time lag</h2>")
    timelines = 0
    for i, f in enumerate(drawn):
        parts.append(f"<div class='finding'><b>{html.escape(f.title)}</b><br>"
                     f"{html.escape(f.evidence or '')}</div>")
        if series.get(f.key):
            parts.append(svg_figure(_timeline_figure(f, series[f.key]), f"timeline-{i}", f.title))
            timelines += 1
        else:
            parts.append("<p class='note'>no offsets for this queue</p>")
    if len(findings) > len(drawn):
        parts.append(f"<p class='note'>{len(findings) - len(drawn)} more findings not drawn; "
                     "query them with rocketlens sql.</p>")
    producer_topics = _producer_topics(spark, lake, day)
    shares = _queue_shares(spark, lake, day, producer_topics)
    parts.append("<h2>Producer load: per-queue share of the day (gold.queue_load)</h2>")
    load_plots = 0
    for topic in producer_topics:
        rows = shares.get((topic["cluster"], topic["topic"]))
        for f in topic["findings"]:
            parts.append(f"<div class='finding'><b>{html.escape(f['finding'])} · {html.escape(topic['topic'])} · "
                         f"{html.escape(f['severity'])}</b><br>{html.escape(f['evidence'] or '')}</div>")
        if rows:
            title = f"per-queue share · {topic['topic']} ({topic['cluster']})"
            parts.append(svg_figure(_load_figure(topic, rows), f"load-{load_plots}", title))
            load_plots += 1
    if not producer_topics:
        parts.append("<p>No producer findings: every topic's producers spread their messages evenly.</p>")
    backlog_parts, backlog_plots = backlog_section(spark, lake, day)
    parts.extend(backlog_parts)
    if not heatmaps and not timelines and not load_plots and not backlog_plots:
        parts.append("<p class='note'>No plots for this day.</p>")
    parts.append("</body></html>")
    summary = {"groups": len(health), "findings": len(findings), "timelines": timelines,
               "heatmaps": heatmaps, "incidents": len(incidents or []), "load_plots": load_plots,
               "backlog_plots": backlog_plots}
    return "\n".join(parts), summary


def write_report(spark: SparkSession, lake: str | Path, day: dt.date, out: str | Path) -> dict:
    page, summary = build_report(spark, lake, day)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return summary
