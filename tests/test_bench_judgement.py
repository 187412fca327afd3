"""The nightly benchmark judges its targets on the median run of a setup (``--repeat``), so one
slow or fast run of a shared VM does not decide a target (benchmarks/RESULTS.md)."""

from __future__ import annotations

from benchmarks.nightly import _of_runs, median_runs


def _run(wall: float, engine: str = "sail", scale: str = "M") -> dict:
    return {"scale": scale, "engine": engine, "format": "delta", "wall": wall}


def test_the_median_run_of_each_setup_is_judged_whatever_the_order_of_the_runs():
    runs = [_run(362.0), _run(302.5), _run(326.8), _run(40.0, scale="S"),
            _run(900.0, engine="spark")]
    by = median_runs(runs)
    assert by[("M", "sail", "delta")]["wall"] == 326.8
    assert by[("S", "sail", "delta")]["wall"] == 40.0
    assert by[("M", "spark", "delta")]["wall"] == 900.0


def test_an_even_count_of_runs_is_judged_on_the_slower_middle_one():
    assert median_runs([_run(190.0), _run(210.0)])[("M", "sail", "delta")]["wall"] == 210.0
    assert median_runs([_run(400.0), _run(190.0), _run(210.0), _run(180.0)])[
        ("M", "sail", "delta")]["wall"] == 210.0


def test_the_judged_line_lists_every_run_of_its_setup_only_when_there_were_several():
    runs = [_run(326.8), _run(302.5), _run(40.0, scale="S")]
    median = median_runs(runs)
    assert _of_runs(runs, median[("M", "sail", "delta")]) == " (median of 2 runs: 302.5, 326.8 s)"
    assert _of_runs(runs, median[("S", "sail", "delta")]) == ""
