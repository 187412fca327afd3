"""silver.queue_state over hand-built claims (jobs.rules.claims, .evidence, .liveness), both
engines: claim lifetimes, N/A, client_ip claims (issue #17 cases 1-4)."""

from chispa import assert_df_equality

from tests.rules.frames import at, claim, connected, queue_state_of, snapshots

WINDOW, GAP, ROUND = 90, 300, 30
RESULT = "queue_id int, ts timestamp, owners array<string>, owned_by_ip_only boolean"


def owners_of(spark, offsets, claims, members):
    state = queue_state_of(spark, offsets, claims, members, WINDOW, GAP, ROUND)
    return state.select("queue_id", "ts", "owners", "owned_by_ip_only")


def check(spark, actual, rows):
    # ordered by key here: Sail cannot sort by the array column chispa's ignore_row_order uses
    assert_df_equality(actual.orderBy("queue_id", "ts"),
                       spark.createDataFrame(rows, RESULT).orderBy("queue_id", "ts"),
                       ignore_nullable=True)


def test_the_latest_rebalance_set_holds_while_its_client_is_live(spark):
    """Case 1: the newest ``rebalanced result changed`` line (valid_until open) is a claim until
    the client stops being live — here its connections end at 10:05:05, so live until 10:06:35."""
    offsets = snapshots(0, range(9))
    claims = [claim("a@1", 0, "rebalance_log", at(0, 1))]  # open: the last line of the data
    members = connected("a@1", range(6))
    actual = owners_of(spark, offsets, claims, members)
    check(spark, actual, [(0, at(0), [], False)]
          + [(0, at(m), ["a@1"], False) for m in range(1, 7)]
          + [(0, at(m), [], False) for m in (7, 8)])


def test_a_replaced_rebalance_set_ends_at_the_next_set(spark):
    offsets = snapshots(0, range(1, 5))
    claims = [claim("a@1", 0, "rebalance_log", at(0), at(2, 30))]
    actual = owners_of(spark, offsets, claims, connected("a@1", range(6)))
    check(spark, actual, [(0, at(1), ["a@1"], False), (0, at(2), ["a@1"], False),
                          (0, at(3), [], False), (0, at(4), [], False)])


def test_a_running_info_claim_holds_at_most_the_snapshot_gap(spark):
    """Case 4: the next running info comes 10 min later; the claim ends 5 min after its ts."""
    offsets = snapshots(0, range(1, 9))
    claims = [claim("a@1", 0, "running_info", at(0, 10), at(10, 10))]
    actual = owners_of(spark, offsets, claims, connected("a@1", range(10)))
    check(spark, actual, [(0, at(m), ["a@1"], False) for m in range(1, 6)]
          + [(0, at(m), [], False) for m in (6, 7, 8)])


def test_na_never_removes_a_claim_its_live_claimant_still_answers(spark):
    """Case 3 on a real cluster: mqadmin gave up at another client, so every later queue says
    N/A. a@1 answers every running-info round listing both queues: queue 0 moves, queue 1 is
    pinned behind a slow message (offset standing, lag 50) — neither loses its owner."""
    offsets = (snapshots(0, range(4), client_ip="N/A")
               + snapshots(1, range(4), client_ip="N/A", advance=0))
    claims = [claim("a@1", q, "running_info", at(m, 3), at(m + 1, 3))
              for q in (0, 1) for m in range(-1, 3)] + [
        claim("a@1", q, "running_info", at(3, 3)) for q in (0, 1)]
    actual = owners_of(spark, offsets, claims, connected("a@1", range(-1, 4)))
    check(spark, actual, [(0, at(m), ["a@1"], False) for m in range(4)]
          + [(1, at(m), ["a@1"], False) for m in range(4)])


def test_na_and_a_standing_offset_remove_a_claim_its_claimant_stopped_answering(spark):
    """The crash case: a@1 dies after its 09:59:03 running info; its stale id stays listed (live,
    DESIGN.md §5) and its claim would hold 5 min, but b@2 answers the 10:00:03 round and a@1
    does not. Queue 1 says N/A with a standing offset and lag: nobody from 10:01, the first
    snapshot after the missed round (+30 s); at 10:00 a@1's claim is still answered. Queue 0's
    offset still moves: N/A proves nothing there. A null client_ip (no consumerProgress) never
    removes a claim."""
    offsets = (snapshots(0, range(3), client_ip="N/A")
               + snapshots(1, range(3), client_ip="N/A", advance=0)
               + snapshots(2, range(3), client_ip=None, advance=0))
    claims = ([claim("a@1", q, "running_info", at(-1, 3)) for q in (0, 1, 2)]
              + [claim("b@2", 9, "running_info", at(m, 3), at(m + 1, 3)) for m in range(-1, 3)])
    members = connected("a@1", range(-1, 3)) + connected("b@2", range(-1, 3))
    actual = owners_of(spark, offsets, claims, members)
    check(spark, actual, [(0, at(m), ["a@1"], False) for m in range(3)]
          + [(1, at(0), ["a@1"], False), (1, at(1), [], False), (1, at(2), [], False)]
          + [(2, at(m), ["a@1"], False) for m in range(3)])


def test_na_never_removes_a_claim_its_claimant_persists_but_drops_a_rebalance_set(spark):
    """Logs only: a@1 writes a [persistAll] line for queue 0 every 5 s (fresh, from the claimant
    itself) while the queue is pinned and N/A: it keeps its owner. Queue 1's only claim is a
    rebalance set logged once before: N/A with a standing offset and lag removes it."""
    offsets = (snapshots(0, range(1, 4), client_ip="N/A", advance=0)
               + snapshots(1, range(1, 4), client_ip="N/A", advance=0))
    claims = ([claim("a@1", 0, "persist_log", at(0, 5 * k), at(0, 5 * k + 10))
               for k in range(48)]
              + [claim("a@1", 1, "rebalance_log", at(0, 1))])
    actual = owners_of(spark, offsets, claims, connected("a@1", range(5)))
    check(spark, actual, [(0, at(m), ["a@1"], False) for m in range(1, 4)]
          + [(1, at(m), [], False) for m in range(1, 4)])


