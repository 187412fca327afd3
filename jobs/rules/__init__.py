"""The DESIGN.md §5 concepts, each once: small column functions and ``DataFrame -> DataFrame``
transforms whose docstrings state the rule. silver/ and gold/ modules are table builders over
these; a newcomer reads the rules here.

- ``liveness``: who is live at a snapshot, with how many processes (§5, §3.2); computed and
  stored once, in silver.member_context, which silver.queue_state and the gold detectors read.
- ``claims``: ownership claims and their lifetimes (§5, §5.1 "Claims"), client_ip claims, which
  groups have an ownership source at all.
- ``evidence``: what a snapshot proves by itself (§5.1 "Evidence, not absence").
- ``subscription``: topic sets, unknown when a record lacks them (§5).
- ``models``: consumer models without queue ownership (§5.1 "Consumer models").
- ``episodes``: gaps-and-islands numbering of flagged snapshots (§5 max_snapshot_gap).
- ``restarts``: ids superseded by a restart of the same host (§5.1 "Restarts").
- ``abandoned``: groups nobody consumes all day (§5.1 "Abandoned backlog").
- ``severity``: INFO / WARN / CRITICAL (§4, §5.1).
- ``thresholds``: the settings the ownership rules read.
"""
