"""The golden outputs (tests/golden, see tests/golden_outputs.py) match this
build byte for byte: a change that moves a simulated number, or a message,
must update them in the same commit and say why."""

from __future__ import annotations

import difflib
import re

import pytest

import golden_outputs as golden


def _compare(fresh: dict[str, str], prefix: str) -> None:
    old = {k: v for k, v in golden.stored().items() if k.startswith(prefix)}
    assert old, f"no golden files under tests/golden/{prefix}"
    missing = sorted(set(fresh) - set(old))
    stale = sorted(set(old) - set(fresh))
    assert not missing, f"outputs with no golden file (run --update): {missing[:10]}"
    assert not stale, f"golden files this build no longer makes: {stale[:10]}"
    for name in sorted(fresh):
        if fresh[name] != old[name]:
            diff = "".join(
                difflib.unified_diff(
                    old[name].splitlines(keepends=True),
                    fresh[name].splitlines(keepends=True),
                    f"golden/{name}",
                    "this build",
                    n=1,
                )
            )
            pytest.fail(
                f"tests/golden/{name} differs from this build "
                f"(python3 tests/golden_outputs.py --update after a deliberate change):\n"
                + diff[:4000]
            )


def test_fio_jobs_on_every_profile_are_golden() -> None:
    _compare(golden.fio_outputs(), "fio/")


def test_reproduce_all_is_golden() -> None:
    _compare(golden.reproduce_outputs(), "reproduce-all")


def test_validation_page_is_current() -> None:
    fresh = golden.validation_page()
    page = golden.VALIDATION_PAGE
    assert page.is_file(), "no docs/validation.md (python3 tests/golden_outputs.py --update)"
    if page.read_text() != fresh:
        diff = "".join(
            difflib.unified_diff(
                page.read_text().splitlines(keepends=True),
                fresh.splitlines(keepends=True),
                "docs/validation.md",
                "this build",
                n=1,
            )
        )
        pytest.fail(
            "docs/validation.md is not current (python3 tests/golden_outputs.py --update):\n"
            + diff[:4000]
        )
    # Every plot the page shows is in the repository.
    for link in re.findall(r"!\[[^]]*\]\(([^)]+)\)", fresh):
        assert (page.parent / link).is_file(), f"docs/{link} is missing"
