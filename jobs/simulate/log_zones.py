"""The wall clock a client JVM writes its ``rocketmq_client.log`` in (issue #18, clocks).

The simulator formats every line in GMT+8, logback's zone on the default deployment (DESIGN.md
§3.4). A JVM started with ``-Duser.timezone=UTC`` (common in containers) writes the same instant
8 hours earlier on the wall clock; :func:`as_written` rewrites a formatted line for such a host.
"""

from __future__ import annotations

import datetime as dt

ZONE_OFFSET_HOURS = {"GMT+8": 8, "UTC": 0}
_FORMAT = "%Y-%m-%d %H:%M:%S"


def as_written(line: str, zone: str) -> str:
    """``line`` (formatted in GMT+8) as a JVM logging in ``zone`` writes it."""
    shift = ZONE_OFFSET_HOURS[zone] - 8
    if not shift:
        return line
    moment = dt.datetime.strptime(line[:19], _FORMAT) + dt.timedelta(hours=shift)
    return moment.strftime(_FORMAT) + line[19:]
