"""Issue #18: every consumer kind in one simulated day (``consumer-kinds``: concurrent and
orderly push, broadcast, pop, lite pull with subscribe and with assign, a host logging in UTC),
through every layer in memory, both engines. No fault is injected: the gold tables equal the
truth (no queue finding), nothing is WARN or CRITICAL, the broadcast and pop groups get no queue
or rebalance finding at all, and a broadcast group's max_lag is null."""

import pytest

from jobs.settings import Settings
from jobs.simulate.run import simulate
from tests.gold.conftest import DAY, of_groups, run_layers, scenario_groups, truth_of_groups
from tests.gold.test_consume_stalls import stalls_day
from tests.gold.test_orphaned_queues import assert_queue_findings_equal_truth

# classic Spark: in the acceptance tier, `make test-acceptance` (CI runs it)
pytestmark = pytest.mark.heavy_day

WINDOW = ("09:50", "10:20")
NO_OWNERSHIP = {"GID_bcast_config", "GID_pop_orders"}
KINDS = scenario_groups("consumer-kinds")


@pytest.fixture(scope="module")
def kinds_day(spark, tmp_path_factory):
    """The consumer-kinds groups, cut from the consume-stalls day that holds them beside the
    stalled groups (its window, 09:55-10:15, holds the broadcast client's join and leave)."""
    truth, layers = stalls_day(spark, tmp_path_factory)
    return truth_of_groups(truth, KINDS), of_groups(layers, KINDS)


def stuck_key(r):
    return (r["group"], r["topic"], r["broker_name"], r["queue_id"], r["root_cause"])


def test_every_kind_is_told_from_the_records(kinds_day):
    """The simulator writes what each client kind really reports; the models read it back."""
    from jobs.rules.models import consumer_models

    _, layers = kinds_day
    silver = layers["silver"]
    got = {r.group: (r.broadcasting, r.pop, r.actively, r.reports_mq_table) for r in consumer_models(
        silver["group_members"], silver["client_config"], silver["process_queues"]).collect()}
    assert got == {
        "GID_healthy_orders": (False, False, False, True),
        "GID_orderly_trades": (False, False, False, True),
        "GID_bcast_config": (True, False, False, True),
        "GID_pop_orders": (False, True, False, False),
        "GID_lite_subscribe": (False, False, True, True),  # 5.1.4: mqTable from 5.1.1
        "GID_lite_assign": (False, False, True, False),  # 4.9.8: no mqTable
        "GID_utc_host": (False, False, False, True),
    }


def test_gold_tables_equal_the_truth(kinds_day):
    truth, layers = kinds_day
    assert_queue_findings_equal_truth(layers["gold"], truth, stuck_key)


def test_no_group_is_warn_or_critical_and_no_kind_gets_a_forbidden_finding(kinds_day):
    _, layers = kinds_day
    gold = layers["gold"]
    health = {r.group: r for r in gold["group_health"].collect()}
    assert len(health) == 7
    loud = {g: (r.status, r.findings) for g, r in health.items()
            if r.status != "OK" or any(f.startswith(("WARN", "CRITICAL")) for f in r.findings)}
    assert loud == {}
    for table in ("orphaned_queues", "double_owned_queues", "stuck_queues", "rebalance_events",
                  "strategy_whatif"):
        assert [r.group for r in gold[table].collect() if r.group in NO_OWNERSHIP] == [], table
    # broadcast offsets live on the clients: the broker's lag (~100k, frozen) is no number
    bcast = health["GID_bcast_config"]
    assert bcast.max_lag is None and bcast.max_time_lag_seconds is None
    assert [f for f in bcast.findings if f.startswith("INFO broadcast: ")] == bcast.findings
    assert health["GID_pop_orders"].max_lag is not None


def test_group_health_names_the_sources_each_group_rests_on(kinds_day):
    _, layers = kinds_day
    sources = {r.group: r.sources for r in layers["gold"]["group_health"].collect()}
    everything = ["offsets", "connections", "running_info", "client_logs"]
    assert sources["GID_healthy_orders"] == everything
    assert sources["GID_lite_assign"] == everything  # [persistAll] lines, no mqTable
    # pop clients log no [persistAll] (acks, not offsets) and no rebalance result
    assert sources["GID_pop_orders"] == ["offsets", "connections", "running_info"]


