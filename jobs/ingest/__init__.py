"""Landing → bronze readers and parsers, one module per source (DESIGN.md §3)."""
