"""Silver → gold: the findings tables of DESIGN.md §4 (contract columns)."""
