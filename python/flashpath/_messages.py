"""Quoting what the user wrote in messages."""

from __future__ import annotations


def shown(text: str, limit: int = 64) -> str:
    """`text` quoted for a message: control characters and undecodable
    bytes escaped, cut short past `limit` characters."""
    escaped = text[:limit].encode("unicode_escape", "backslashreplace").decode("ascii")
    quoted = "'" + escaped.replace("'", "\\'") + "'"
    return quoted if len(text) <= limit else f"{quoted}... ({len(text)} characters)"


# The longest path Linux takes (PATH_MAX).
PATH_MAX = 4096


def named(path: str) -> str:
    """A file name for a message: as written when it is printable text no
    longer than a path can be, else quoted as `shown` quotes it."""
    plain = path.isprintable() and len(path) <= PATH_MAX
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        plain = False
    return path if plain else shown(path, limit=256)


# A message longer than this is cut: it quotes far more input than a
# reader needs (the core quotes at most a line of it).
MESSAGE_MAX = 2000


def printable(message: str) -> str:
    """A message safe for a terminal: control characters (escape
    sequences included) and undecodable bytes escaped, cut short past
    MESSAGE_MAX characters."""
    out = []
    for c in message[:MESSAGE_MAX]:
        code = ord(c)
        if code < 32 or 127 <= code < 160:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code < 0xE000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(c)
    if len(message) > MESSAGE_MAX:
        out.append(f"... ({len(message)} characters)")
    return "".join(out)
