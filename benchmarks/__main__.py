"""``python -m benchmarks``: the nightly pipeline benchmark (``make bench``); see benchmarks/nightly.py."""

from benchmarks.nightly import main

main()
