"""The shared layer's merge without parsing with ruamel: the quick path of ``shared.publish``.

Publishing merges this worktree's change into the shared file on every revision once another worktree
writes the same domain, and ruamel's pure-Python parser takes a tenth of a second and more for a file at
the cap, three or four times a merge. Here the three versions' data is already known (the transaction
has it; the shared file's was remembered by whoever wrote it), so the entry plan is made on plain data
with the merge driver's own rules (``versioning.merge``), and applied to the shared file's text by
lines: each section's items found by their dashes, an added or changed entry rendered as the splice
renders it, a removed one cut.

Nothing unverified comes out. The result is read back in plain Python where it is in our writers' layout
(``document.plainread``), else with libyaml (PyYAML's C parser, some fifty times quicker than ruamel's),
and must hold exactly the data planned, and it must stay within the line cap;
anything else (a hand-formatted section, a flow list, a value YAML 1.1 reads differently) returns None
and the caller takes the full merge.

The merge driver's quick path (``merge_for_driver``, below) makes the same plan from the three versions
git hands it, read by ``strict_plain``: in plain Python where a file is in our writers' layout
(``document.plainread``, the three sharing the entries they did not change), else with libyaml. Its
result is read back the same way and must hold exactly the data planned.
"""

from __future__ import annotations

import re

from expertise_kit.document.edits import Append, DeleteKey, Edit, Remove, Replace, SetKey
from expertise_kit.document.plainentry import valid_domain_data, valid_item
from expertise_kit.document.plainread import read_plain
from expertise_kit.document.plainrender import render_plain
from expertise_kit.document.prune import count_lines
from expertise_kit.vocab import section, section_names

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["quick_merge", "merge_for_driver", "strict_plain", "valid_plain"]

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(.*)$")


class _Doc:
    """Enough of a ``DomainDoc`` for ``versioning.merge``'s planner: the plain data."""

    def __init__(self, plain: dict[str, Any]) -> None:
        self.plain = plain
        self.loaded = self


def render_item(item: Any, dash_col: int, content_offset: int) -> list[str]:
    """``splice.render_item``: by ``plainrender`` where the item is plain, else by ruamel (imported then)."""
    lines = render_plain(item, dash_col, content_offset)
    if lines is None:
        from expertise_kit.document.splice import render_by_ruamel

        lines = render_by_ruamel(item, dash_col, content_offset)
    return lines


def _valid_items(plain: dict[str, Any]) -> bool:
    """Every entry is one the model surely accepts (``plainentry``); else the full merge decides."""
    return all(
        isinstance(plain.get(name) or [], list) and all(valid_item(name, raw) for raw in plain.get(name) or [])
        for name in section_names()
    )


def _plan(
    base: dict[str, Any] | None,
    ours: dict[str, Any],
    theirs: dict[str, Any],
    prefer: str | None = "theirs",
    *,
    checked: bool = False,
) -> list[Edit] | None:
    """The merge driver's entry plan on data; None when it can't be made here, or (``prefer=None``, as the
    driver merges) when it holds a true conflict, which the full merge marks. ``checked``: the three were
    validated already (``_model``)."""
    from expertise_kit.versioning.merge import _Plan, _plan_entries, _plan_keys

    plan = _Plan(prefer=prefer)
    if not checked and not all(_valid_items(plain) for plain in (base or {}, ours, theirs)):
        return None
    try:
        docs = (_Doc(base) if base is not None else None, _Doc(ours), _Doc(theirs))
        _plan_entries(*docs, plan)  # type: ignore[arg-type]
        _plan_keys(*docs, plan)  # type: ignore[arg-type]
    except (TypeError, ValueError, AttributeError, KeyError):
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
    return not stripped or stripped[0] == "#"


def _items(lines: list[str], start: int, end: int) -> tuple[list[tuple[int, int]], int, int] | None:
    """The items of a block list between ``start`` (the key's line) and ``end``: their line spans, the dash
    column and the content offset. None for anything but a block list."""
    spans: list[tuple[int, int]] = []
    column = offset = -1
    for number in range(start + 1, end):
        line = lines[number]
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if _blank(line):
            if spans and indent > column and stripped.startswith("#"):
                spans[-1] = (spans[-1][0], number + 1)  # a comment inside the item, as the splice counts it
            continue
        after = stripped[1:] if stripped[:1] == "-" else None  # a dash, then spaces or the line's end
        if after is not None and (after[:1] == " " or after in ("", "\n")) and (column < 0 or indent == column):
            if column < 0:
                column = indent
                spaces = len(after) - len(after.lstrip(" "))
                offset = 1 + spaces if spaces else 2  # from the dash to the text
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
    from datetime import date, datetime, timezone

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


