"""Reading YAML we can trust, and the ruamel configuration used everywhere.

Every file is read through ``load_yaml_file``: it refuses files that are too big, not UTF-8, carry a BOM,
don't parse, repeat a key, or use anchors, aliases or custom tags. Each refusal is one ``UserError`` line
naming the file and line. Nothing here writes.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from expertise_kit.errors import FileMissing, UserError

__all__ = [
    "MAX_FILE_BYTES",
    "LoadedYaml",
    "load_yaml_file",
    "parse_yaml_text",
    "round_trip_yaml",
    "fragment_yaml",
    "dump_to_text",
    "line_of",
]

MAX_FILE_BYTES = 1 << 20  # 1 MiB: a capped 1000-line file is ~60 KiB; anything near this is not ours.
_WIDTH = 1 << 16  # never fold a long line: a folded scalar turns a one-word change into a multi-line diff
_BOMS = (
    (b"\xef\xbb\xbf", "UTF-8"),
    (b"\xff\xfe", "UTF-16/32 LE"),
    (b"\xfe\xff", "UTF-16 BE"),
    (b"\x00\x00\xfe\xff", "UTF-32 BE"),
)


def round_trip_yaml() -> YAML:
    """The parser for files on disk: round-trip mode, quotes kept, duplicate keys refused."""
    yaml = YAML()  # typ="rt"
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


def _read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise UserError(
                    f"file is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit",
                    path=path,
                    hint="an expertise file this big is not one we wrote; trim it or move it aside",
                )
            # Read one byte past the limit so a file growing under us is still caught.
            return handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise FileMissing("file not found", path=path, hint="run `expertise init` to create it") from None
    except IsADirectoryError:
        raise UserError("is a directory, not a file", path=path, hint="move it aside") from None
    except PermissionError:
        raise UserError("permission denied reading it", path=path, hint="check its permissions") from None


def _decode(raw: bytes, path: Path) -> str:
    for bom, name in _BOMS:
        if raw.startswith(bom):
            raise UserError(
                f"file starts with a {name} byte-order mark",
                path=path,
                line=1,
                hint="save it as UTF-8 without a BOM",
            )
    if len(raw) > MAX_FILE_BYTES:
        raise UserError("file grew past the 1 MiB limit while being read", path=path, hint="try again")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UserError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            path=path,
            line=line,
            hint="save it as UTF-8",
        ) from None


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


def _line(node: Any) -> int | None:
    lc = getattr(node, "lc", None)
    return None if lc is None or lc.line is None else lc.line + 1


def _anchor(node: Any) -> str | None:
    anchor = getattr(node, "anchor", None)
    return getattr(anchor, "value", None) if anchor is not None else None


def _to_plain(node: Any, path: Path, line: int | None, depth: int = 0) -> Any:
    """Plain Python from the round-trip tree, refusing anchors, aliases and custom tags on the way."""
    if depth > 64:
        raise UserError("nested more than 64 levels deep", path=path, line=line, hint="flatten it")
    name = _anchor(node)
    if name is not None:
        raise UserError(
            f"anchors and aliases are not allowed (found &{name})",
            path=path,
            line=_line(node) or line,
            hint="write the value out in full; aliases can hide an alias bomb",
        )
    if isinstance(node, TaggedScalar) or (
        isinstance(node, (CommentedMap, CommentedSeq)) and getattr(node.tag, "value", None)
    ):
        raise UserError("custom YAML tags are not allowed", path=path, line=_line(node) or line, hint="remove the tag")
    if isinstance(node, dict):
        result: dict[Any, Any] = {}
        for key, value in node.items():
            key_line = line
            if isinstance(node, CommentedMap):
                position = node.lc.data.get(key)
                key_line = position[0] + 1 if position else line
            if isinstance(key, (dict, list)):
                raise UserError("complex mapping keys are not allowed", path=path, line=key_line)
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
    raw = _read_bytes(path)
    return parse_yaml_text(_decode(raw, path), path)


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
