"""rocketlens: RocketMQ consumer-group analytics on Spark (see README.md and shared DESIGN.md)."""

__version__ = "0.1.0"
