-- rocketlens SQL cookbook: questions a RocketMQ operator asks, answered from the lake.
-- Run one with:  rocketlens sql "$(sed -n '/^-- name: orphaned_last_night$/,/;$/p' docs/cookbook.sql | grep -v '^--')" --lake LAKE
-- Every query is run by tests/test_cookbook.py on a simulated sample day.
-- "Last night" / "this week" are relative to the newest day in the lake (max(date)).

-- name: orphaned_last_night
-- question: Which queues were orphaned last night, and why?
SELECT `group`, topic, broker_name, queue_id, first_seen, last_seen, orphaned_minutes,
       lag_end, root_cause, would_be_owner, severity, evidence
FROM gold.orphaned_queues
WHERE date = (SELECT max(date) FROM gold.orphaned_queues)
ORDER BY severity = 'CRITICAL' DESC, orphaned_minutes DESC, `group`, topic, queue_id;

-- name: top_stuck_by_redelivery_risk
-- question: Which stuck queues will redeliver the most messages when they move or the client restarts?
SELECT `group`, topic, broker_name, queue_id, owner, root_cause, committed_offset, blocking_offset,
       redelivery_risk, in_flight_span, flow_controlled, stuck_since, stuck_minutes, released_at
FROM gold.stuck_queues
WHERE date = (SELECT max(date) FROM gold.stuck_queues)
ORDER BY redelivery_risk DESC, lag_end DESC
LIMIT 10;

-- name: groups_that_flapped_this_week
-- question: Which groups flapped (subscription storms or rebalances without a membership change) this week?
SELECT `group`, topic, count(*) AS episodes, max(flaps_per_hour) AS max_flaps_per_hour,
       min(ts) AS first_flap, max(ts) AS last_flap
FROM gold.rebalance_events
WHERE date > date_sub((SELECT max(date) FROM gold.rebalance_events), 7)
  AND (`trigger` = 'FLAPPING' OR flaps_per_hour IS NOT NULL)
GROUP BY `group`, topic
ORDER BY episodes DESC, `group`;

-- name: consistent_hash_savings
-- question: What would CONSISTENT_HASH have saved over the strategy of today (AVG) per group and topic?
SELECT a.`group`, a.topic,
       a.queues_moved - c.queues_moved AS queues_moved_saved,
       a.orphaned_queue_minutes - c.orphaned_queue_minutes AS orphaned_minutes_saved,
       a.rebalances AS avg_rebalances, c.rebalances AS consistent_hash_rebalances,
       c.max_queues_per_client - c.min_queues_per_client AS consistent_hash_imbalance
FROM gold.strategy_whatif a
JOIN gold.strategy_whatif c
  ON a.date = c.date AND a.cluster = c.cluster AND a.`group` = c.`group` AND a.topic = c.topic
WHERE a.strategy = 'AVG' AND c.strategy = 'CONSISTENT_HASH'
  AND (a.queues_moved <> c.queues_moved OR a.orphaned_queue_minutes <> c.orphaned_queue_minutes)
ORDER BY orphaned_minutes_saved DESC, queues_moved_saved DESC;

-- name: unhealthy_groups
-- question: Which groups need attention today, worst first?
SELECT `group`, status, orphaned_queues, double_owned_queues, stuck_queues, max_lag,
       max_time_lag_seconds, rebalances, findings
FROM gold.group_health
WHERE date = (SELECT max(date) FROM gold.group_health) AND status <> 'OK'
ORDER BY CASE status WHEN 'CRITICAL' THEN 0 ELSE 1 END, max_lag DESC;

-- name: duplicate_client_ids
-- question: Which client ids run on more than one process (two JVMs with the same instanceName)?
SELECT `group`, client_id, max(running_processes) AS processes, min(ts) AS first_seen, max(ts) AS last_seen,
       count(*) AS snapshots
FROM silver.group_members
WHERE is_duplicate_id
GROUP BY `group`, client_id
ORDER BY processes DESC, `group`;

-- name: double_consumed_queues
-- question: Which queues were consumed twice at once (double-owned), by whom?
SELECT `group`, topic, broker_name, queue_id, owners, minutes, root_cause, severity
FROM gold.double_owned_queues
ORDER BY minutes DESC, `group`, topic, queue_id;

-- name: oldest_waiting_message
-- question: Where has a message waited longest unconsumed (time lag), and how big was the backlog?
SELECT `group`, topic, max(time_lag_seconds) AS max_time_lag_seconds, max(lag) AS max_lag
FROM silver.queue_offsets
WHERE date = (SELECT max(date) FROM silver.queue_offsets)
GROUP BY `group`, topic
HAVING max(lag) > 0
ORDER BY max_time_lag_seconds DESC NULLS LAST
LIMIT 10;

-- name: slow_message_blockers
-- question: Which single slow messages pinned a queue, where, and when were they sent back?
SELECT `group`, topic, broker_name, queue_id, owner, blocking_offset, stuck_since, released_at,
       stuck_minutes, redelivery_risk, evidence
FROM gold.stuck_queues
WHERE root_cause = 'SLOW_MESSAGE'
ORDER BY stuck_minutes DESC;

-- name: rebalance_churn
-- question: How much did each group rebalance, why, and how many queues moved?
SELECT `group`, `trigger`, count(*) AS rebalances, sum(queues_moved) AS queues_moved,
       min(ts) AS first_at, max(ts) AS last_at
FROM gold.rebalance_events
GROUP BY `group`, `trigger`
ORDER BY queues_moved DESC, `group`, `trigger`;

-- name: inconsistent_subscriptions
-- question: In which groups do members subscribe different topic sets (the topicB problem)?
SELECT `group`, count(DISTINCT topics) AS distinct_topic_sets,
       collect_set(concat(client_id, ': ', topics)) AS members
FROM (
  SELECT `group`, client_id, concat_ws(',', sort_array(collect_set(topic))) AS topics
  FROM silver.client_subscriptions
  WHERE source = 'running_info' AND topic NOT LIKE '%RETRY%%'
  GROUP BY `group`, client_id
) m
GROUP BY `group`
HAVING count(DISTINCT topics) > 1
ORDER BY `group`;

-- name: queues_without_owner_now
-- question: Which queues had no live owner at the last snapshot of the day while messages waited?
SELECT s.`group`, s.topic, s.broker_name, s.queue_id, s.ts, s.lag, s.claimed_by
FROM silver.queue_state s
JOIN (SELECT `group`, max(ts) AS ts FROM silver.queue_state GROUP BY `group`) l
  ON s.`group` = l.`group` AND s.ts = l.ts
WHERE s.owner_count = 0 AND s.lag > 0 AND NOT s.is_retry_topic
ORDER BY s.lag DESC;

-- name: landing_reconciliation
-- question: Did every landing line end up in bronze, quarantine or another day's run?
SELECT source, sum(lines) AS lines, sum(accepted) AS accepted, sum(quarantined) AS quarantined,
       sum(other_day) AS other_day, sum(unmatched) AS unmatched,
       sum(lines) = sum(accepted) + sum(quarantined) + sum(other_day) + sum(unmatched) AS balanced
FROM bronze.ingest_counts
GROUP BY source
ORDER BY source;
