"""Reading YAML we can trust, and the ruamel configuration used everywhere.

Every file is read through ``load_yaml_file``: it refuses anything that is not a regular file (a FIFO
would block the reader forever), files that are too big, not UTF-8, carry a BOM, don't parse, repeat a
key, have keys that are not strings, or use anchors, aliases, merge keys or tags. Those are refused while
the document is composed, before ruamel builds Python objects from it, because ruamel's own handling of
several of them (a merge key in a flow mapping, ``!!omap``) crashes instead of raising a YAML error.
Values Python can't build (an integer past its digit limit, 2020-13-45) are refused as they are built.
Each refusal is one ``UserError`` line naming the file and line. Nothing here writes.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.composer import Composer
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.nodes import MappingNode, ScalarNode

from expertise_kit.document.textfile import MAX_FILE_BYTES, decode_text, read_text_file
from expertise_kit.errors import UserError

__all__ = [
    "MAX_FILE_BYTES",
    "LoadedYaml",
    "load_yaml_file",
    "read_text_file",
    "decode_text",
    "parse_yaml_text",
    "round_trip_yaml",
    "fragment_yaml",
    "dump_to_text",
    "line_of",
]

_WIDTH = 1 << 16  # never fold a long line: a folded scalar turns a one-word change into a multi-line diff


_CORE_TAG = "tag:yaml.org,2002:"
_STR_TAG = _CORE_TAG + "str"
_MERGE_TAG = _CORE_TAG + "merge"
# What a plain scalar may resolve to. Others are YAML 1.1 oddities ruamel still resolves: `<<` (merge), `=`.
_SCALAR_TAGS = frozenset(_CORE_TAG + name for name in ("str", "int", "float", "bool", "null", "timestamp"))


class _Refused(Exception):
    """Raised from inside ruamel's loader; ``parse_yaml_text`` turns it into a ``UserError`` with the path."""

    def __init__(self, message: str, mark: Any, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.line = None if mark is None else mark.line + 1
        self.hint = hint


def _shown(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shown_tag(tag: Any) -> str:
    text = str(tag)
    return "!!" + text[len(_CORE_TAG) :] if text.startswith(_CORE_TAG) else text


class _GuardedComposer(Composer):
    """Refuses what we never accept while the node tree is built, so nothing hostile gets constructed."""

    def compose_document(self) -> Any:
        self._keys_seen: dict[int, set[str]] = {}
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.parser.peek_event()
        if isinstance(event, AliasEvent) or event.anchor is not None:
            sign = "*" if isinstance(event, AliasEvent) else "&"
            raise _Refused(
                f"anchors and aliases are not allowed (found {sign}{event.anchor})",
                event.start_mark,
                "write the value out in full; aliases can hide an alias bomb",
            )
        tag = getattr(event, "tag", None)  # None unless the file wrote one; an alias event has none
        if tag is not None:
            # Every explicit tag is refused, standard or not: !!omap, !!set and !!pairs make ruamel build
            # types it then crashes on, !!binary makes bytes, !!python/... asks for objects.
            raise _Refused(
                f"YAML tags are not allowed (found {_shown_tag(tag)})",
                event.start_mark,
                "remove the tag; quote the value if you meant it as text",
            )
        node = super().compose_node(parent, index)
        if isinstance(parent, MappingNode) and index is None:  # ruamel composes a mapping's keys with no index
            self._check_key(parent, node)
        elif isinstance(node, ScalarNode) and node.tag not in _SCALAR_TAGS:
            meaning = "a merge key" if node.tag == _MERGE_TAG else f"a YAML {_shown_tag(node.tag)}"
            raise _Refused(f"a bare {node.value} is read as {meaning}", node.start_mark, f"quote it: '{node.value}'")
        return node

    def _check_key(self, mapping: Any, key: Any) -> None:
        if not isinstance(key, ScalarNode):
            raise _Refused("complex mapping keys are not allowed", key.start_mark, "use a plain string key")
        if key.tag == _MERGE_TAG:
            raise _Refused(
                "merge keys (<<) are not allowed", key.start_mark, "write the keys out in full, or quote '<<'"
            )
        if key.tag != _STR_TAG:
            # `1:` and `true:` are equal as Python keys, so ruamel would call them duplicates; and no key of
            # ours is a number, a date or null.
            shown = _shown(key.value) or "null"
            raise _Refused(f"key {shown} is not a string", key.start_mark, f"quote it: '{_shown(key.value)}'")
        seen = self._keys_seen.setdefault(id(mapping), set())
        if key.value in seen:
            hint = "each key may appear once; merge or rename"
            raise _Refused(f'found duplicate key "{_shown(key.value)}"', key.start_mark, hint)
        seen.add(key.value)


class _GuardedConstructor(RoundTripConstructor):
    """Turns a scalar Python can't build into a refusal naming its line, instead of a traceback."""

    def construct_non_recursive_object(self, node: Any, tag: Any = None) -> Any:
        if not isinstance(node, ScalarNode):
            return super().construct_non_recursive_object(node, tag)
        try:
            return super().construct_non_recursive_object(node, tag)
        except (ValueError, OverflowError, IndexError) as exc:
            if str(node.tag) == f"{_CORE_TAG}int" and not any(ch.isdigit() for ch in str(node.value)):
                return str(node.value)  # `-_`: ruamel's int pattern takes a sign and underscores, its reader can't
            raise _value_refusal(node, exc) from None


def _value_refusal(node: Any, exc: Exception) -> _Refused:
    kind = str(node.tag).removeprefix(_CORE_TAG)
    value = str(node.value)
    if kind == "int":
        digits = sum(ch.isdigit() for ch in value)
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
        return _Refused(
            f"integer of {digits:,} digits is too long" + (f" (Python reads at most {limit:,})" if limit else ""),
            node.start_mark,
            "shorten it, or quote it if it is text",
        )
    if kind == "timestamp":
        reason = str(exc)
        if "offset" in reason:  # Python's says "offset must be a timedelta strictly between -timedelta(...)..."
            reason = "time zone offset must be under 24 hours"
        return _Refused(
            f"{_shown(value)!r} is not a real date or time ({reason})",
            node.start_mark,
            "write a real one such as 2026-01-31T12:00:00Z, or quote it if it is text",
        )
    return _Refused(f"cannot read the value {_shown(value)!r} ({exc})", node.start_mark, "quote it if it is text")


def round_trip_yaml() -> YAML:
    """The parser for files on disk: round-trip mode, quotes kept, and everything hostile refused."""
    yaml = YAML()  # typ="rt"
    yaml.Composer = _GuardedComposer
    yaml.Constructor = _GuardedConstructor
    yaml.preserve_quotes = True
    yaml.allow_duplicate_keys = False
    yaml.width = _WIDTH
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def fragment_yaml(content_offset: int) -> YAML:
    """The emitter for new list items: dash at column 0, content at ``content_offset``.

    The caller shifts the result right to the section's dash column, so new lines match the file.
    """
    yaml = YAML()
    yaml.width = _WIDTH
    yaml.indent(mapping=2, sequence=max(2, content_offset), offset=0)
    return yaml


def dump_to_text(yaml: YAML, data: Any) -> str:
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return buffer.getvalue()


@dataclass
class LoadedYaml:
    """A parsed file: the exact text (for splicing), the round-trip tree, and plain data."""

    path: Path
    text: str
    tree: CommentedMap
    plain: dict[str, Any]


def _yaml_error(exc: YAMLError, path: Path, text: str) -> UserError:
    line = None
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        line = mark.line + 1
    if isinstance(exc, MarkedYAMLError):
        problem = exc.problem or exc.context or "invalid YAML"
        if "duplicate key" in problem:
            # ruamel adds '(original value: ...)' and a URL about suppressing the check; neither helps.
            problem = problem.split(" with value")[0]
            return UserError(problem, path=path, line=line, hint="each key may appear once; merge or rename")
    else:
        problem = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        position = getattr(exc, "position", None)  # ReaderError: a character offset, not a mark
        if line is None and isinstance(position, int):
            line = text.count("\n", 0, position) + 1
    return UserError(f"invalid YAML: {problem}", path=path, line=line, hint="fix it by hand; it was not changed")


_MAX_INT_BITS = 4096  # far beyond any counter, and well inside what Python prints as decimal


def _to_plain(node: Any, path: Path, line: int | None, depth: int = 0) -> Any:
    """Plain Python from the round-trip tree (anchors, tags and odd keys were refused while composing)."""
    if depth > 64:
        raise UserError("nested more than 64 levels deep", path=path, line=line, hint="flatten it")
    if isinstance(node, dict):
        result: dict[Any, Any] = {}
        for key, value in node.items():
            key_line = line
            if isinstance(node, CommentedMap):
                position = node.lc.data.get(key)
                key_line = position[0] + 1 if position else line
            result[_to_plain(key, path, key_line, depth + 1)] = _to_plain(value, path, key_line, depth + 1)
        return result
    if isinstance(node, list):
        items = []
        for index, value in enumerate(node):
            item_line = line
            if isinstance(node, CommentedSeq):
                position = node.lc.data.get(index)
                item_line = position[0] + 1 if position else line
            items.append(_to_plain(value, path, item_line, depth + 1))
        return items
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, str):
        return str(node)
    if isinstance(node, int):
        if node.bit_length() > _MAX_INT_BITS:
            # `0xfff...` parses, but no decimal form of it can be printed (`show --json`, the render cache).
            raise UserError(
                f"integer of {node.bit_length():,} bits is too large to use",
                path=path,
                line=line,
                hint="shorten it, or quote it if it is text",
            )
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, datetime):
        return datetime.fromisoformat(node.isoformat())
    if isinstance(node, date):
        return node.isoformat()
    raise UserError(f"unsupported YAML value of type {type(node).__name__}", path=path, line=line)


