"""Drawing helpers of the report (jobs/report/build.py, jobs/report/backlog.py): matplotlib on
its file-only backend, UTC time axes, and a figure as inline SVG."""

from __future__ import annotations

import datetime as dt
import html


def pyplot():
    """matplotlib on its file-only backend (no display on a cluster's driver or in Airflow)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def utc_time_axis(ax) -> None:
    import matplotlib.dates as mdates

    locator = mdates.AutoDateLocator(tz=dt.timezone.utc, maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=dt.timezone.utc))
    ax.set_xlabel("time (UTC)")


def utc(t: dt.datetime) -> dt.datetime:
    """Collected timestamps are naive UTC (jobs/cli.py pins the process to TZ=UTC): mark them so."""
    return t.replace(tzinfo=dt.timezone.utc) if t.tzinfo is None else t.astimezone(dt.timezone.utc)


def svg_figure(fig, div_id: str, label: str) -> str:
    """The figure as inline SVG (text kept as text, no script): the file opens offline anywhere."""
    import io

    plt = pyplot()
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):  # text as <text>, not glyph paths: smaller, selectable
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]  # drop the XML prolog and doctype: the SVG sits inside HTML
    return (f'<figure class="plot" id="{div_id}" aria-label="{html.escape(label)}">{svg}'
            f"</figure>")
