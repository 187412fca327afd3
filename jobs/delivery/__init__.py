"""What leaves the lake: notifications (notify) and Prometheus metrics (metrics)."""
