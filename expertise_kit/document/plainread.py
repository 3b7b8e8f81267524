"""Reading a file laid out as expertise_kit writes it, in plain Python: the merge driver's reader.

The merge driver reads three versions of a domain file and its result, in a process git starts for each
file, so importing a YAML parser and composing its node graph is most of what the driver costs. The files
are nearly always in the layout our writers leave (``plainrender``, ruamel with our settings): top-level
keys at column 0, block lists of one-line items, each value on its key's line as a plain or quoted scalar
or a one-line flow list or mapping. ``read_plain`` reads exactly that layout, line by line, and returns
None for anything else: a multi-line or block scalar, a nested block, an anchor, a tag, a tab, a
document marker, a scalar YAML might read as a number, a date or a boolean, a key that repeats, a
character outside the printable set. The caller then reads the file with libyaml.

Whatever it returns is what ``yamlio.parse_yaml_text`` reads as plain data; ``tests/test_plainread.py``
checks that on generated files and on every file the test data holds. Standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["read_plain"]

# Plain scalars the full parse reads as something other than text, or that YAML 1.1 and 1.2 read differently.
_WORDS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset(("~", "null", "Null", "NULL"))
_ODD_KEYS = frozenset(("true", "false", "null"))
_FLOW_STOPS = frozenset(",[]{}#:'\"")  # where a plain scalar inside [...] or {...} ends, or can't go on
# Checked with string methods, not regular expressions: compiling those costs the merge driver's start-up.


class _Unsure(Exception):
    pass


def _is_key(name: str) -> bool:
    """``[A-Za-z_][A-Za-z0-9_-]*``."""
    return name.isascii() and name[:1] != "-" and name.replace("-", "_").isidentifier()


def _is_decimal(value: str) -> bool:
    """``-?(0|[1-9][0-9]{0,17})``."""
    digits = value[1:] if value[:1] == "-" else value
    return digits.isascii() and digits.isdigit() and len(digits) <= 18 and (digits == "0" or digits[0] != "0")


def _is_id_from_digit(value: str) -> bool:
    """Text such as ``5c0375b4-57a5`` that no resolver reads as a number or a date: a digit first, then
    letters, digits, ``_.-``, and a letter other than e (an exponent); not ``0x1F``, ``0o17``, ``0b101``
    or ``2026-...``."""
    if not value.isascii() or not value[0].isdigit() or value.startswith(("0x", "0o", "0b")):
        return False
    if value[:4].isdigit() and value[4:5] == "-" and value[5:6].isdigit():
        return False
    if not value.replace("_", "0").replace(".", "0").replace("-", "0").isalnum():
        return False
    return any(c.isalpha() for c in value.replace("e", "").replace("E", ""))


def _plain_scalar(text: str, flow: bool) -> Any:
    """A plain scalar's value: text that starts with a letter, an int, a boolean or null."""
    value = text.rstrip(" ")
    if not value:
        raise _Unsure
    if value in _WORDS:
        return _WORDS[value]
    if value in _NULLS:
        return None
    first = value[0]
    if first.isalpha() or first in "_/":
        if ": " in value or value.endswith(":") or (flow and ":" in value):
            raise _Unsure
        return value
    if _is_decimal(value):
        return int(value)
    if _is_id_from_digit(value):
        return value
    raise _Unsure  # an indicator, a number of another kind, a date, a path starting with a dot: libyaml decides


def _spaces(text: str, at: int) -> int:
    while text[at : at + 1] == " ":
        at += 1
    return at


def _scalar_at(text: str, start: int, flow: bool) -> tuple[Any, int]:
    """The scalar starting at ``start`` and where it ends. Plain scalars in a block end at the line's
    comment; in a flow they end at a comma or the bracket."""
    first = text[start : start + 1]
    if first == "'":  # '' is a quote inside
        at = start + 1
        while True:
            close = text.find("'", at)
            if close < 0:
                raise _Unsure  # closed on another line, if at all
            if text[close + 1 : close + 2] != "'":
                return text[start + 1 : close].replace("''", "'"), close + 1
            at = close + 2
    if first == '"':
        close = text.find('"', start + 1)
        if close < 0 or "\\" in text[start + 1 : close]:
            raise _Unsure  # an escape: left to libyaml
        return text[start + 1 : close], close + 1
    if flow:
        end = start
        while end < len(text) and text[end] not in _FLOW_STOPS:
            end += 1
        if end == start:
            raise _Unsure
        return _plain_scalar(text[start:end], True), end
    cut = text.find(" #", start)
    end = len(text) if cut < 0 else cut
    return _plain_scalar(text[start:end], False), end


def _flow(text: str, start: int, nested: bool = False) -> tuple[Any, int]:
    """A one-line flow list or mapping starting at ``start`` (its bracket), and where it ends: of scalars,
    or a mapping whose values may be lists of scalars (``nested``: the list inside one)."""
    mapping = text[start] == "{"
    if nested and mapping:
        raise _Unsure
    close = "}" if mapping else "]"
    result: Any = {} if mapping else []
    at = _spaces(text, start + 1)
    while text[at : at + 1] != close:
        if mapping:
            colon = text.find(":", at)
            key = text[at:colon]
            if colon < 0 or not _is_key(key) or text[colon + 1 : colon + 2] != " ":
                raise _Unsure
            if key in result or key.lower() in _ODD_KEYS:
                raise _Unsure
            at = _spaces(text, colon + 1)
        opening = text[at : at + 1]
        if opening in ("[", "{") and mapping:
            value, at = _flow(text, at, nested=True)  # a core file's sessions: [a, b]
        elif opening in ("[", "{", ""):
            raise _Unsure  # nested deeper, or not closed on this line
        else:
            value, at = _scalar_at(text, at, True)
        if mapping:
            result[key] = value
        else:
            result.append(value)
        at = _spaces(text, at)
        if text[at : at + 1] != ",":
            if text[at : at + 1] != close:
                raise _Unsure
            break
        at = _spaces(text, at + 1)
        if text[at : at + 1] == close:
            raise _Unsure  # a trailing comma
    return result, at + 1


