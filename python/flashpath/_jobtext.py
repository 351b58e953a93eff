"""Writing fio job text: option values a job line can carry, and a job
file with options added to every job section (sweeps)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


def job_value_problem(value: str) -> str | None:
    """Why `value` cannot be written as an option's value in a fio job
    line, or None: fio's parser cuts a line at ';' and '#', expands '$'
    keywords, trims trailing blanks, and reads text."""
    if any(c in value for c in ";#$"):
        return "it holds ';', '#' or '$', which a fio job line cuts or expands"
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "it holds control characters"
    if value != value.rstrip():
        return "it ends in blanks"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "it is not UTF-8"
    return None


_READS = re.compile(r"^\s*(?:include\s+(?P<inc>\S.*?)|read_iolog\s*=\s*(?P<log>\S.*?))\s*$")


def files_read(text: str) -> list[tuple[str, str]]:
    """The files a job's lines name for reading, relative to its folder as
    fio resolves them: (name, the line), for each `include FILE` (fio's
    init.c) and `read_iolog=FILE`. For the output rule (flashpath.outputs)
    and for shipping a sweep's point to a worker."""
    found = []
    for line in text.splitlines():
        m = _READS.match(line)
        if m:
            found.append((m["inc"] or m["log"], line.strip()))
    return found


def _clean(raw: str) -> str:
    """A job line as fio's parser reads it (init.c, and the core's
    workload/fio/parse.rs clean_line): leading blanks stripped, cut at the
    first ';' and the first '#', trailing blanks stripped."""
    s = raw.lstrip()
    for stop in ";#":
        cut = s.find(stop)
        if cut >= 0:
            s = s[:cut]
    return s.rstrip()


def _section_name(raw: str) -> str | None:
    """The name of the section a line opens, or None."""
    s = _clean(raw)
    if s.startswith("[") and s.endswith("]"):
        return s[1:-1]
    return None


@dataclass(frozen=True)
class Composed:
    """A job file with options added. `origin[i]` says where line i + 1
    of `text` came from: an int is a line of the base job, a str the name
    of the option that was added there."""

    text: str
    origin: tuple[int | str, ...]

    def source_of(self, line: int | None) -> int | str | None:
        if line is None or not 1 <= line <= len(self.origin):
            return None
        return self.origin[line - 1]


def add_options(base: str, options: Sequence[tuple[str, str]]) -> Composed:
    """`base` with `name=value` lines at the end of every job section.

    fio takes the last value an option gets in a section, and a job's own
    section is read after [global], so a line at the end of each job
    section wins over whatever the file set (init.c parse_jobs_ini). The
    [global] sections are left alone: every job after them has its own
    section, which gets the lines."""
    lines = base.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    # Rust's str::lines (the core's reader) drops a '\r' before '\n'.
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    added = [f"{name}={value}" for name, value in options]
    out: list[str] = []
    origin: list[int | str] = []
    current: str | None = None

    def close_section() -> None:
        if current is not None and current != "global":
            out.extend(added)
            origin.extend(name for name, _ in options)

    for number, line in enumerate(lines, start=1):
        name = _section_name(line)
        if name is not None:
            close_section()
            current = name
        out.append(line)
        origin.append(number)
    close_section()
    return Composed("\n".join(out) + "\n", tuple(origin))
