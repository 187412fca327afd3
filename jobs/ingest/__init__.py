"""Landing → bronze: read landing files as text lines, parse, validate, quarantine (DESIGN.md §3–§4)."""