def test_a_client_ip_is_a_claim_by_the_live_members_at_that_ip(spark):
    """Case 2: no running info or logs; ``consumerProgress -s`` names 10.0.0.1, where two live
    processes (ids) run — both claim it; a member at another IP does not; nobody live at the IP
    (10.0.0.9) claims nothing."""
    offsets = (snapshots(0, range(1, 3), client_ip="10.0.0.1")
               + snapshots(1, range(1, 3), client_ip="10.0.0.9"))
    members = (connected("10.0.0.1@7#1", range(3)) + connected("10.0.0.1@8#2", range(3))
               + connected("10.0.0.2@9#3", range(3)))
    actual = owners_of(spark, offsets, [], members)
    both = ["10.0.0.1@7#1", "10.0.0.1@8#2"]
    check(spark, actual, [(0, at(1), both, True), (0, at(2), both, True),
                          (1, at(1), [], False), (1, at(2), [], False)])


def test_a_client_ip_does_not_add_owners_to_a_claimed_queue(spark):
    offsets = snapshots(0, range(1, 3), client_ip="10.0.0.2")
    members = connected("10.0.0.1@7", range(3)) + connected("10.0.0.2@9", range(3))
    claims = [claim("10.0.0.1@7", 0, "persist_log", at(0, 55), at(2, 5))]
    actual = owners_of(spark, offsets, claims, members)
    check(spark, actual, [(0, at(1), ["10.0.0.1@7"], False), (0, at(2), ["10.0.0.1@7"], False)])


def test_owners_are_the_live_members_silver_member_context_stored(spark):
    """Liveness is computed once (silver.member_context) and queue_state reads it rather than
    the connection records: a claimant the stored context lists with 2 running processes owns
    twice, one listed twice but running once (a restart that kept its id: the dead channel pulls
    nothing) owns once, and one it does not list owns nothing, whatever group_members says."""
    from jobs.silver.queue_state import build_queue_state
    from tests.rules.frames import MEMBERS_SCHEMA, OFFSETS_SCHEMA, OWNERSHIP_SCHEMA

    offsets = spark.createDataFrame(snapshots(0, range(1, 5)), OFFSETS_SCHEMA)
    claims = spark.createDataFrame([claim("a@1", 0, "rebalance_log", at(0))], OWNERSHIP_SCHEMA)
    members = spark.createDataFrame(connected("a@1", range(6)), MEMBERS_SCHEMA)
    stored = spark.createDataFrame([("c", "g", at(1), "a@1", 1, 1), ("c", "g", at(2), "a@1", 2, 2),
                                    ("c", "g", at(4), "a@1", 2, 1)],
                                   "cluster string, group string, ts timestamp, "
                                   "client_id string, processes int, running_processes int")
    state = build_queue_state(offsets, claims, members, stored, WINDOW, GAP, ROUND)
    check(spark, state.select("queue_id", "ts", "owners", "owned_by_ip_only"),
          [(0, at(1), ["a@1"], False), (0, at(2), ["a@1", "a@1"], False),
           (0, at(3), [], False), (0, at(4), ["a@1"], False)])


def test_each_live_claimant_owns_once_per_process_either_way_it_is_found(spark):
    """``live_owners`` takes the claimants among the live ids when every live id of the group has
    one process, and goes member by member when one has more (a duplicate client id, here the
    non-claimant d@4): both give each live claimant once per process, and an id whose process
    count is 0 or unknown owns nothing on either path."""
    from jobs.silver.queue_state import build_queue_state
    from tests.rules.frames import MEMBERS_SCHEMA, OFFSETS_SCHEMA, OWNERSHIP_SCHEMA

    offsets = spark.createDataFrame(snapshots(0, range(1, 7)), OFFSETS_SCHEMA)
    claims = spark.createDataFrame([claim(c, 0, "rebalance_log", at(0)) for c in
                                    ("a@1", "b@2", "z@9")], OWNERSHIP_SCHEMA)
    members = spark.createDataFrame(connected("a@1", range(7)) + connected("b@2", range(7))
                                    + connected("z@9", range(7)), MEMBERS_SCHEMA)
    context = {1: [("a@1", 1), ("b@2", 1)],
               2: [("a@1", 1), ("b@2", 1), ("d@4", 2)],
               3: [("a@1", 1), ("b@2", 0)],
               4: [("a@1", None), ("b@2", 2)],
               5: [("a@1", None), ("b@2", 1)],
               6: [("a@1", 0), ("b@2", 1), ("d@4", 3)]}
    stored = spark.createDataFrame(
        [("c", "g", at(m), c, p, p) for m, live in context.items() for c, p in live],
        "cluster string, group string, ts timestamp, client_id string, processes int, "
        "running_processes int")
    state = build_queue_state(offsets, claims, members, stored, WINDOW, GAP, ROUND)
    check(spark, state.select("queue_id", "ts", "owners", "owned_by_ip_only"),
          [(0, at(1), ["a@1", "b@2"], False), (0, at(2), ["a@1", "b@2"], False),
           (0, at(3), ["a@1"], False), (0, at(4), ["b@2", "b@2"], False),
           (0, at(5), ["b@2"], False), (0, at(6), ["b@2"], False)])
