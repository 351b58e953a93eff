"""Quoting what the user wrote in messages."""

from __future__ import annotations


def shown(text: str, limit: int = 64) -> str:
    """`text` quoted for a message: control characters and undecodable
    bytes escaped, cut short past `limit` characters."""
    escaped = text[:limit].encode("unicode_escape", "backslashreplace").decode("ascii")
    quoted = "'" + escaped.replace("'", "\\'") + "'"
    return quoted if len(text) <= limit else f"{quoted}... ({len(text)} characters)"
