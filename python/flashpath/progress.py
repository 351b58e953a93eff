"""Progress of many simulations on stderr: points done, rate and ETA
(tqdm), shown on a terminal or when asked; a one-line summary at the
end either way."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    """A bar over `total` points of which `already` are done (reused from
    an earlier run). `show`: True or False, or None to show it only when
    stderr is a terminal."""

    def __init__(
        self,
        what: str,
        total: int,
        already: int = 0,
        show: bool | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.what = what
        self.total = total
        self.already = already
        self.done = 0
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()
        visible = self.stream.isatty() if show is None else show
        self.bar: Any = None
        if visible and total > already:
            from tqdm import tqdm

            self.bar = tqdm(
                total=total,
                initial=already,
                desc=what,
                unit="pt",
                file=self.stream,
                dynamic_ncols=True,
                # The rate and ETA follow the points run here, not the
                # ones reused.
                smoothing=0.1,
                mininterval=0.2,
                leave=False,
            )

    def advance(self, label: str = "") -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix_str(label[:40], refresh=False)
            self.bar.update(1)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def close(self, summary: str | None = None) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if summary is not None:
            self.stream.write(summary + "\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rate(points: int, seconds: float) -> str:
    if seconds <= 0 or points == 0:
        return ""
    per = points / seconds
    return f", {per:.3g} points/s" if per >= 1 else f", {seconds / points:.3g} s/point"
