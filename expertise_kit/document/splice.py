"""Edit a YAML file by splicing lines, so every byte we did not mean to touch stays.

ruamel's round-trip dump keeps comments but re-indents the whole document and re-flows some spacing, so
a hand-formatted file would come back changed in lines nobody edited. Instead we use ruamel's positions
to find each list item's lines, render only the new item with ruamel (so its quoting is right), and
splice. The result is parsed again and compared with the intended data; if the splice went wrong in some
corner of YAML we did not anticipate, we fall back to ruamel's own dump of the edited tree, which is also
checked. Nothing unverified is ever returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString

from expertise_kit.document.edits import Append, DeleteKey, Edit, Remove, Replace, SetKey, expected_data
from expertise_kit.document.plainrender import render_plain
from expertise_kit.document.yamlio import LoadedYaml, dump_to_text, fragment_yaml, parse_yaml_text, round_trip_yaml
from expertise_kit.errors import ExpertiseError

__all__ = [
    "Append",
    "Remove",
    "Replace",
    "SetKey",
    "DeleteKey",
    "Edit",
    "apply_edits",
    "render_item",
    "item_line_counts",
    "line_ending",
]



_DEFAULT_DASH_INDENT = 2
_DEFAULT_CONTENT_OFFSET = 2
_NULL_VALUE_TAIL = re.compile(r"\s*(#.*)?$")


@dataclass
class _Section:
    kind: str  # "block", "null", "flow_empty", "absent" or "other"
    key_line: int = 0
    key_col: int = 0
    dash_col: int = 0
    content_offset: int = _DEFAULT_CONTENT_OFFSET
    spans: tuple[tuple[int, int], ...] = ()  # [start, end) line range of each item
    insert_at: int = 0


def _find_dash(lines: list[str], line: int, col: int) -> tuple[int, int] | None:
    """Walk back from an item's content to the `-` that introduces it."""
    row, pos = line, col - 1
    while row >= 0:
        text = lines[row]
        while pos >= 0 and text[pos] in " \t":
            pos -= 1
        if pos >= 0:
            return (row, pos) if text[pos] == "-" and (pos == 0 or text[pos - 1] in " \t") else None
        row -= 1
        if row >= 0:
            pos = len(lines[row].rstrip("\r\n")) - 1
    return None


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _trim_end(lines: list[str], start: int, boundary: int, dash_col: int) -> int:
    """Drop trailing blank lines, document markers and comments that sit left of the item's content."""
    end = boundary
    while end > start + 1:
        stripped = lines[end - 1].strip()
        if stripped in ("", "...") or (stripped.startswith("#") and _indent(lines[end - 1]) <= dash_col):
            end -= 1
        else:
            break
    return end


def _analyse(loaded: LoadedYaml, lines: list[str], key: str) -> _Section:
    tree = loaded.tree
    if key not in tree:
        return _Section(kind="absent", insert_at=len(lines))
    keys = list(tree.keys())
    key_line, key_col = tree.lc.key(key)
    position = keys.index(key)
    boundary = tree.lc.key(keys[position + 1])[0] if position + 1 < len(keys) else len(lines)
    value = tree[key]
    value_line, value_col = tree.lc.value(key)
    if value is None:
        tail = lines[key_line].rstrip("\r\n")
        colon = tail.find(":", key_col + len(str(key)))
        if colon >= 0 and _NULL_VALUE_TAIL.fullmatch(tail[colon + 1 :]):
            return _Section(kind="null", key_line=key_line, key_col=key_col, insert_at=key_line + 1)
        return _Section(kind="other")
    if not isinstance(value, CommentedSeq):
        return _Section(kind="other")
    if len(value) == 0:
        text = lines[value_line] if value_line < len(lines) else ""
        if value_line == key_line and re.match(r"\[\s*\]", text[value_col:]):
            return _Section(kind="flow_empty", key_line=key_line, key_col=key_col, insert_at=key_line + 1)
        return _Section(kind="other")
    if lines[value_line][value_col : value_col + 1] == "[":
        return _Section(kind="other")
    starts: list[int] = []
    dash_cols: set[int] = set()
    content_offset = _DEFAULT_CONTENT_OFFSET
    for index in range(len(value)):
        item_line, item_col = value.lc.item(index)
        found = _find_dash(lines, item_line, item_col)
        if found is None:
            return _Section(kind="other")
        starts.append(found[0])
        dash_cols.add(found[1])
        if index == 0 and found[0] == item_line:
            content_offset = item_col - found[1]
    if len(dash_cols) != 1:
        return _Section(kind="other")
    dash_col = dash_cols.pop()
    spans = []
    for index, start in enumerate(starts):
        limit = starts[index + 1] if index + 1 < len(starts) else boundary
        spans.append((start, _trim_end(lines, start, limit, dash_col)))
    return _Section(
        kind="block",
        key_line=key_line,
        key_col=key_col,
        dash_col=dash_col,
        content_offset=max(2, content_offset),
        spans=tuple(spans),
        insert_at=spans[-1][1],
    )


