"""The wall clock a client JVM writes its ``rocketmq_client.log`` in (issue #18, clocks).

The simulator formats every line in GMT+8, logback's zone on the default deployment (DESIGN.md
§3.4). A 4.9.x JVM started with ``-Duser.timezone=UTC`` (common in containers) writes the same
instant 8 hours earlier on the wall clock; :func:`as_written` rewrites a formatted line for such a
host. A 5.x client writes GMT+8 whatever its JVM's zone (its pattern names the zone; a real 5.3.3
client in a UTC JVM did: tests/data/real-cluster/README.md, difference 9), so its lines stay.
"""

from __future__ import annotations

import datetime as dt

ZONE_OFFSET_HOURS = {"GMT+8": 8, "UTC": 0}
FIVE_X_ZONE = "GMT+8"  # the 5.x client's logback pattern names it (the simulator's own knowledge)
_FORMAT = "%Y-%m-%d %H:%M:%S"


def zone_of(process) -> str:
    """The zone a simulated process's log lines are written in: its ``log_timezone`` (the JVM's
    zone) for a 4.x client, ``FIVE_X_ZONE`` for a 5.x one."""
    return FIVE_X_ZONE if process.is_5x else process.spec.log_timezone


def as_written(line: str, zone: str) -> str:
    """``line`` (formatted in GMT+8) as a JVM logging in ``zone`` writes it."""
    shift = ZONE_OFFSET_HOURS[zone] - 8
    if not shift:
        return line
    moment = dt.datetime.strptime(line[:19], _FORMAT) + dt.timedelta(hours=shift)
    return moment.strftime(_FORMAT) + line[19:]
