"""The shared layer's merge without parsing with ruamel: the quick path of ``shared.publish``.

Publishing merges this worktree's change into the shared file on every revision once another worktree
writes the same domain, and ruamel's pure-Python parser takes a tenth of a second and more for a file at
the cap, three or four times a merge. Here the three versions' data is already known (the transaction
has it; the shared file's was remembered by whoever wrote it), so the entry plan is made on plain data
with the merge driver's own rules (``versioning.merge``), and applied to the shared file's text by
lines: each section's items found by their dashes, an added or changed entry rendered as the splice
renders it, a removed one cut.

Nothing unverified comes out. The result is read back with libyaml (PyYAML's C parser, some fifty times
quicker than ruamel's) and must hold exactly the data planned, and it must stay within the line cap;
anything else (a hand-formatted section, a flow list, a value YAML 1.1 reads differently) returns None
and the caller takes the full merge.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from typing import Any

from expertise_kit.document.cap import count_lines
from expertise_kit.document.entries import parse_item
from expertise_kit.document.splice import Append, DeleteKey, Edit, Remove, Replace, SetKey, render_item
from expertise_kit.vocab import section, section_names

__all__ = ["quick_merge"]

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(.*)$")
_DASH = re.compile(r"^( *)-( +|$)")


class _Doc:
    """Enough of a ``DomainDoc`` for ``versioning.merge``'s planner: the plain data and its entries."""

    def __init__(self, plain: dict[str, Any]) -> None:
        self.plain = plain
        self.loaded = self

    def entries(self) -> Any:
        for name in section_names():
            for index, raw in enumerate(self.plain.get(name) or []):
                yield name, index, parse_item(name, raw)


def _plan(
    base: dict[str, Any] | None, ours: dict[str, Any], theirs: dict[str, Any], prefer: str | None = "theirs"
) -> list[Edit] | None:
    """The merge driver's entry plan on data; None when it can't be made here, or (``prefer=None``, as the
    driver merges) when it holds a true conflict, which the full merge marks."""
    from pydantic import ValidationError

    from expertise_kit.versioning.merge import _Plan, _plan_entries, _plan_keys

    plan = _Plan(prefer=prefer)
    try:
        docs = (_Doc(base) if base is not None else None, _Doc(ours), _Doc(theirs))
        _plan_entries(*docs, plan)  # type: ignore[arg-type]
        _plan_keys(*docs, plan)  # type: ignore[arg-type]
    except (ValidationError, TypeError, ValueError, AttributeError):
        return None
    return None if plan.conflicts else plan.edits


def _sections(lines: list[str]) -> dict[str, tuple[int, int]] | None:
    """Top-level key -> (its line, the line its value ends before), from keys at column 0."""
    starts: list[tuple[str, int]] = []
    for number, line in enumerate(lines):
        if line[:1] in (" ", "\t", "#", "-", "\n", "\r", "") or line.startswith(("---", "...")):
            continue
        match = _KEY.match(line.rstrip("\r\n"))
        if match is None:
            return None  # a top-level line that is not a simple key: not ours to cut
        starts.append((match.group(1), number))
    found: dict[str, tuple[int, int]] = {}
    for position, (key, number) in enumerate(starts):
        found[key] = (number, starts[position + 1][1] if position + 1 < len(starts) else len(lines))
    return found


def _blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _items(lines: list[str], start: int, end: int) -> tuple[list[tuple[int, int]], int, int] | None:
    """The items of a block list between ``start`` (the key's line) and ``end``: their line spans, the dash
    column and the content offset. None for anything but a block list."""
    spans: list[tuple[int, int]] = []
    column = offset = -1
    for number in range(start + 1, end):
        line = lines[number]
        if _blank(line):
            continue
        match = _DASH.match(line)
        indent = len(line) - len(line.lstrip(" "))
        if match is not None and (column < 0 or len(match.group(1)) == column):
            if column < 0:
                column = len(match.group(1))
                offset = len(match.group(0)) - column if match.group(2) else 2  # from the dash to the text
            spans.append((number, number + 1))
        elif spans and indent > column:
            spans[-1] = (spans[-1][0], number + 1)
        else:
            return None
    return spans, column, offset