def _apply(text: str, plain: dict[str, Any], edits: list[Edit], render: Any = render_item) -> str | None:
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
            new = [] if index in removed else render(replaced[index], column, offset)
            patches.append((first, last, new))
        if appended:
            rendered = [line for item in appended for line in render(item, column, offset)]
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
    read = read_plain(text) or _by_libyaml(text)
    if not isinstance(read, dict) or (read != expected and _norm(read) != _norm(expected)):
        return None
    return text, expected


def _by_libyaml(text: str) -> Any:
    """``text`` read by PyYAML's C safe loader; None without it, or when it can't read it."""
    try:
        import yaml  # type: ignore[import-untyped]  # PyYAML, for its C parser only
    except ImportError:
        return None
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        return None
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - the C *safe* loader
    except yaml.YAMLError:
        return None


# -- the merge driver's quick path: the three versions read in plain Python, or with libyaml ------------

# A plain scalar libyaml (YAML 1.1) reads as text but ruamel (YAML 1.2) may read as a number: `1e3`, `0o17`,
# `.inf`. Anything that looks like it is declined rather than guessed.
_NUMBERISH = re.compile(r"[-+]?(?:\.(?:inf|Inf|INF|nan|NaN|NAN)|[0-9.][0-9A-Za-z_.:+-]*)")
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_TAG = "tag:yaml.org,2002:"
_ODD_BREAKS = ("\r", "\t", "\u2028", "\u2029", "\x85", "\ufeff")  # what the two parsers may not agree on
_MAX_DEPTH = 64
_DIRECTIVE = re.compile(r"^%", re.M)


class _Decline(Exception):
    """The quick path can't be sure: the full merge runs instead."""


_TYPED_FIRST = frozenset("yYnNtTfFoO-+0123456789.<~=")  # the first characters PyYAML's resolvers look at
_LOADER: Any = None


def _loader() -> Any:
    """libyaml's safe loader, resolving as PyYAML does but without its per-node Python bookkeeping: the
    path resolvers (none are registered) are skipped, and a plain scalar whose first character no implicit
    resolver looks at is text at once."""
    global _LOADER
    if _LOADER is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", None)
        if base is None:
            return None
        scalar, sequence, resolver = yaml.ScalarNode, yaml.SequenceNode, base.resolve

        class Loader(base):  # type: ignore[misc, valid-type]
            def descend_resolver(self, current_node: Any, current_index: Any) -> None:
                return None

            def ascend_resolver(self) -> None:
                return None

            def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
                if kind is scalar:
                    if implicit[0] and (not value or value[0] in _TYPED_FIRST):
                        return resolver(self, kind, value, implicit)
                    return _STR
                return _SEQ if kind is sequence else _MAP

        _LOADER = Loader
    return _LOADER


_STR, _SEQ, _MAP = _TAG + "str", _TAG + "seq", _TAG + "map"


def _scalar_of(node: Any) -> Any:
    value, plain = node.value, node.style in ("", None)
    if node.style in ("|", ">"):
        raise _Decline  # a block scalar: libyaml takes some headers and indents that ruamel refuses
    tag = node.tag
    if tag == _STR and not (plain and _NUMBERISH.fullmatch(value)):
        return value
    if tag == _TAG + "int" and plain and _DECIMAL.fullmatch(value):
        return int(value)
    if tag == _TAG + "bool" and plain:
        # YAML 1.1's other booleans (`on`, `off`, `yes`, `no`) are strings in 1.2, as the full parse reads them.
        return _BOOLS.get(value, value)
    if tag == _TAG + "null" and plain and value in _NULLS:
        return None
    raise _Decline  # a YAML 1.1 reading (`0755`, `1:20`), a float, a date, `<<`: the full parse decides