def _tail_ok(rest: str) -> bool:
    """Nothing after a value but spaces, or a comment after at least one."""
    stripped = rest.lstrip(" ")
    return not stripped or (stripped[0] == "#" and len(stripped) < len(rest))


def _value(text: str) -> Any:
    """The value after ``key: `` (or ``- ``) on one line, with an optional comment after it."""
    first, last = text[0], text[-1]
    # The layouts our writers leave, read without a regex: a quoted time, a list of ids, a word.
    if first == "'" and last == "'" and "'" not in text[1:-1] and len(text) > 1:
        return text[1:-1]
    inner = text[1:-1]
    if first == "[" and last == "]" and not any(stop in inner for stop in "[]{}#:'\""):
        return [_plain_scalar(part.strip(" "), True) for part in inner.split(",")] if inner.strip(" ") else []
    if first.isalpha() and " #" not in text and last != ":":
        return _plain_scalar(text, False)
    if first in ("[", "{"):
        value, end = _flow(text, 0)
    else:
        value, end = _scalar_at(text, 0, False)
    if not _tail_ok(text[end:]):
        raise _Unsure
    return value


def _split_key(text: str) -> tuple[str, str | None] | None:
    """``key: rest`` as (key, rest or None for an empty value); None when ``text`` is not a key and value."""
    key, colon, rest = text.partition(":")
    if not colon or (rest and rest[0] != " ") or not _is_key(key):
        return None
    if key.lower() in _ODD_KEYS:
        raise _Unsure  # a key the full parse reads as a boolean or null, or YAML 1.1 does
    rest = rest.lstrip(" ")
    return key, rest or None


def read_plain(text: str, seen: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The file's data as ``yamlio.parse_yaml_text`` reads it (its ``plain``), when the file is in the
    layout our writers leave; None when it is not, or anything about it is unsure.

    ``seen``: list items read before, by their lines. The three versions of a file a merge reads share
    most entries, so each is read once, and the versions hold the very same objects: nothing that reads
    them may change them in place."""
    try:
        return _read(text, {} if seen is None else seen)
    except (_Unsure, IndexError):
        return None


def _read(text: str, seen: dict[str, Any]) -> dict[str, Any]:
    if not text.replace("\n", "").isprintable() or " \n" in text or text.endswith(" "):
        raise _Unsure  # a tab, a carriage return, a control or format character, a trailing space
    result: dict[str, Any] = {}
    section: str | None = None  # a top-level key whose value is the block list being read
    items: list[Any] = []
    dash = content = -1  # the list's dash column and its mapping items' content column
    lines = text.split("\n")
    count, at = len(lines), 0
    while at < count:
        line = lines[at]
        at += 1
        if not line or line[0] == "#":
            continue
        if line[0] in " -":
            stripped = line.lstrip(" ")
            if stripped[0] == "#":
                continue
            indent = len(line) - len(stripped)
            if stripped[:2] != "- " or section is None or (dash >= 0 and indent != dash):
                raise _Unsure  # a nested block, a continued scalar: not one line per value
            dash = indent
            body = stripped[2:].lstrip(" ")
            column = len(line) - len(body)
            start, pad = at - 1, " " * column
            while at < count and lines[at].startswith(pad) and (lines[at][column] != " " or _comment(lines[at])):
                at += 1  # the item's other keys, and comments among them
            block = "\n".join(lines[start:at])
            item = seen.get(block)
            if item is None:
                item = seen[block] = _item(body, lines[start + 1 : at], seen)
            if at > start + 1 or type(item) is dict:
                if content >= 0 and column != content:
                    raise _Unsure
                content = column
            items.append(item)
            continue
        if section is not None:
            result[section] = items or None
            section, items, dash, content = None, [], -1, -1
        pair = _split_key(line)
        if pair is None or pair[0] in result:
            raise _Unsure  # a document marker, a directive, a top-level scalar, a repeated key
        key, rest = pair
        if rest is None or rest[0] == "#":
            section = key
        else:
            result[key] = _value(rest)
    if section is not None:
        result[section] = items or None
    if not result:
        raise _Unsure  # empty, or only comments: the full parse refuses it
    return result


def _comment(line: str) -> bool:
    return line.lstrip(" ")[:1] == "#"


def _item(body: str, more: list[str], seen: dict[str, Any]) -> Any:
    """A list item: ``body`` after its dash, and the lines after it at its content column. Its key lines
    are remembered in ``seen`` too (under a NUL, which no line read here holds): entries repeat them."""
    if _split_key(body) is None:
        if not all(_comment(line) for line in more):
            raise _Unsure  # a scalar continued on the next line
        return _value(body)
    item: dict[str, Any] = {}
    for line in (body, *more):
        line = line.lstrip(" ")
        if line[0] == "#":
            continue
        hit = seen.get("\0" + line)
        if hit is None:
            pair = _split_key(line)
            if pair is None or (pair[1] is not None and pair[1][0] == "#"):
                raise _Unsure  # not a key; an empty value with a comment, which may open a nested block
            value = None if pair[1] is None else _value(pair[1])
            hit = (pair[0], tuple(value) if type(value) is list else value)
            if type(value) is not dict:
                seen["\0" + line] = hit
        key, value = hit
        if key in item:
            raise _Unsure  # a repeated key
        item[key] = list(value) if type(value) is tuple else value
    return item