def _expected(plain: dict[str, Any], edits: list[Edit]) -> dict[str, Any]:
    """The data after ``edits`` (item edits only, as ``_apply`` takes them), as ``splice.expected_plain``
    has it, copying only the lists edited: nothing here or after changes an entry in place."""
    result = dict(plain)
    touched = {e.section for e in edits if isinstance(e, (Append, Remove, Replace))}
    for name in touched:
        items = list(result.get(name) or [])
        removed = {e.index for e in edits if isinstance(e, Remove) and e.section == name}
        for e in edits:
            if isinstance(e, Replace) and e.section == name:
                items[e.index] = e.item
        kept = [item for index, item in enumerate(items) if index not in removed]
        appended = [e.item for e in edits if isinstance(e, Append) and e.section == name]
        result[name] = kept + appended if appended or kept else None
    return result


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return ("datetime", moment.astimezone(timezone.utc).isoformat())
    if isinstance(value, date):
        return value.isoformat()
    return value


def _apply(text: str, plain: dict[str, Any], edits: list[Edit]) -> str | None:
    if "\r" in text or "\t" in text:
        return None
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    sections = _sections(lines)
    if sections is None:
        return None
    # Line patches (start, end, new lines), applied bottom-up.
    patches: list[tuple[int, int, list[str]]] = []
    by_section: dict[str, list[Edit]] = {}
    for edit in edits:
        if isinstance(edit, (Append, Remove, Replace)):
            by_section.setdefault(edit.section, []).append(edit)
        elif isinstance(edit, (SetKey, DeleteKey)):
            return None  # a top-level value changed: rare; the full merge keeps its comment
    for name, section_edits in by_section.items():
        where = sections.get(name)
        if where is None:
            return None
        key_line, end = where
        rest = lines[key_line].rstrip("\n")[len(name) + 1 :].strip()
        spans: list[tuple[int, int]]
        if rest == "[]":
            spans, column, offset = [], 2, 2
            flow_empty = True
        elif rest == "" or rest.startswith("#"):
            found = _items(lines, key_line, end)
            if found is None:
                return None
            spans, column, offset = found
            if column < 0:
                column, offset = 2, 2
            flow_empty = False
        else:
            return None
        if len(spans) != len(plain.get(name) or []):
            return None
        removed = {e.index for e in section_edits if isinstance(e, Remove)}
        replaced = {e.index: e.item for e in section_edits if isinstance(e, Replace)}
        appended = [e.item for e in section_edits if isinstance(e, Append)]
        for index in sorted(removed | set(replaced), reverse=True):
            if index >= len(spans):
                return None
            first, last = spans[index]
            new = [] if index in removed else render_item(replaced[index], column, offset)
            patches.append((first, last, new))
        if appended:
            rendered = [line for item in appended for line in render_item(item, column, offset)]
            if flow_empty:
                patches.append((key_line, key_line + 1, [f"{name}:\n", *rendered]))
            else:
                after = spans[-1][1] if spans else key_line + 1
                patches.append((after, after, rendered))
    for first, last, new in sorted(patches, key=lambda p: (p[0], p[1]), reverse=True):
        lines[first:last] = new
    return "".join(lines)


def quick_merge(
    base: dict[str, Any] | None,
    shared_text: str,
    shared: dict[str, Any],
    new: dict[str, Any],
    *,
    line_cap: int,
    prefer: str | None = "theirs",
) -> tuple[str, dict[str, Any]] | None:
    """This worktree's change (``base`` -> ``new``, their data) applied to the shared file (its text and
    data): (text, data), verified; None when the full merge must do it. ``prefer=None``: a true conflict
    is left to the full merge, which marks it (the merge driver)."""
    try:
        import yaml  # type: ignore[import-untyped]  # PyYAML, for its C parser only
    except ImportError:
        return None
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        return None
    # Only the sections of the kinds this worktree changed are planned; the others stay as the shared file
    # has them. Ids are matched across all sections of a kind (one text can't be a pattern and a best
    # practice both), so every section of a changed kind is planned.
    sections = set(section_names())
    kinds = {section(name).kind for name in sections if (base or {}).get(name) != new.get(name)}
    changed = {name for name in sections if section(name).kind in kinds}

    def only(plain: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in plain.items() if key not in sections or key in changed}

    edits = _plan(only(base) if base is not None else None, only(shared), only(new), prefer)
    if edits is None:
        return None
    if not edits:
        return shared_text, shared
    text = _apply(shared_text, shared, edits)
    if text is None or count_lines(text) > line_cap:
        return None
    expected = _expected(shared, edits)
    try:
        read = yaml.load(text, Loader=loader)  # noqa: S506 - the C *safe* loader
    except yaml.YAMLError:
        return None
    if not isinstance(read, dict) or (read != expected and _norm(read) != _norm(expected)):
        return None
    return text, expected