def test_a_host_logging_in_utc_is_one_info_clock_finding(kinds_day):
    """Without a zone for the host its log claims sit 8 h early: a data-quality line (INFO),
    no WARN or CRITICAL (checked above), and the other host of the group is not named."""
    _, layers = kinds_day
    health = {r.group: r for r in layers["gold"]["group_health"].collect()}
    clock = [f for g in health.values() for f in g.findings if f.startswith("INFO clock: ")]
    assert clock == ["INFO clock: host k8s-node-utc-01 client-log times are 8 h behind "
                     "running_info (its JVM logs in GMT+0?); map it in ingest.client_log_timezones"]
    assert clock[0] in health["GID_utc_host"].findings
    # ... and its log claims are not ownership (its running info still is)
    log_claims = layers["silver"]["queue_ownership"].where("source != 'running_info'")
    assert log_claims.where("client_id LIKE '10.0.25.11@%'").count() == 0
    assert log_claims.where("client_id LIKE '10.0.25.12@%'").count() > 0


def test_with_the_host_mapped_to_utc_its_log_is_on_time_and_clean(spark, tmp_path):
    settings = Settings(ingest={"client_log_timezones": {"k8s-node-*": "UTC"}})
    simulate("utc-log-host", DAY, tmp_path / "landing", seed=0, window=WINDOW)
    layers = run_layers(spark, tmp_path / "landing", tmp_path / "staging", settings)
    (row,) = layers["gold"]["group_health"].collect()
    assert (row.status, row.findings) == ("OK", [])
    log_claims = layers["silver"]["queue_ownership"].where("source != 'running_info'")
    assert log_claims.where("client_id LIKE '10.0.25.11@%'").count() > 0
    events = layers["bronze"]["client_log_events"].where("host = 'k8s-node-utc-01'")
    first, last = events.selectExpr("min(ts)", "max(ts)").first()
    assert (first.hour, first.minute, last.hour, last.minute) == (9, 50, 10, 19)


def test_rebalance_events_leave_out_the_groups_whose_model_excludes_them(spark, kinds_day):
    """A broadcast client joins at 10:02 and leaves at 10:12: read as a clustering group, the
    same records give rebalance events (every queue gains and loses an owner); with the model
    applied, gold.rebalance_events has none for it (DESIGN.md §5.1)."""
    from jobs.gold.rebalance_events import RebalanceRules, build_rebalance_events
    from jobs.rules.models import MODELS_SCHEMA

    _, layers = kinds_day
    bronze, silver = layers["bronze"], layers["silver"]
    as_clustering = build_rebalance_events(
        silver["group_members"], bronze["connections"], bronze["client_log_events"],
        bronze["running_info"], RebalanceRules(300, 30),
        models_df=spark.createDataFrame([], MODELS_SCHEMA))
    assert "GID_bcast_config" in {r.group for r in as_clustering.collect()}
    assert [r for r in layers["gold"]["rebalance_events"].collect()
            if r.group in NO_OWNERSHIP] == []


@pytest.mark.delta
def test_rocketlens_run_on_the_consumer_kinds_day_reports_nothing_above_info(tmp_path):
    """Issue #18 acceptance, end to end: ``rocketlens simulate`` + ``rocketlens run`` (Delta lake,
    embedded engine) on the day mixing every consumer kind: no WARN or CRITICAL anywhere."""
    import json

    from tests.conftest import run_cli

    landing, lake = tmp_path / "landing", tmp_path / "lake"
    run_cli("simulate", "--scenario", "consumer-kinds", "--date", "2025-11-21", "--landing",
            str(landing), "--window", "-".join(WINDOW))
    run_cli("run", "--date", "2025-11-21", "--landing", str(landing), "--lake", str(lake))
    out = run_cli("sql", "SELECT `group`, status, findings, sources FROM gold.group_health",
                  "--lake", str(lake), "--format", "json").stdout
    health = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(health) == 7
    loud = [(h["group"], h["status"], h["findings"]) for h in health
            if h["status"] != "OK" or any(f.startswith(("WARN", "CRITICAL")) for f in h["findings"])]
    assert loud == []
    assert all(h["sources"][:2] == ["offsets", "connections"] for h in health)
