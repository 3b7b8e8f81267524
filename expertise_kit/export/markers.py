"""Our section inside a markdown file someone else owns: found between our two marker lines, replaced in
place, or appended; every byte outside it left as it was.

A marker is a whole line (at most three spaces of indent, as CommonMark allows for an HTML block) that
starts with ``<!-- expertise:begin`` or ``<!-- expertise:end`` and ends with ``-->``. Lines inside a
fenced code block are not markers, so a file that shows our markers as an example keeps working. Anything
ambiguous (a begin without an end, two begins, an end first) is refused with the file and line: guessing
which lines are ours could delete the user's.
"""

from __future__ import annotations

from pathlib import Path

from expertise_kit.errors import UserError

__all__ = ["BEGIN", "END", "Section", "find_section", "splice_section"]

BEGIN = "<!-- expertise:begin (written by `expertise export` from .expertise/; edit those files, not this section) -->"
END = "<!-- expertise:end -->"
_BEGIN_PREFIX = "<!-- expertise:begin"
_END_PREFIX = "<!-- expertise:end"
_FIX = "leave exactly one `<!-- expertise:begin ... -->` line and one `<!-- expertise:end -->` line after it"


class Section:
    """Where our section is: character offsets of the begin line's start and of the end line's end (its
    newline included), and whether that end line had a newline."""

    __slots__ = ("start", "stop", "newline")

    def __init__(self, start: int, stop: int, newline: bool) -> None:
        self.start = start
        self.stop = stop
        self.newline = newline


def _lines(text: str) -> list[tuple[int, int, str]]:
    """(start, end with its newline, the line without it) for each line; only ``\\n`` ends a line."""
    found = []
    start = 0
    while start < len(text):
        stop = text.find("\n", start)
        stop = len(text) if stop < 0 else stop + 1
        found.append((start, stop, text[start:stop].rstrip("\r\n")))
        start = stop
    return found


def _marker(line: str) -> str | None:
    body = line.rstrip()
    indent = len(body) - len(body.lstrip(" "))
    if indent > 3 or not body.endswith("-->"):
        return None
    body = body.lstrip(" ")
    if body.startswith(_BEGIN_PREFIX):
        return "begin"
    if body.startswith(_END_PREFIX):
        return "end"
    return None


def _fence(line: str) -> tuple[str, int] | None:
    """The fence character and length when ``line`` opens or closes a fenced code block."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3 or not body:
        return None
    char = body[0]
    if char not in "`~":
        return None
    length = len(body) - len(body.lstrip(char))
    if length < 3 or (char == "`" and "`" in body[length:]):
        return None
    return char, length


def find_section(text: str, path: Path | str) -> tuple[Section | None, int | None]:
    """Our section in ``text`` (or None), and the line of a code fence left open at the end (or None).

    Raises a UserError naming ``path`` and the line for markers that don't pair up.
    """
    begin: tuple[int, int] | None = None  # (line number, start offset)
    section: Section | None = None
    fence: tuple[str, int, int] | None = None  # (char, length, line number)
    for number, (start, stop, line) in enumerate(_lines(text), 1):
        opened = _fence(line)
        if fence is not None:
            if opened and opened[0] == fence[0] and opened[1] >= fence[1] and not line.strip().strip(fence[0]):
                fence = None  # a closing fence: the same character, at least as many, nothing else
            continue
        if opened is not None:
            fence = (opened[0], opened[1], number)
            continue
        kind = _marker(line)
        if kind == "begin":
            if begin is not None or section is not None:
                first = begin[0] if begin is not None else _line_at(text, section.start) if section else number
                problem = f"a second expertise:begin marker (the first is at line {first})"
                raise UserError(problem, path=path, line=number, hint=_FIX)
            begin = (number, start)
        elif kind == "end":
            if begin is None:
                problem = "a second expertise:end marker" if section is not None else "expertise:end before any begin"
                raise UserError(problem, path=path, line=number, hint=_FIX)
            section = Section(begin[1], stop, text[start:stop].endswith("\n"))
            begin = None
    if begin is not None:
        raise UserError("expertise:begin marker with no expertise:end after it", path=path, line=begin[0], hint=_FIX)
    return section, (fence[2] if fence is not None else None)


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _newline(text: str) -> str:
    """The file's own line ending: CRLF when most of its lines end that way."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 > text.count("\n") else "\n"


def splice_section(text: str, body: str, path: Path | str) -> str:
    """``text`` with our section (``body``: the lines between the markers, ``\\n``-separated) in place of
    the old one, or appended after a blank line. Only our lines change; the file's line ending is kept."""
    section, open_fence = find_section(text, path)
    newline = _newline(text)
    lines = [BEGIN, *body.split("\n"), END]
    if section is not None:
        block = newline.join(lines) + (newline if section.newline else "")
        return text[: section.start] + block + text[section.stop :]
    if open_fence is not None:
        raise UserError(
            "ends inside a code block (the ``` fence opened here is never closed)",
            path=path,
            line=open_fence,
            hint="close the fence, then export again; our section appended there would be read as code",
        )
    block = newline.join(lines) + newline
    if not text:
        return block
    if text.endswith(("\n\n", "\n\r\n")):
        return text + block  # it ends with a blank line already
    return text + (newline if text.endswith("\n") else newline * 2) + block
