"""gold.forecast_accuracy: how far the previous night's backlog forecast was off (docs/contract.md §5.4).

For each queue whose gold.backlog_forecast row of the previous day predicted a clear time
(``clears_at`` not null), the first offsets snapshot of this day whose lag is at or below
``forecast.cleared_lag`` is the actual clear (null when the queue did not clear that day), and
``error_minutes`` = actual − predicted (positive: it cleared later than forecast; null without an
actual clear). Group × topic rows of the forecast are not evaluated: their clear time is their
deciding queue's, which has its own row.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

QUEUE_KEY = ["cluster", "group", "topic", "broker_name", "queue_id"]
COLUMNS = ["date", *QUEUE_KEY, "forecast_date", "predicted_clear", "actual_clear",
           "error_minutes"]


def build_forecast_accuracy(previous_forecast_df: DataFrame, queue_offsets_df: DataFrame,
                            cleared_lag: int) -> DataFrame:
    """``previous_forecast_df``: gold.backlog_forecast rows of the day before (``date`` is the
    forecast's day); ``queue_offsets_df``: silver.queue_offsets of this day (``QUEUE_KEY``,
    ``ts``, ``lag``) → ``COLUMNS``, ``date`` the day after the forecast's."""
    predicted = previous_forecast_df.where(
        F.col("queue_id").isNotNull() & F.col("clears_at").isNotNull()).select(
        *QUEUE_KEY, F.col("date").alias("forecast_date"),
        F.col("clears_at").alias("predicted_clear"))
    cleared = (queue_offsets_df.where(F.col("lag") <= cleared_lag)
               .groupBy(*QUEUE_KEY).agg(F.min("ts").alias("actual_clear")))
    error = (F.unix_millis("actual_clear") - F.unix_millis("predicted_clear")) / F.lit(60000.0)
    return (predicted.join(cleared, on=QUEUE_KEY, how="left")
            .select(F.date_add(F.col("forecast_date"), 1).alias("date"), *QUEUE_KEY,
                    "forecast_date", "predicted_clear", "actual_clear",
                    error.alias("error_minutes")))
