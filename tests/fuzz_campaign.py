"""A time-bounded Hypothesis campaign over the Python inputs' fuzz targets
(tests/test_fuzz_inputs.py: sweep specs, calibration run files, fio JSON
documents, plot tables).

    python3 tests/fuzz_campaign.py [SECONDS_PER_TARGET]   (default 10)

Each target runs batches of examples (batch k with seed k) until its time is up;
the first failing input is shrunk and printed, and the exit status is 1.
One line per target: the inputs run and the failures, as .ci/fuzz prints
for the libFuzzer targets. docs/testing.md has a long campaign's counts."""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from test_fuzz_inputs import TARGETS  # noqa: E402

BATCH = 10


def campaign(name: str, check: Any, strategy: Any, seconds: float) -> tuple[int, int]:
    """Run `check` on inputs of `strategy` for `seconds`: (inputs, failures).
    Batch k draws with seed k, so every machine runs the same inputs in the
    same order (as .ci/fuzz's libFuzzer targets run with -seed=1) and a
    failure CI meets is one a developer meets too."""
    count = 0

    def batch(k: int) -> None:
        @seed(k)
        @settings(
            max_examples=BATCH,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def run(value: Any) -> None:
            nonlocal count
            count += 1
            check(value)

        run()

    end = time.monotonic() + seconds
    k = 0
    while time.monotonic() < end:
        k += 1
        try:
            batch(k)
        except Exception:
            print(f"fuzz: {name} FAILED", flush=True)
            traceback.print_exc()
            return count, 1
    return count, 0


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    status = 0
    for name, (check, strategy) in TARGETS.items():
        t0 = time.monotonic()
        count, failures = campaign(name, check, strategy, seconds)
        wall = time.monotonic() - t0
        if failures:
            status = 1
        else:
            print(f"fuzz: {name} ok ({count} inputs in {wall:.0f}s, 0 failures)", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
