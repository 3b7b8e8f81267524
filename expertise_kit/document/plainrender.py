"""A new list item's lines as ``splice.render_item`` (ruamel) renders them, for the plain cases only.

The merge driver's quick path renders the entries it appends or replaces. Importing ruamel costs more than
the rest of that path, and most entries are plain: a one-line text, or a mapping of short ASCII values
with flow lists of session ids. ``render_plain`` renders exactly those, byte for byte as ruamel does
(``tests/test_driver_light.py`` compares the two), and returns None for anything else (a value that
needs quoting other than a time, a multi-line text, non-ASCII, a nested mapping, a flow-style core file),
which the caller then renders with ruamel. Standard library only.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["render_plain"]

_PLAIN_BLOCK = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.,()/'+=-]*")
_PLAIN_FLOW = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.()/'+=-]*")  # inside [...]: no commas
_COLONED = re.compile(r"[A-Za-z][A-Za-z0-9 _.,()/+=:-]*")  # no quote: ruamel double-quotes those
_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DATEISH = re.compile(r"\d{4}-\d")
_OTHER_LETTER = re.compile(r"[A-DF-Za-df-z]")  # a letter that can't be part of a number's exponent
_WORDS = frozenset(("true", "false", "yes", "no", "on", "off", "null", "y", "n"))
_LONGEST = 2000


class _Unsure(Exception):
    pass


def _plain_ok(text: str, pattern: re.Pattern[str]) -> bool:
    if not text or len(text) > _LONGEST or not pattern.fullmatch(text) or text.endswith(" "):
        return False
    if text.lower() in _WORDS or "  " in text:
        return False
    if text[0].isdigit():
        # A plain scalar starting with a digit is text only if no resolver reads it as a number or a date.
        return not _DATEISH.match(text) and not text.startswith(("0x", "0o", "0b")) and bool(_OTHER_LETTER.search(text))
    return True


def _scalar(value: Any, flow: bool) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if type(value) is str:
        if _plain_ok(value, _PLAIN_FLOW if flow else _PLAIN_BLOCK):
            return value
        if _quotable(value):
            return f"'{value}'"
    raise _Unsure


def _quotable(text: str) -> bool:
    """Text ruamel surely writes single-quoted: a time (else read as a timestamp), or words with ``: `` in
    them (else read as a mapping) and nothing else out of the ordinary."""
    if _MOMENT.fullmatch(text):
        return True
    return (
        ": " in text
        and len(text) <= _LONGEST
        and bool(_COLONED.fullmatch(text))
        and text[-1] not in " :"
        and "  " not in text
        and not text.startswith(("0x", "0o", "0b"))
    )


def _value(value: Any) -> str:
    """What follows ``key:`` on the key's own line."""
    if value is None:
        return ""
    if type(value) is list:
        return " [" + ", ".join(_scalar(v, True) for v in value) + "]"
    return " " + _scalar(value, False)


def render_plain(item: Any, dash_col: int, content_offset: int) -> list[str] | None:
    """``splice.render_item(item, dash_col, content_offset)`` when the item is plain; None otherwise."""
    if content_offset < 2:
        return None
    pad, head = " " * dash_col, "-" + " " * (content_offset - 1)
    try:
        if type(item) is str:
            return [f"{pad}{head}{_scalar(item, False)}\n"]
        if type(item) is not dict or not item or "path" in item:
            return None  # a learned core file is one flow mapping in ruamel's hands: left to it
        lines: list[str] = []
        for key, value in item.items():
            if type(key) is not str or not _KEY.fullmatch(key) or key.lower() in _WORDS:
                return None
            lead = head if not lines else " " * content_offset
            lines.append(f"{pad}{lead}{key}:{_value(value)}\n")
    except _Unsure:
        return None
    return lines
