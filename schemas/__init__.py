"""Schemas of the landing sources (DESIGN.md §3) and of the lake tables (§4)."""