def parse_yaml_text(text: str, path: Path) -> LoadedYaml:
    """Parse text that claims to be one of our files; the root must be a mapping."""
    yaml = round_trip_yaml()
    try:
        tree = yaml.load(text)
    except _Refused as exc:
        raise UserError(exc.message, path=path, line=exc.line, hint=exc.hint) from None
    except YAMLError as exc:
        raise _yaml_error(exc, path, text) from None
    except RecursionError:
        raise UserError("nested too deeply to parse", path=path, hint="flatten it") from None
    if tree is None:
        raise UserError("file is empty", path=path, line=1, hint="delete it and run `expertise init`")
    if not isinstance(tree, CommentedMap):
        raise UserError(
            f"top level is a {type(tree).__name__.replace('Commented', '').lower()}, not a mapping",
            path=path,
            line=1,
            hint="the file must be a mapping of keys such as `domain:`",
        )
    plain = _to_plain(tree, path, 1)
    return LoadedYaml(path=path, text=text, tree=tree, plain=plain)


def load_yaml_file(path: Path) -> LoadedYaml:
    return parse_yaml_text(read_text_file(path), path)


def line_of(tree: CommentedMap, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the deepest part of ``loc`` (a pydantic error location) found in the tree."""
    node: Any = tree
    best: int | None = None
    for part in loc:
        if (
            isinstance(node, CommentedMap)
            and part in node
            or isinstance(node, CommentedSeq)
            and isinstance(part, int)
            and 0 <= part < len(node)
        ):
            position = node.lc.data.get(part)
            if position:
                best = position[0] + 1
            node = node[part]
        # Other parts are union tags ("string", "mapping"): skip them and keep descending.
    return best