class _Walk:
    """Plain data from libyaml's node graph, declining whatever the full parse would refuse or read
    otherwise. Anchors, tags and aliases need a ``&``, ``!`` or ``*`` somewhere in the text; only then is
    every node checked for them."""

    def __init__(self, text: str) -> None:
        import yaml

        self.text = text
        self.marked = "&" in text or "!" in text
        self.aliased = "*" in text
        self.seen: set[int] = set()
        self.scalar, self.mapping = yaml.ScalarNode, yaml.MappingNode

    def check(self, node: Any) -> None:
        if self.aliased:
            if id(node) in self.seen:
                raise _Decline  # an alias: the full parse refuses it
            self.seen.add(id(node))
        if self.marked and self.text[node.start_mark.index : node.start_mark.index + 1] in ("&", "!"):
            raise _Decline  # an anchor or an explicit tag: the full parse refuses both

    def plain(self, node: Any, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise _Decline  # nested deeper than the parser for files on disk allows
        checking = self.aliased or self.marked
        if checking:
            self.check(node)
        scalar = self.scalar
        if type(node) is scalar:
            return _scalar_of(node)
        if depth == _MAX_DEPTH and node.value:
            raise _Decline  # its keys and items would be one level too deep, scalars too
        if type(node) is self.mapping:
            if node.flow_style and self.text[node.start_mark.index : node.start_mark.index + 1] != "{":
                raise _Decline  # `[a: b]`, a pair in a flow list: ruamel refuses what libyaml reads as a mapping
            result: dict[str, Any] = {}
            for key, value in node.value:
                if type(key) is not scalar or key.tag != _STR:
                    raise _Decline
                if checking:
                    self.check(key)
                name = _scalar_of(key)
                if name in result:
                    raise _Decline  # a duplicate key: libyaml keeps the last, the full parse refuses it
                result[name] = (
                    _scalar_of(value) if type(value) is scalar and not checking else self.plain(value, depth + 1)
                )
            return result
        return [_scalar_of(v) if type(v) is scalar and not checking else self.plain(v, depth + 1) for v in node.value]


def strict_plain(text: str, seen: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The file's data as ``yamlio.parse_yaml_text`` reads it, read with libyaml; None wherever the two
    might read it differently or the full parse would refuse it (an alias, a tag, a duplicate key, a
    value YAML 1.1 and 1.2 read differently). A file in our writers' layout is read without libyaml
    (``plainread``, with its memo ``seen``)."""
    found = read_plain(text, seen)
    if found is not None:
        return found
    try:
        import yaml
    except ImportError:
        return None
    loader_class = _loader()
    if loader_class is None or any(odd in text for odd in _ODD_BREAKS) or _DIRECTIVE.search(text):
        return None  # `%YAML 1.1` makes ruamel read `yes` as true, where libyaml reads text
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()
    if not isinstance(node, yaml.MappingNode):
        return None
    try:
        found = _Walk(text).plain(node)
    except (_Decline, RecursionError):
        return None
    return found if isinstance(found, dict) else None


def _model(
    plain: dict[str, Any] | None, domain: str, checked: dict[tuple[str, int], Any] | None = None
) -> dict[str, Any] | None:
    """``plain`` when it is surely a valid file of ``domain`` (``plainentry``, the model's rules without
    pydantic); None otherwise, and the full merge decides."""
    return plain if plain is not None and valid_domain_data(plain, domain, checked) else None


def valid_plain(text: str, domain: str) -> dict[str, Any] | None:
    """``text``'s data when it is surely a valid file of ``domain`` (``strict_plain``, ``plainentry``): what
    ``parse_domain_text`` would give as its plain data; None when only the full parse can tell."""
    return _model(strict_plain(text), domain)


def _item_counts(text: str) -> Any:
    """``section -> lines of each item`` as the text lays them out (None: not a plain block list)."""
    lines = text.splitlines(keepends=True)
    sections = _sections(lines) or {}

    def counts(name: str) -> list[int] | None:
        where = sections.get(name)
        if where is None:
            return None
        found = _items(lines, *where)
        if found is None or not found[0]:
            return None
        return [last - first for first, last in found[0]]

    return counts


def merge_for_driver(
    texts: tuple[str, str, str],
    *,
    domain: str,
    line_cap: int,
    line_merge: Any = None,
) -> Any:
    """``merge.merge_domain_texts`` for the merge driver, on plain data (``strict_plain``), with the same
    rules, the same line-merge preference and the same pruning at the cap, the text changed by lines.
    Returns its ``DomainMerge``, or None when the full merge must run: a true conflict (which it marks), a
    side that is not a valid file, a layout or a value this can't be sure of."""
    try:
        return _merge_for_driver(texts, domain, line_cap, line_merge)
    except _Decline:
        return None


def _merge_for_driver(texts: tuple[str, str, str], domain: str, line_cap: int, line_merge: Any) -> Any:
    from expertise_kit.document.edits import expected_data as expected_after
    from expertise_kit.document.plainentry import describe
    from expertise_kit.document.prune import candidates_of, plainly_fits, prune_to_cap
    from expertise_kit.versioning.merge import DomainMerge, line_merge_text, same_entries

    base_text, ours_text, theirs_text = texts
    data: list[dict[str, Any] | None] = []
    seen: dict[str, Any] = {}  # entries by their lines: the versions share what they did not change
    checked: dict[tuple[str, int], Any] = {}  # and those are validated once
    for text in texts:
        plain = strict_plain(text, seen) if text.strip() else None
        if plain is None and text.strip():
            raise _Decline
        data.append(plain)
    base, ours, theirs = data
    ours_model, theirs_model = _model(ours, domain, checked), _model(theirs, domain, checked)
    if ours is None or theirs is None or ours_model is None or theirs_model is None:
        raise _Decline  # the full merge names what is wrong, then merges line by line
    if base is not None and _model(base, domain, checked) is None:
        raise _Decline  # not surely valid: the full merge reads an invalid base as empty
    edits = _plan(base, ours, theirs, prefer=None, checked=True)
    if edits is None:
        raise _Decline  # a true conflict: the full merge marks it in the entry
    start_text, start, model, kept = ours_text, ours, ours_model, False
    if base is not None and theirs_text != base_text and theirs_text != ours_text:
        merged_text = (line_merge or line_merge_text)(*texts)
        if merged_text is not None:
            candidate = strict_plain(merged_text, seen)
            if candidate is None:
                raise _Decline
            if same_entries(candidate, expected_after(ours, edits)):
                candidate_model = _model(candidate, domain, checked)
                if candidate_model is None:
                    raise _Decline  # not surely valid: whether the full merge keeps this text, it decides
                start_text, start, model, edits, kept = merged_text, candidate, candidate_model, [], True

    renders: dict[tuple[int, int, int], tuple[Any, list[str]]] = {}

    def render(item: Any, column: int, offset: int) -> list[str]:
        """``render_item``, once per item and layout: the trial texts of the pruning render them again."""
        key = (id(item), column, offset)
        hit = renders.get(key)
        if hit is None or hit[0] is not item:
            hit = renders[key] = (item, render_item(item, column, offset))
        return list(hit[1])

    def apply(trial: list[Edit]) -> str:
        if trial and not start_text.endswith("\n"):
            raise _Decline  # the splice keeps a missing last newline; the cut by lines would add one
        done = _apply(start_text, start, trial, render) if trial else start_text
        if done is None:
            raise _Decline
        return done

    text = apply(edits)
    pruned: list[Any] = []
    if count_lines(text) > line_cap:
        counts = _item_counts(start_text)
        sized = [counts(name) for name in section_names() if model.get(name)]
        if any(c is None for c in sized):
            raise _Decline  # an item's lines can't be counted from the text: the full merge measures them
        room = line_cap - (count_lines(start_text) - sum(sum(c) for c in sized if c))
        if room > 0 and not all(plainly_fits(e.item, room) for e in edits if isinstance(e, Append)):
            raise _Decline  # a new entry that may not fit even alone: the full merge refuses it by name
        edits, pruned, text = prune_to_cap(
            candidates_of(start, counts, edits, render, describe), edits, text, line_cap, apply
        )
    expected = expected_after(start, edits)
    # The check reads with the memo too: an unchanged entry's lines are the lines it was read from, and the
    # plan changes entries only by edits (new items, rendered and read here afresh), never in place.
    if edits and strict_plain(text, seen) != expected:
        raise _Decline
    lines = count_lines(text)
    return DomainMerge(text, [], pruned, lines, max(0, lines - line_cap), kept_line_merge=kept, plain=expected)
