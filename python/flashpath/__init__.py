"""flashpath: a simulator of the whole Linux flash-storage I/O path.

The simulation itself is the Rust core (``flashpath._core``); this package
orchestrates runs, reports and plots.
"""

from __future__ import annotations

from flashpath._core import FlashpathError, __version__
from flashpath.api import RunResult, profiles, run, sweep

__all__ = ["FlashpathError", "RunResult", "__version__", "profiles", "run", "sweep"]
