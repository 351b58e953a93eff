"""Where each key of a TOML document is written: Python's tomllib gives
values but no positions, and a message about a sweep spec must name the
line. This reads only the shape of the text (headers, keys, strings,
brackets, comments); the values come from tomllib, which has already
accepted the text."""

from __future__ import annotations

import re

# A TOML table's path, each [[array]] table with its index.
TablePath = tuple[str | int, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key_parts(text: str, pos: int) -> tuple[list[str], int]:
    """The dotted key starting at `pos`; returns its parts and the
    position after it."""
    parts: list[str] = []
    while True:
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos >= len(text):
            return parts, pos
        c = text[pos]
        if c == '"':
            end = pos + 1
            buf = []
            while end < len(text) and text[end] != '"':
                if text[end] == "\\" and end + 1 < len(text):
                    buf.append(_ESCAPES.get(text[end + 1], text[end + 1]))
                    end += 2
                    continue
                buf.append(text[end])
                end += 1
            parts.append("".join(buf))
            pos = end + 1
        elif c == "'":
            end = text.find("'", pos + 1)
            end = len(text) if end < 0 else end
            parts.append(text[pos + 1 : end])
            pos = end + 1
        else:
            m = _BARE.match(text, pos)
            if not m:
                return parts, pos
            parts.append(m.group())
            pos = m.end()
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos < len(text) and text[pos] == ".":
            pos += 1
            continue
        return parts, pos


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r", "b": "\b", "f": "\f"}


class _Scanner:
    """Tracks what a line's value leaves open: a multi-line string, or
    arrays and inline tables not yet closed."""

    def __init__(self) -> None:
        self.in_string: str | None = None  # '"""' or "'''"
        self.depth = 0

    @property
    def open(self) -> bool:
        return self.in_string is not None or self.depth > 0

    def scan(self, text: str, pos: int) -> None:
        n = len(text)
        while pos < n:
            if self.in_string:
                end = self._string_end(text, pos, self.in_string)
                if end < 0:
                    return
                self.in_string = None
                pos = end
                continue
            c = text[pos]
            if c == "#":
                return
            if text.startswith('"""', pos) or text.startswith("'''", pos):
                self.in_string = text[pos : pos + 3]
                pos += 3
                continue
            if c == '"':
                pos = self._quoted_end(text, pos + 1, '"')
                continue
            if c == "'":
                pos = self._quoted_end(text, pos + 1, "'")
                continue
            if c in "[{":
                self.depth += 1
            elif c in "]}":
                self.depth = max(0, self.depth - 1)
            pos += 1

    @staticmethod
    def _quoted_end(text: str, pos: int, quote: str) -> int:
        while pos < len(text):
            if quote == '"' and text[pos] == "\\":
                pos += 2
                continue
            if text[pos] == quote:
                return pos + 1
            pos += 1
        return pos

    @staticmethod
    def _string_end(text: str, pos: int, delim: str) -> int:
        """The position after the closing `delim` (and any quotes that
        run on from it, as TOML allows), or -1 if the line has none."""
        while pos < len(text):
            if delim == '"""' and text[pos] == "\\":
                pos += 2
                continue
            if text.startswith(delim, pos):
                end = pos + 3
                while end < len(text) and text[end] == delim[0] and end - pos < 5:
                    end += 1
                return end
            pos += 1
        return -1


def key_lines(text: str) -> dict[tuple[TablePath, str], int]:
    """(table, dotted key) -> line number (1-based) of every key and table
    written in `text`. The table is the top-level table the key belongs to
    (`()` for the root, `("grid",)`, `("zip", 0)` for the first [[zip]]);
    the key is dotted below it, so `[grid.fio]` `iodepth = ...` and
    `[grid]` `fio.iodepth = ...` both give `(("grid",), "fio.iodepth")`.
    Every shorter prefix of a key is recorded too (its first line), and
    each table's header as the key ""."""
    lines: dict[tuple[TablePath, str], int] = {}
    counts: dict[str, int] = {}
    table: TablePath = ()
    below: list[str] = []
    scanner = _Scanner()

    def record(path: TablePath, parts: list[str], number: int) -> None:
        for i in range(len(parts) + 1):
            lines.setdefault((path, ".".join(parts[:i])), number)

    for number, line in enumerate(text.split("\n"), start=1):
        if scanner.open:
            scanner.scan(line, 0)
            continue
        stripped = line.lstrip()
        start = len(line) - len(stripped)
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            array = stripped.startswith("[[")
            parts, _ = _key_parts(line, start + (2 if array else 1))
            if not parts:
                continue
            head = parts[0]
            if array and len(parts) == 1:
                index = counts.get(head, 0)
                counts[head] = index + 1
                table = (head, index)
            elif array:
                # [[a.b]]: an array inside table a; keys under it are
                # named from a's top level.
                table = (head,)
            else:
                index = counts.get(head)
                table = (head,) if index is None else (head, index - 1)
            below = parts[1:]
            record(table, below, number)
            continue
        parts, pos = _key_parts(line, start)
        if not parts:
            continue
        record(table, below + parts, number)
        # Dotted keys at the root name their table by their first part.
        if not table and len(parts) > 1:
            record((parts[0],), parts[1:], number)
        if pos < len(line) and line[pos] == "=":
            scanner.scan(line, pos + 1)
    return lines


def line_of(lines: dict[tuple[TablePath, str], int], table: TablePath, key: str) -> int | None:
    """The line of `key` in `table`, or of its closest written prefix, or
    of the table's header; None when nothing of it is written (a key of
    an inline table, say, is found by its table's key)."""
    parts = key.split(".") if key else []
    for i in range(len(parts), -1, -1):
        found = lines.get((table, ".".join(parts[:i])))
        if found is not None:
            return found
    return None
