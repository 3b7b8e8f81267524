"""An agent's JSON settings file, read and edited in place: the bytes outside what we change never change.

Loading and dumping the whole file (``json.loads`` then ``json.dumps``) would rewrite a user's committed
settings on every install and uninstall: ``"\\u00e9"`` comes back as ``é``, ``1.0e2`` as ``100.0``, a one-line
``{"allow": [...]}`` spread over three lines, and Gemini CLI's ``//`` comments can't be read at all. So the
file is parsed by a JSONC/JSON5 reader that keeps each value's position (json-five's model), the caller
edits plain Python data, and the difference is written back as splices of the original text: a member or an
element removed with its comma, one added after the last, a scalar replaced where it stands. Containers are
matched by identity, so the installer's in-place edits (``hooks[event] = kept``, ``group["hooks"] =
theirs``) splice exactly the elements that left. The result is parsed again and must equal the data.

A key given twice in one object is refused, not collapsed: which one the agent honours is its business,
and a rewrite would silently drop the other. json-five is imported only here (``hooks`` commands), never on
the hook path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expertise_kit.document.atomic import write_atomic
from expertise_kit.errors import UserError

__all__ = ["Settings", "read_settings", "write_settings", "settings_text"]

_UNCHANGED = "fix it first; nothing was changed"


@dataclass
class Settings:
    path: Path
    text: str  # the file as read ("" when there is none)
    data: dict[str, Any]  # edit this in place
    comments: bool  # the agent reads JSONC (Gemini CLI): comments are allowed
    indent: str = "  "
    newline: bool = True
    _root: Any = None  # json-five's node for ``data``
    _nodes: dict[int, Any] = field(default_factory=dict)  # id(container read) -> its node
    _keep: list[Any] = field(default_factory=list)  # the containers read, so their ids stay theirs


def _fail(path: Path, message: str, line: int | None = None) -> UserError:
    return UserError(message, path=path, line=line, hint=_UNCHANGED)


def read_settings(path: Path, *, comments: bool = False) -> Settings:
    """The settings at ``path`` ({} when the file is missing or blank). ``comments``: the agent reads JSONC,
    so ``//`` and ``/* */`` comments (and the trailing commas JSON5 allows) are read, not refused."""
    if path.is_dir():
        raise UserError("is a directory, not a settings file", path=path, hint="move it aside; nothing was changed")
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        return Settings(path, "", {}, comments)
    except OSError as exc:  # unreadable, or a parent that is a file (`.claude` not a directory)
        raise UserError(f"can't read it: {exc.strerror or exc}", path=path, hint=_UNCHANGED) from None
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, "not UTF-8 text", content[: exc.start].count(b"\n") + 1) from None
    if not text.strip():
        return Settings(path, text, {}, comments)
    if not comments:
        try:
            json.loads(text)
        except ValueError as exc:
            raise _fail(path, f"not valid JSON: {exc}", getattr(exc, "lineno", None)) from None
        except RecursionError:
            raise _fail(path, "nested too deeply to read") from None
    root = _parse(path, text)
    settings = Settings(path, text, {}, comments, _root=root)
    try:
        data = _live(settings, root)
    except RecursionError:
        raise _fail(path, "nested too deeply to read") from None
    if not isinstance(data, dict):
        raise _fail(path, "top level is not a JSON object")
    settings.data = data
    settings.indent = _indent_unit(text)
    settings.newline = text.endswith("\n")
    return settings


def _parse(path: Path, text: str) -> Any:
    from json5.loader import ModelLoader, loads
    from json5.utils import JSON5DecodeError

    try:
        return loads(text, loader=ModelLoader()).value
    except JSON5DecodeError as exc:
        line = getattr(exc, "lineno", None) or None
        raise _fail(path, f"not valid JSON: {exc.msg if hasattr(exc, 'msg') else exc}", line) from None
    except RecursionError:
        raise _fail(path, "nested too deeply to read") from None
    except Exception as exc:  # noqa: BLE001 - the reader's own assertion on input it can't take
        raise _fail(path, f"can't be read as JSON: {exc}") from None


def _indent_unit(text: str) -> str:
    for raw in text.splitlines()[1:]:
        stripped = raw.lstrip(" \t")
        if stripped and len(stripped) < len(raw):
            return raw[: len(raw) - len(stripped)]
    return "  "


# -- reading the model --------------------------------------------------------------------------


def _start(node: Any) -> int:
    return int(node._tok.index)


def _end(node: Any) -> int:
    return int((node._end_tok or node._tok).end)


