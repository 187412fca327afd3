"""``rocketlens report``: one self-contained HTML file with the day's health, timelines and heatmaps."""
