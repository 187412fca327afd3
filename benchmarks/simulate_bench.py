"""Wall time and rows/s of ``rocketlens simulate`` (not a test): ``python -m benchmarks.simulate_bench --scale M``."""

from __future__ import annotations

import argparse
import datetime as dt
import tempfile
import time
from pathlib import Path

from jobs.simulate.run import simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", default="M", choices=["S", "M", "L"])
    parser.add_argument("--scenario", default="sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--landing", default=None, help="keep the output here (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        landing = Path(args.landing or tmp)
        started = time.perf_counter()
        truth = simulate(args.scenario, dt.date(2025, 1, 15), landing, seed=args.seed, scale=args.scale)
        wall = time.perf_counter() - started
        size = sum(p.stat().st_size for p in landing.rglob("*") if p.is_file())
    lines = truth["lines"]
    total = sum(lines.values())
    print(f"simulate {args.scenario} scale {args.scale}: {wall:.1f} s wall, {size / 1e9:.2f} GB")
    for source, n in lines.items():
        print(f"  {source:13s} {n:>11,d} rows")
    print(f"  offsets rows/s {lines.get('offsets', 0) / wall:,.0f}; all rows/s {total / wall:,.0f}")


if __name__ == "__main__":
    main()