def _key_name(node: Any, text: str) -> str:
    from json5.model import Identifier

    if isinstance(node, Identifier):
        return str(node.name)
    value = _scalar(text[_start(node) : _end(node)])
    return str(value)


def _scalar(span: str) -> Any:
    try:
        return json.loads(span)
    except ValueError:
        import json5

        return json5.loads(span)  # JSON5's own forms: 'single quotes', 0x1F, +1, Infinity


def _members(settings: Settings, node: Any) -> list[tuple[str, Any]]:
    """An object's (name, value node) pairs; a name given twice is refused."""
    seen: dict[str, int] = {}
    pairs = []
    for key, value in zip(node.keys, node.values, strict=True):
        name = _key_name(key, settings.text)
        line = int(key.lineno or 0)
        if name in seen:
            raise UserError(
                f"key {name!r} is given twice (lines {seen[name]} and {line}); the agent reads only one of them",
                path=settings.path,
                line=line,
                hint="delete the one you don't mean; nothing was changed",
            )
        seen[name] = line
        pairs.append((name, value))
    return pairs


def _live(settings: Settings, node: Any) -> Any:
    """The Python value of ``node``, its containers remembered so edits to them can be traced back."""
    from json5.model import JSONArray, JSONObject

    if isinstance(node, JSONObject):
        result: dict[str, Any] = {name: _live(settings, value) for name, value in _members(settings, node)}
    elif isinstance(node, JSONArray):
        result = [_live(settings, value) for value in node.values]  # type: ignore[assignment]
    else:
        return _scalar(settings.text[_start(node) : _end(node)])
    settings._nodes[id(result)] = node
    settings._keep.append(result)
    return result


def _plain(settings: Settings, node: Any) -> Any:
    """The value ``node`` had when read (the containers read may have been edited since)."""
    from json5.model import JSONArray, JSONObject

    if isinstance(node, JSONObject):
        return {name: _plain(settings, value) for name, value in _members(settings, node)}
    if isinstance(node, JSONArray):
        return [_plain(settings, value) for value in node.values]
    return _scalar(settings.text[_start(node) : _end(node)])


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: ``1`` is not ``true``, nor ``1.0`` (a replaced scalar keeps its own spelling only when
    the value is really the same)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# -- writing ------------------------------------------------------------------------------------


def settings_text(settings: Settings) -> str:
    """The file's new text: the original with our changes spliced in (or a fresh file)."""
    if settings._root is None:
        if not settings.data and not settings.text.strip():
            return settings.text
        return json.dumps(settings.data, indent=settings.indent, ensure_ascii=False) + "\n"
    editor = _Editor(settings)
    editor.value(settings._root, settings.data)
    return editor.apply()


def write_settings(settings: Settings) -> None:
    text = settings_text(settings)
    if settings._root is not None:
        check = _parse(settings.path, text)
        again = Settings(settings.path, text, {}, settings.comments)
        if not _same(_plain(again, check), settings.data):  # pragma: no cover - a bug in the splicing
            raise UserError("could not be edited in place", path=settings.path, hint="nothing was changed")
    path = settings.path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"can't create its directory: {exc.strerror or exc}", path=path) from None
    # Through a symlink, not over it: a settings file linked from a dotfiles repo stays linked.
    write_atomic(path.resolve() if path.is_symlink() else path, text.encode("utf-8"))


def _entry(key: str | None, dumped: str) -> str:
    return dumped if key is None else f"{json.dumps(key, ensure_ascii=False)}: {dumped}"


