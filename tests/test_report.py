"""``rocketlens report`` on a simulated day, rendered in headless Chromium (Debian's package)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_DAY, run_cli

pytestmark = pytest.mark.delta

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--virtual-time-budget=15000"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("chromium not found: `make test` installs it when run as root; "
                    "otherwise apt-get install chromium")
    return path


@pytest.fixture(scope="module")
def report(sample_lake, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    proc = run_cli("report", "--date", SAMPLE_DAY, "--lake", str(sample_lake), "--out", str(out))
    return out, proc.stdout


MAX_REPORT_BYTES = 2 * 1024 * 1024  # DESIGN.md §1 / issue 22: mailable, opens offline


def test_report_is_one_self_contained_file(report):
    """No script and nothing fetched: every plot is inline SVG, every reference a data: URI or
    an anchor inside the page; the demo day's report stays within 2 MB."""
    out, stdout = report
    assert f"wrote {out}" in stdout
    page = out.read_text()
    assert "<table id=\"group-health\">" in page
    for group in ("GID_topicb_billing", "GID_dup_inventory", "GID_slow_payments"):
        assert group in page
    assert "<script" not in page
    refs = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert refs and all(r.startswith(("data:", "#")) for r in refs), \
        sorted({r for r in refs if not r.startswith(("data:", "#"))})
    assert page.count('id="heatmap-') >= 3 and page.count('id="timeline-') >= 10
    # producer-skew's topics with a finding get their per-queue share plot of the day
    for topic in ("orders-keyed", "payments-routed", "events-uneven"):
        assert f'aria-label="per-queue share · {topic} (rmq-prod)"' in page
    assert page.count('id="load-') == 3
    assert page.count("<svg") == page.count('class="plot"')
    assert out.stat().st_size <= MAX_REPORT_BYTES, out.stat().st_size


def _chromium(out: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                           *args, out.resolve().as_uri()], capture_output=True, text=True,
                          timeout=180)


def _colour_pixels(png: Path, colour: str) -> int:
    """Pixels of exactly ``colour`` (``#rrggbb``) in the screenshot."""
    from PIL import Image  # matplotlib's own dependency

    rgb = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    with Image.open(png) as im:
        return sum(n for n, c in im.convert("RGB").getcolors(1 << 24) or [] if c == rgb)


def test_report_renders_its_plots_in_headless_chromium(report, tmp_path):
    """Chromium parses every plot as SVG, and the pixels show them: a screenshot of the page's
    top (tables and the first ownership heatmaps) has the heatmaps' owned green and orphaned red,
    colours nothing else on the page uses."""
    from jobs.report.build import STATE_COLOURS

    out, _ = report
    dom = _chromium(out, tmp_path, "--dump-dom").stdout
    page = out.read_text()
    figures = len(re.findall(r'id="(?:heatmap|timeline|load|backlog)-\d', page))
    assert dom.count('<figure class="plot"') == figures
    assert dom.count("<svg") >= figures and "<image" in dom  # heatmaps are raster cells

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    _chromium(out, tmp_path, f"--screenshot={shot}", "--window-size=1400,10000")
    assert shot.exists() and shot.stat().st_size > 50_000
    # a legend swatch is ~200 px: only drawn cells reach these counts
    assert _colour_pixels(shot, STATE_COLOURS[1]) > 20_000  # owned cells
    assert _colour_pixels(shot, STATE_COLOURS[0]) > 20_000  # orphaned cells
    print(f"screenshot: {shot}")


def test_report_without_lake_fails_with_one_line(tmp_path):
    proc = run_cli("report", "--date", SAMPLE_DAY, "--lake", str(tmp_path), "--out",
                   str(tmp_path / "r.html"), check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("rocketlens: no gold.group_health")


@pytest.mark.sail_only
def test_report_opens_its_session_through_the_settings_memory_pool(sample_lake, tmp_path):
    """``engine.sail_memory_pool_mib`` reaches ``report`` (it once opened a default session):
    the day's aggregates do not fit 1 MiB, and the one line names the setting."""
    import os
    import sys

    out = tmp_path / "r.html"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETLENS")}
    env["ROCKETLENS__ENGINE__SAIL_MEMORY_POOL_MIB"] = "1"
    proc = subprocess.run([sys.executable, "-m", "jobs", "report", "--date", SAMPLE_DAY, "--lake",
                           str(sample_lake), "--out", str(out)], cwd=Path(__file__).parents[1],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"rocketlens: report of {SAMPLE_DAY} ran out of engine memory (")
    assert "raise engine.sail_memory_pool_mib (now 1) and run it again" in last
    assert "Traceback" not in proc.stderr and not out.exists()

def test_report_has_a_section_per_incident_and_labels_times_utc(report, sample_lake, spark):
    """Every incident of the day has its section (what, since when, the queues, evidence, what
    to do), whether or not it gets a plot; axes and times say UTC; the 14-day strip is there."""
    import datetime as dt
    import html

    from jobs import lake as lake_mod

    out, stdout = report
    page = out.read_text()
    incidents = lake_mod.read_day(spark, sample_lake, "gold", "incidents",
                                  dt.date.fromisoformat(SAMPLE_DAY)).collect()
    assert any(r.severity in ("WARN", "CRITICAL") for r in incidents)
    assert page.count('class="incident"') == len(incidents)
    assert f"{len(incidents)} incidents" in stdout
    for r in incidents:
        assert html.escape(f"{r.group} · {r.kind} · {r.cause}") in page
    assert "what to do" in page and "time (UTC)" in page and " UTC</td>" in page
    assert '<table id="status-strip">' in page


def test_report_shows_each_backlog_forecast_with_hours_and_minutes(report, sample_lake, spark):
    """DESIGN.md §5.4: a row per group × topic of gold.backlog_forecast, its clear time and loss
    horizon as hours and minutes (never raw seconds), a plot per row up to ten."""
    import datetime as dt
    import html

    from jobs import lake as lake_mod

    out, _stdout = report
    page = out.read_text()
    rows = (lake_mod.read_day(spark, sample_lake, "gold", "backlog_forecast",
                              dt.date.fromisoformat(SAMPLE_DAY))
            .where("queue_id IS NULL").collect())
    table = page[page.index('<table id="backlog-forecast">'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == len(rows) + 1
    for r in rows:
        assert f"<td>{html.escape(r.group)}</td><td>{html.escape(r.topic)}</td>" in table
        if r.clears_at is not None:
            assert f"{r.clears_at:%Y-%m-%d %H:%M} UTC (in " in table
    assert re.search(r"\(in \d+( h \d\d)? min\)", table) or not rows
    assert len(re.findall(r'id="backlog-\d+"', page)) == min(len(rows), 10)