def _house_style(loaded: LoadedYaml, lines: list[str], known: dict[str, _Section]) -> tuple[int, int]:
    """Dash indent and content offset of the file's first block list, for a section with no items to copy."""
    for name, value in loaded.tree.items():
        if isinstance(value, list):
            section = known.get(name) or _analyse(loaded, lines, name)
            if section.kind == "block":
                return section.dash_col - section.key_col, section.content_offset
    return _DEFAULT_DASH_INDENT, _DEFAULT_CONTENT_OFFSET


def _literal_ok(text: str) -> bool:
    """Whether ``text`` reads well, and survives re-indentation, as a ``|`` block.

    A block whose first line is blank or indented needs an explicit indentation indicator, which is
    relative to the parent's indentation and so breaks when we shift the lines; and a block can't carry
    trailing spaces or control characters faithfully. Those get a quoted scalar instead.
    """
    if "\n" not in text.rstrip("\n") or text[:1] in (" ", "\t", "\n"):
        return False
    return all(line == line.rstrip() and all(ch == "\t" or ch >= " " for ch in line) for line in text.split("\n"))


def to_ruamel(value: Any) -> Any:
    """Plain data to ruamel nodes in our house style: flow lists for ids, literal blocks for multi-line."""
    if isinstance(value, dict):
        node = CommentedMap()
        for key, inner in value.items():
            node[key] = to_ruamel(inner)
        if "path" in value and all(not isinstance(v, (dict, list)) or k == "sessions" for k, v in value.items()):
            node.fa.set_flow_style()  # a learned core file is one line: `- {path: src/db.py, ...}`
        return node
    if isinstance(value, list):
        seq = CommentedSeq(to_ruamel(inner) for inner in value)
        if all(not isinstance(inner, (dict, list)) for inner in value):
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, str) and _literal_ok(value):
        return LiteralScalarString(value)
    return value


def render_item(item: Any, dash_col: int, content_offset: int) -> list[str]:
    """One list item's lines: by ``plainrender`` where it renders the item as ruamel would (several
    times quicker), else by ruamel."""
    lines = render_plain(item, dash_col, content_offset)
    return lines if lines is not None else render_by_ruamel(item, dash_col, content_offset)


def render_by_ruamel(item: Any, dash_col: int, content_offset: int) -> list[str]:
    text = dump_to_text(fragment_yaml(content_offset), [to_ruamel(item)])
    pad = " " * dash_col
    return [pad + line if line.strip() else line for line in text.splitlines(keepends=True)]


def _key_line_span(loaded: LoadedYaml, lines: list[str], key: str) -> tuple[int, int] | None:
    """The lines of a top-level key whose scalar value sits on the key's own line, else None."""
    tree = loaded.tree
    keys = list(tree.keys())
    key_line, _ = tree.lc.key(key)
    value_line, _ = tree.lc.value(key)
    if isinstance(tree[key], (dict, list)) or value_line != key_line:
        return None
    position = keys.index(key)
    boundary = tree.lc.key(keys[position + 1])[0] if position + 1 < len(keys) else len(lines)
    end = _trim_end(lines, key_line, boundary, 0)
    return (key_line, end) if end == key_line + 1 else None