class _Editor:
    """Collects splices of the original text, then applies them from the end."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.text = settings.text
        self.splices: list[tuple[int, int, str]] = []

    # -- scanning between tokens: only whitespace, commas and comments are there

    def _skip(self, at: int) -> int:
        """The first position from ``at`` that is not whitespace or a comment."""
        text = self.text
        while at < len(text):
            if text[at] in " \t\r\n":
                at += 1
            elif text.startswith("//", at):
                newline = text.find("\n", at)
                at = len(text) if newline < 0 else newline
            elif text.startswith("/*", at):
                close = text.find("*/", at + 2)
                at = len(text) if close < 0 else close + 2
            else:
                break
        return at

    def _comma_after(self, at: int) -> int | None:
        found = self._skip(at)
        return found if found < len(self.text) and self.text[found] == "," else None

    def _line_start(self, at: int) -> int:
        """The start of ``at``'s line when only blanks precede it there, else ``at``."""
        start = self.text.rfind("\n", 0, at) + 1
        return start if not self.text[start:at].strip(" \t") else at

    def _line_break(self, at: int) -> int:
        """Where ``at``'s line ends: its newline (or a CR before it), or the end of the text."""
        newline = self.text.find("\n", at)
        if newline < 0:
            return len(self.text)
        return newline - 1 if newline > at and self.text[newline - 1] == "\r" else newline

    def _rest_is_blank(self, at: int, *, or_comment: bool = False) -> bool:
        rest = self.text[at : self._line_break(at)].strip(" \t")
        return not rest or (or_comment and rest.startswith(("//", "/*")) and "\n" not in rest)

    def _past_line(self, at: int) -> int:
        """Past the newline that ends ``at``'s line."""
        newline = self.text.find("\n", at)
        return len(self.text) if newline < 0 else newline + 1

    def _indent_of(self, at: int) -> str:
        start = self.text.rfind("\n", 0, at) + 1
        line = self.text[start:at]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def _dump(self, value: Any, base: str) -> str:
        dumped = json.dumps(value, indent=self.settings.indent, ensure_ascii=False)
        return dumped.replace("\n", "\n" + base)

    # -- the edits

    def value(self, node: Any, new: Any) -> None:
        from json5.model import JSONArray, JSONObject

        if isinstance(node, JSONObject) and isinstance(new, dict) and self.settings._nodes.get(id(new)) is node:
            self._object(node, new)
            return
        if isinstance(node, JSONArray) and isinstance(new, list) and self._array(node, new):
            return
        if _same(_plain(self.settings, node), new):
            return
        self.splices.append((_start(node), _end(node), self._dump(new, self._indent_of(_start(node)))))

    def _remove(self, node: Any, spans: list[tuple[int, int]], removed: set[int]) -> None:
        """Remove the members or elements ``removed`` (indexes into ``spans``, each its start and end), each
        run of neighbours with one comma; the comments around them stay, except one ending a line removed."""
        if not removed:
            return
        if len(removed) == len(spans):  # all of them: the container is left empty
            self.splices.append((_start(node) + 1, _end(node) - 1, ""))
            return
        index = 0
        while index < len(spans):
            if index not in removed:
                index += 1
                continue
            first = index
            while index + 1 < len(spans) and index + 1 in removed:
                index += 1
            self._remove_run(spans, first, index)
            index += 1

    def _remove_run(self, spans: list[tuple[int, int]], first: int, last: int) -> None:
        start, end = spans[first][0], spans[last][1]
        line_begin = self.text.rfind("\n", 0, start) + 1
        own_line = not self.text[line_begin:start].strip(" \t")
        if last + 1 < len(spans):  # a kept one follows: the run goes with the comma after it
            comma = self._comma_after(end)
            assert comma is not None
            if own_line and self._rest_is_blank(comma + 1, or_comment=True):
                self.splices.append((line_begin, self._past_line(comma + 1), ""))
            else:
                self.splices.append((start, self._skip(comma + 1), ""))
            return
        # The run ends the container: the comma after the kept one before it goes too.
        trailing = self._comma_after(end)
        if trailing is not None:
            end = trailing + 1  # JSON5's trailing comma: the kept one before keeps its own
        before = self._comma_after(spans[first - 1][1])
        if trailing is None and before is not None and "/" not in self.text[before:start]:
            self.splices.append((before, end, ""))  # `,\n  "a": 2` or `, "a": 2`
            return
        if trailing is None and before is not None:
            self.splices.append((before, before + 1, ""))
        if own_line and self._rest_is_blank(end):
            self.splices.append((line_begin, self._past_line(end), ""))
        else:
            self.splices.append((start, end, ""))

    def _texts(self, items: list[tuple[str | None, Any]], *, multiline: bool) -> list[str]:
        """Members (``key: value``) or elements as JSON: spread over lines in a spread-out container, on one
        line in a one-line one."""
        if multiline:
            return [_entry(key, json.dumps(v, indent=self.settings.indent, ensure_ascii=False)) for key, v in items]
        return [_entry(key, json.dumps(v, ensure_ascii=False)) for key, v in items]

    def _insert(
        self, node: Any, spans: list[tuple[int, int]], items: list[tuple[str | None, Any]], *, followed: bool = False
    ) -> None:
        """Add ``items`` (members or elements) after the last of ``spans``, or into the empty ``node``;
        ``followed``: the last of ``spans`` had others after it, removed now, with the comma after it."""
        opening, closing = _start(node), _end(node) - 1
        # An empty container is spread out when the file is; the empty file `{}` is too.
        spread = "\n" in self.text.strip() or node is self.settings._root
        multiline = "\n" in self.text[opening:closing] or (not spans and spread)
        texts = self._texts(items, multiline=multiline)
        if spans:
            last_start, last_end = spans[-1]
            inner = self._indent_of(last_start) if multiline else ""
            comma = None if followed else self._comma_after(last_end)
            anchor = comma + 1 if comma is not None else last_end
            # After a comment that ends the line, not before it.
            at = self._line_break(anchor) if multiline and self._rest_is_blank(anchor, or_comment=True) else anchor
            pieces = [f"\n{inner}{t.replace(chr(10), chr(10) + inner)}" if multiline else f" {t}" for t in texts]
            if comma is not None:  # a trailing comma (JSON5): each new one gets its own
                added = "".join(piece + "," for piece in pieces)
                self.splices.append((at, at, added))
            elif at == last_end:
                self.splices.append((at, at, "," + ",".join(pieces)))
            else:
                self.splices.append((last_end, last_end, ","))
                self.splices.append((at, at, ",".join(pieces)))
            return
        outer = self._indent_of(opening)
        inner = outer + self.settings.indent
        added = ",".join(f"\n{inner}{t.replace(chr(10), chr(10) + inner)}" for t in texts)
        if self.text[opening + 1 : closing].strip():  # only comments inside: ours go first
            self.splices.append((opening + 1, opening + 1, added))
        else:
            self.splices.append((opening + 1, closing, added + "\n" + outer))

    def _object(self, node: Any, new: dict[str, Any]) -> None:
        members = _members(self.settings, node)
        spans = [(_start(key), _end(value)) for key, value in zip(node.keys, node.values, strict=True)]
        removed = [index for index, (name, _) in enumerate(members) if name not in new]
        names = {name for name, _ in members}
        added: list[tuple[str | None, Any]] = [(name, new[name]) for name in new if name not in names]
        if added and len(removed) == len(members) and members:
            self._replace_body(node, self._texts(added, multiline=True))  # every old member goes, new ones come
            return
        for name, value in members:
            if name in new:
                self.value(value, new[name])
        self._remove(node, spans, set(removed))
        if added:
            kept = [index for index in range(len(spans)) if index not in removed]
            followed = bool(kept) and kept[-1] != len(spans) - 1
            self._insert(node, [spans[index] for index in kept], added, followed=followed)

    def _replace_body(self, node: Any, texts: list[str]) -> None:
        opening, closing = _start(node), _end(node) - 1
        outer = self._indent_of(opening)
        inner = outer + self.settings.indent
        added = ",".join(f"\n{inner}{t.replace(chr(10), chr(10) + inner)}" for t in texts)
        self.splices.append((opening + 1, closing, added + "\n" + outer))

    def _array(self, node: Any, new: list[Any]) -> bool:
        """Splice ``new`` into the array ``node`` when its elements are the old ones (by identity for
        containers, by value for scalars) in their order, with new ones only at the end; else False."""
        values = list(node.values)
        nodes = self.settings._nodes
        mapping: list[int] = []
        cursor = 0
        for element in new:
            found = None
            if isinstance(element, (dict, list)) and id(element) in nodes:
                target = nodes[id(element)]
                found = next((i for i in range(cursor, len(values)) if values[i] is target), None)
            elif not isinstance(element, (dict, list)):
                found = next(
                    (i for i in range(cursor, len(values)) if _same(_plain(self.settings, values[i]), element)), None
                )
            if found is None:
                break
            mapping.append(found)
            cursor = found + 1
        appended = new[len(mapping) :]
        if any(isinstance(e, (dict, list)) and id(e) in nodes for e in appended):
            return False  # an old element moved: not a splice
        if not mapping and not appended and not values:
            return True
        spans = [(_start(v), _end(v)) for v in values]
        items: list[tuple[str | None, Any]] = [(None, e) for e in appended]
        if appended and not mapping and values:
            self._replace_body(node, self._texts(items, multiline=True))
            return True
        self._remove(node, spans, set(range(len(values))) - set(mapping))
        for position, index in enumerate(mapping):
            self.value(values[index], new[position])
        if appended:
            followed = bool(mapping) and mapping[-1] != len(values) - 1
            self._insert(node, [spans[i] for i in mapping], items, followed=followed)
        return True

    def apply(self) -> str:
        text = self.text
        last = len(text) + 1
        for start, end, replacement in sorted(self.splices, key=lambda s: (s[0], s[1]), reverse=True):
            if end > last:  # overlapping splices: a bug, caught by the check after writing
                end = max(start, last)
            text = text[:start] + replacement + text[end:]
            last = start
        return text
