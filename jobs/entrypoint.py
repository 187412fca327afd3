"""spark-submit's entry script: ``spark-submit [options] jobs/entrypoint.py run --date D …``.

The arguments after the script are the ``rocketlens`` command line (DESIGN.md §1), so the exit
codes hold under spark-submit too (0 ran, 1 failure, 2 bad usage, 3 ``--fail-on`` findings).
``--engine spark`` takes the session spark-submit configured (master, ``--packages``, ``--conf``).

The script runs from a checkout (``jobs/entrypoint.py``) or alone (``dist/entrypoint.py``, or a
copy spark-submit ships to a cluster driver): beside its package it imports that checkout,
otherwise the installed ``rocketlens`` wheel (the packed venv of ``make dist``).
"""

import sys
from pathlib import Path

_here = Path(__file__).resolve().parent
# Python put this script's folder first on sys.path; inside the package that would make its
# modules (settings, engine, …) top-level names, so the checkout root goes there instead.
if sys.path and Path(sys.path[0] or ".").resolve() == _here:
    sys.path.pop(0)
if (_here / "__init__.py").is_file() and (_here / "cli.py").is_file():
    sys.path.insert(0, str(_here.parent))

from jobs.cli import main  # noqa: E402

if __name__ == "__main__":
    main(prog_name="rocketlens")