def _eol_comment(loaded: LoadedYaml, key: str) -> str:
    """The ``# ...`` after a key's value on its own line, as ruamel recorded it."""
    slots = loaded.tree.ca.items.get(key)
    token = slots[2] if slots and len(slots) > 2 else None
    value = getattr(token, "value", "") or ""
    first = value.split("\n", 1)[0].strip()
    return first if first.startswith("#") else ""


def _render_key(key: str, value: Any, comment: str) -> list[str]:
    text = dump_to_text(fragment_yaml(2), {key: to_ruamel(value)})
    rendered = text.splitlines(keepends=True)
    if comment and len(rendered) == 1:
        rendered[0] = rendered[0].rstrip("\n") + f"  {comment}\n"
    return rendered


def _key_patches(loaded: LoadedYaml, lines: list[str], edits: list[Edit]) -> list[tuple[int, int, list[str]]]:
    patches: list[tuple[int, int, list[str]]] = []
    for edit in edits:
        if not isinstance(edit, (SetKey, DeleteKey)):
            continue
        if edit.key not in loaded.tree:
            if isinstance(edit, SetKey):
                patches.append((len(lines), len(lines), _render_key(edit.key, edit.value, "")))
            continue
        span = _key_line_span(loaded, lines, edit.key)
        if span is None:
            raise _CannotSplice
        comment = _eol_comment(loaded, edit.key)
        new = [] if isinstance(edit, DeleteKey) else _render_key(edit.key, edit.value, comment)
        patches.append((span[0], span[1], new))
    return patches


def line_ending(text: str) -> str:
    """The file's line ending, taken from its first line: new lines match it, so a CRLF file stays CRLF."""
    end = text.find("\n")
    if end < 0:
        return "\r" if "\r" in text else "\n"
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def _with_ending(lines: list[str], eol: str) -> list[str]:
    """ruamel renders with ``\n``; give each new line the file's ending instead."""
    if eol == "\n":
        return lines
    return [line[:-1] + eol if line.endswith("\n") and not line.endswith("\r\n") else line for line in lines]


def _to_ending(text: str, eol: str) -> str:
    return text if eol == "\n" else text.replace("\r\n", "\n").replace("\n", eol)


def _splice(loaded: LoadedYaml, edits: list[Edit]) -> str:
    eol = line_ending(loaded.text)
    lines = loaded.text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += eol
    key_patches = _key_patches(loaded, lines, edits)
    item_edits: list[Append | Remove | Replace] = [e for e in edits if isinstance(e, (Append, Remove, Replace))]
    names = {edit.section for edit in item_edits}
    sections = {name: _analyse(loaded, lines, name) for name in names}
    if any(section.kind == "other" for section in sections.values()):
        raise _CannotSplice
    # Only a section with no items of its own needs the file's style, and only then is it looked up.
    dash_indent, default_offset = (
        _house_style(loaded, lines, sections)
        if any(section.kind != "block" for section in sections.values())
        else (_DEFAULT_DASH_INDENT, _DEFAULT_CONTENT_OFFSET)
    )
    # (start, end, new lines): replace lines[start:end]. Non-overlapping, so applied bottom-up.
    patches: list[tuple[int, int, list[str]]] = list(key_patches)
    appended: dict[str, list[str]] = {}
    for edit in item_edits:
        section = sections[edit.section]
        if isinstance(edit, Append):
            if section.kind == "block":
                rendered = render_item(edit.item, section.dash_col, section.content_offset)
            elif section.kind == "absent":
                rendered = render_item(edit.item, dash_indent, default_offset)
            else:
                rendered = render_item(edit.item, section.key_col + dash_indent, default_offset)
            appended.setdefault(edit.section, []).extend(rendered)
            continue
        if section.kind != "block" or not 0 <= edit.index < len(section.spans):
            raise _CannotSplice
        start, end = section.spans[edit.index]
        new = [] if isinstance(edit, Remove) else render_item(edit.item, section.dash_col, section.content_offset)
        patches.append((start, end, new))
    for name, new_lines in appended.items():
        section = sections[name]
        if section.kind == "absent":
            new_lines = [f"{name}:\n", *new_lines]
        elif section.kind == "flow_empty":
            line = lines[section.key_line]
            value_col = loaded.tree.lc.value(name)[1]
            comment = line[line.index("]", value_col) + 1 :].strip()
            head = line[:value_col].rstrip() + (f"  {comment}" if comment else "")
            patches.append((section.key_line, section.key_line + 1, [head + "\n"]))
        patches.append((section.insert_at, section.insert_at, new_lines))
    # An insert sorts after a removal ending at the same line, so it is applied first, bottom-up.
    for start, end, new in sorted(patches, key=lambda p: (p[0], p[1]), reverse=True):
        lines[start:end] = _with_ending(new, eol)
    text = "".join(lines)
    original = loaded.text
    if original and not original.endswith(("\n", "\r")):
        last = original.splitlines()[-1]
        if text.endswith(last + eol):
            text = text[: -len(eol)]  # the last line was not touched: keep its missing newline missing
    return text


