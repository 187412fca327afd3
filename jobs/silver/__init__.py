"""Bronze → silver: typed, de-duplicated per-snapshot facts (DESIGN.md §4 silver; layout ours)."""
