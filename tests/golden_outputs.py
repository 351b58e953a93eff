"""Golden outputs: what the simulator prints today, kept byte for byte in
``tests/golden/`` so that every change to a simulated number shows up as a
diff in review.

- ``reproduce-all.csv`` and ``reproduce-all.json``: ``flashpath reproduce all``
  in its CSV form (as a user reads it) and its JSON form (full precision, so
  a change below the CSV's four digits still shows).
- ``fio/<job>/<profile>.json``: the fio JSON output (with the ``"flashpath"``
  section) of every real fio job in ``tests/fixtures/fio/real-runs`` on every
  shipped profile; a job the profile refuses keeps its message in
  ``<profile>.err`` instead, so messages are golden too.

- ``docs/validation.md``: the validation page made from the same rows
  (``flashpath reproduce all --report docs/validation.md``), with its plots
  in ``docs/validation/``.

Regenerate after a deliberate model change, and say why in the commit:

    python3 tests/golden_outputs.py --update

The reproduce grid is run one scenario per process (the simulator is
single-threaded and deterministic, so the bytes do not depend on the
number of workers).
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden"
REAL_RUNS = REPO / "tests" / "fixtures" / "fio" / "real-runs"


def _scenario_rows(name: str) -> list:  # type: ignore[type-arg]
    from flashpath import reproduce as rp

    return rp.run_scenario(rp.scenarios()[name], 0)


_REPRODUCE_ROWS: list | None = None  # type: ignore[type-arg]


def reproduce_rows(workers: int | None = None) -> list:  # type: ignore[type-arg]
    """``reproduce all``'s rows, scenarios in the order `all` runs them
    (computed once per process: the golden files and the validation page
    are both made from them)."""
    global _REPRODUCE_ROWS
    if _REPRODUCE_ROWS is None:
        from flashpath import reproduce as rp

        names = list(rp.scenarios())
        workers = workers or min(len(names), os.cpu_count() or 1)
        with ProcessPoolExecutor(max_workers=workers) as pool:
            per_scenario = list(pool.map(_scenario_rows, names))
        _REPRODUCE_ROWS = [r for rs in per_scenario for r in rs]
    return _REPRODUCE_ROWS


def reproduce_outputs(workers: int | None = None) -> dict[str, str]:
    """``reproduce all`` as CSV and JSON, scenarios in the order `all` runs them."""
    from flashpath import reproduce as rp

    rows = reproduce_rows(workers)
    return {"reproduce-all.csv": rp.to_csv(rows), "reproduce-all.json": rp.to_json(rows) + "\n"}


VALIDATION_PAGE = REPO / "docs" / "validation.md"


def validation_page() -> str:
    """docs/validation.md as `flashpath reproduce all --report` writes it
    from the same rows (its plots are not compared: their bytes depend on
    the matplotlib version)."""
    from flashpath import reproduce as rp
    from flashpath import validation

    rows = reproduce_rows()
    links = {name: f"validation/{name}.svg" for name in rp.scenarios()}
    ftl = validation.ftl_section(ftl_wa_rows(), "validation/ftl-wa.svg")
    return validation.page(validation.docs_for(rows), rows, links, [ftl])


_FTL_WA: list | None = None  # type: ignore[type-arg]


def ftl_wa_rows() -> list:  # type: ignore[type-arg]
    """The FTL write-amplification rows of the page (computed once)."""
    global _FTL_WA
    if _FTL_WA is None:
        from flashpath import validation

        _FTL_WA = validation.ftl_wa_rows()
    return _FTL_WA


def fio_outputs() -> dict[str, str]:
    """The JSON output of each real fio job on each shipped profile."""
    import flashpath
    from flashpath._core import FlashpathError

    jobs = sorted(p for p in REAL_RUNS.iterdir() if (p / "job.fio").is_file())
    assert jobs, f"test data missing: no jobs under {REAL_RUNS}"
    out: dict[str, str] = {}
    for job in jobs:
        for profile in flashpath.profiles():
            key = f"fio/{job.name}/{profile}"
            try:
                res = flashpath.run(job / "job.fio", device=profile, output_format="json")
            except FlashpathError as err:
                # The message names the job file: keep it relative to the
                # repository so the bytes do not depend on the checkout.
                msg = str(err.args[0]).replace(str(REPO) + os.sep, "")
                out[f"{key}.err"] = msg + "\n"
                continue
            out[f"{key}.json"] = res.text
    return out


def all_outputs() -> dict[str, str]:
    return {**fio_outputs(), **reproduce_outputs()}


def stored() -> dict[str, str]:
    return {
        str(p.relative_to(GOLDEN)): p.read_text()
        for p in sorted(GOLDEN.rglob("*"))
        if p.is_file() and p.name != "README.md"
    }


def update() -> None:
    fresh = all_outputs()
    for rel in set(stored()) - set(fresh):
        (GOLDEN / rel).unlink()
    for rel, text in fresh.items():
        path = GOLDEN / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"wrote {len(fresh)} golden files under {GOLDEN}")
    from flashpath import validation

    validation.write_report(reproduce_rows(), str(VALIDATION_PAGE), ftl_wa_rows())
    print(f"wrote {VALIDATION_PAGE} and its plots")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="rewrite tests/golden from this build")
    args = ap.parse_args()
    if args.update:
        update()
        return 0
    fresh, old = all_outputs(), stored()
    changed = sorted(k for k in set(fresh) | set(old) if fresh.get(k) != old.get(k))
    if not VALIDATION_PAGE.is_file() or VALIDATION_PAGE.read_text() != validation_page():
        changed.append(str(VALIDATION_PAGE.relative_to(REPO)))
    for k in changed:
        print(f"differs: {k}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