class _CannotSplice(Exception):
    pass


def expected_plain(loaded: LoadedYaml, edits: list[Edit]) -> dict[str, Any]:
    """The plain data a file holds after ``edits``: what ``apply_edits`` verified its text against."""
    return expected_data(loaded.plain, edits)


def _dump_edited_tree(loaded: LoadedYaml, edits: list[Edit]) -> str:
    tree = parse_yaml_text(loaded.text, loaded.path).tree  # a fresh copy to mutate
    removed: dict[str, set[int]] = {}
    for edit in edits:
        if isinstance(edit, Replace):
            tree[edit.section][edit.index] = to_ruamel(edit.item)
        elif isinstance(edit, Remove):
            removed.setdefault(edit.section, set()).add(edit.index)
    for name, indexes in removed.items():
        seq = tree[name]
        for index in sorted(indexes, reverse=True):
            del seq[index]  # in place, so the comments of the survivors stay attached
        if not seq:
            tree[name] = None
    for edit in edits:
        if isinstance(edit, Append):
            if not isinstance(tree.get(edit.section), list):
                tree[edit.section] = CommentedSeq()
            tree[edit.section].append(to_ruamel(edit.item))
        elif isinstance(edit, SetKey):
            tree[edit.key] = to_ruamel(edit.value)
        elif isinstance(edit, DeleteKey) and edit.key in tree:
            del tree[edit.key]
    return _to_ending(dump_to_text(round_trip_yaml(), tree), line_ending(loaded.text))


def _same(loaded: LoadedYaml, text: str, expected: dict[str, Any]) -> bool:
    """Whether ``text`` reads as ``expected``: read in plain Python (or libyaml) where that surely reads
    as ruamel does (``quickmerge.strict_plain``), else parsed by ruamel, several times slower."""
    from expertise_kit.versioning.quickmerge import strict_plain

    try:
        quick = strict_plain(text)
        if quick is not None:
            return quick == expected
        return parse_yaml_text(text, loaded.path).plain == expected
    except Exception:
        return False


def apply_edits(loaded: LoadedYaml, edits: list[Edit], *, verify: bool = True, trial: str | None = None) -> str:
    """The new text of the file with ``edits`` applied, verified by re-parsing.

    ``verify=False`` is for trial runs whose text is only measured, never written; ``trial`` is such a
    run's text for these same edits, verified here instead of splicing again.
    """
    if not edits:
        return loaded.text
    if not verify:
        try:
            return _splice(loaded, edits)
        except _CannotSplice:
            return _dump_edited_tree(loaded, edits)
    expected = expected_data(loaded.plain, edits)
    try:
        text = trial if trial is not None else _splice(loaded, edits)
        if _same(loaded, text, expected):
            return text
    except _CannotSplice:
        pass
    text = _dump_edited_tree(loaded, edits)
    if not verify or _same(loaded, text, expected):
        return text
    raise ExpertiseError(f"{loaded.path}: an edit could not be written faithfully; the file was not changed")


def item_line_counts(loaded: LoadedYaml, section: str) -> list[int] | None:
    """How many lines each item of ``section`` occupies, or None where the layout is unusual."""
    lines = loaded.text.splitlines(keepends=True)
    layout = _analyse(loaded, lines, section)
    if layout.kind != "block":
        return None
    return [end - start for start, end in layout.spans]
