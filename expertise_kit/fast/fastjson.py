"""JSON for the pre-task hook without importing ``json``: ``json`` imports ``re``, which imports
``enum``, and together they cost ~5 ms, more than half the hook's budget. CPython's own C accelerator
(``_json``) parses and escapes exactly as ``json`` does; elsewhere we fall back to ``json``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["dumps", "loads", "quote"]


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)
    memo: dict[str, str] = {}


try:
    from _json import encode_basestring as _encode
    from _json import make_scanner as _make_scanner

    _scan: Any = _make_scanner(_Context())  # type: ignore[arg-type]  # duck-typed context, as json.decoder passes
except ImportError:  # not CPython: the json module it is
    _scan = None


def loads(text: str) -> Any:
    stripped = text.strip()
    if _scan is None:
        import json

        return json.loads(stripped)
    try:
        value, end = _scan(stripped, 0)
    except StopIteration:
        raise ValueError("not JSON") from None
    except SystemError:
        # CPython 3.11's scanner builds its syntax errors from json.decoder; with ``json`` not imported it
        # returns NULL and sets no exception (an unterminated string, a cut-off object). On this error
        # path the json module's cost doesn't matter, and its error says where the input went wrong.
        import json

        return json.loads(stripped)
    if end != len(stripped):
        raise ValueError(f"extra data after JSON at character {end}")
    return value


def quote(text: str) -> str:
    """A JSON string literal, non-ASCII kept as is (like ``json.dumps(..., ensure_ascii=False)``)."""
    if _scan is None:
        import json

        return json.dumps(text, ensure_ascii=False)
    return str(_encode(text))


def dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` for plain data: dicts with text keys, lists, text, integers,
    booleans and None (anything else is a ``TypeError``)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is str:
        return quote(value)
    if type(value) is list:
        return "[" + ", ".join(dumps(item) for item in value) + "]"
    if type(value) is dict and all(type(key) is str for key in value):
        return "{" + ", ".join(f"{quote(key)}: {dumps(item)}" for key, item in value.items()) + "}"
    raise TypeError(f"not plain JSON data: {type(value).__name__}")
