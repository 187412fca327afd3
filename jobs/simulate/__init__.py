"""The RocketMQ cluster-day simulator (``rocketlens simulate``); see README.md in this folder."""
