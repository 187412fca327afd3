"""A broadcast group that never committed (simulated ``broadcast-fresh``; the real cluster's
``healthy-broadcast`` case, tests/data/real-cluster/README.md difference 3): no offsets line at
all, yet one gold.group_health row, OK with the broadcast note and null lag."""

import pytest

from tests.gold.conftest import shared_layers

GROUP = "GID_bcast_fresh"


@pytest.mark.heavy_day  # a single-scenario day: classic Spark in the acceptance tier; the rule's
# hand-built test (tests/rules/test_abandoned_and_sources.py) runs on both engines in every tier
def test_a_never_committed_broadcast_group_has_no_offsets_but_its_ok_row(spark, tmp_path_factory):
    _, layers = shared_layers(spark, tmp_path_factory, "broadcast-fresh", "broadcast-fresh",
                                  ("09:50", "10:10"))
    bronze, gold = layers["bronze"], layers["gold"]
    assert bronze["offsets"].where(f"`group` = '{GROUP}'").count() == 0
    assert bronze["connections"].where(f"`group` = '{GROUP}'").count() > 0
    (row,) = gold["group_health"].where(f"`group` = '{GROUP}'").collect()
    assert (row.status, row.max_lag, row.max_time_lag_seconds) == ("OK", None, None)
    assert row.findings == ["INFO broadcast: offsets live on the clients (LocalFileOffsetStore); "
                            "the broker's lag n/a is not consumption"]
    assert "offsets" not in row.sources
    for table in ("orphaned_queues", "double_owned_queues", "stuck_queues"):
        assert gold[table].count() == 0, table
