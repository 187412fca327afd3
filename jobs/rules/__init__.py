"""The DESIGN.md §5 concepts, each once: small column functions and ``DataFrame -> DataFrame``
transforms whose docstrings state the rule. silver/ and gold/ modules are table builders over
these; a newcomer reads the rules here.

- ``liveness``: who is live at a snapshot, with how many processes (§5, §3.2).
- ``claims``: ownership claims and their lifetimes (§5, §5.1 "Claims"), client_ip claims.
- ``evidence``: what a snapshot proves by itself (§5.1 "Evidence, not absence").
- ``restarts``: ids superseded by a restart of the same host (§5.1 "Restarts").
- ``abandoned``: groups nobody consumes all day (§5.1 "Abandoned backlog").
- ``severity``: INFO / WARN / CRITICAL (§4).
"""
