"""Building a ToolCall from a tool name and its input, for Claude-style tool names."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from expertise_kit.learning.transcripts.model import MAX_COMMAND_CHARS, MAX_EXCERPT_CHARS, ToolCall
from expertise_kit.learning.transcripts.shell import file_effects

__all__ = ["tool_call", "patch_files", "set_command", "set_patch", "changed_lines"]

_MODIFYING = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
_READING = {"Read": "file_path", "Grep": "path", "Glob": "path"}


def patch_files(patch: str) -> tuple[list[str], list[str]]:
    """(modified, deleted) files named by an ``apply_patch`` patch's headers."""
    modified: list[str] = []
    deleted: list[str] = []
    for line in patch.splitlines():
        for marker, target in (
            ("*** Add File: ", modified),
            ("*** Update File: ", modified),
            ("*** Move to: ", modified),
            ("*** Delete File: ", deleted),
        ):
            if line.startswith(marker):
                target.append(line[len(marker) :].strip())
    return modified, deleted


def tool_call(call_id: str, name: str, params: Any, thread: str, timestamp: str) -> ToolCall:
    params = params if isinstance(params, dict) else {}
    call = ToolCall(call_id=call_id, name=name, thread=thread, timestamp=timestamp)
    if name in _MODIFYING and isinstance(params.get(_MODIFYING[name]), str):
        call.paths = call.modifies = (params[_MODIFYING[name]],)
        _change(call, params)
    elif name in _READING and isinstance(params.get(_READING[name]), str):
        call.paths = (params[_READING[name]],)
    elif name == "Bash" and isinstance(params.get("command"), str):
        set_command(call, params["command"])
        if params.get("dangerouslyDisableSandbox") is True:  # Claude Code's Bash, run outside its sandbox
            call.escalated = "dangerouslyDisableSandbox: true"
    elif name == "apply_patch":
        patch = params.get("input") or params.get("patch") or ""
        if isinstance(patch, str):
            set_patch(call, patch)
    return call


def set_command(call: ToolCall, command: str) -> None:
    call.command = command[:MAX_COMMAND_CHARS]
    if "*** Begin Patch" in command:
        set_patch(call, command)
        return
    modified, deleted = file_effects(call.command)
    call.modifies, call.deletes = tuple(modified), tuple(deleted)
    call.paths = (*call.modifies, *call.deletes)


def set_patch(call: ToolCall, patch: str) -> None:
    modified, deleted = patch_files(patch)
    call.modifies, call.deletes = tuple(modified), tuple(deleted)
    call.paths = (*call.modifies, *call.deletes)
    lines = patch.splitlines()[:400]
    call.excerpt = _flat(line[1:] for line in lines if line.startswith("+"))
    changed = [line.startswith(("-", "+")) for line in lines]
    places = sum(1 for n, line in enumerate(changed) if line and not (n and changed[n - 1]))
    if places == 1 and len(modified) + len(deleted) == 1:  # what the new lines replaced: said for one place only
        body = [line for line in lines if line.startswith((" ", "-", "+"))]
        call.change = (
            "\n".join(line[1:] for line in body if not line.startswith("+")),
            "\n".join(line[1:] for line in body if not line.startswith("-")),
        )


def _flat(pieces: Iterable[str]) -> str:
    """The pieces, their whitespace collapsed, joined and cut short."""
    text = ""
    for piece in pieces:
        text = f"{text} {' '.join(piece[: MAX_EXCERPT_CHARS * 4].split())}".strip()
        if len(text) >= MAX_EXCERPT_CHARS:
            break
    return text[:MAX_EXCERPT_CHARS]


_QUOTED = 1000  # unchanged lines looked for at each end of an edit: it quotes a few around its change
_AROUND = 20  # unchanged lines kept around a change, for the scrubbing of secrets: a key's BEGIN and END lines
_MAX_EDIT = 200_000  # characters of an edit's old and new text read: its change is said from its head


def _bounds(before: list[str], after: list[str]) -> tuple[int, int] | None:
    """How many lines old and new share at their start and at their end (trailing spaces aside); None when
    they differ nowhere in their first lines."""
    most = min(len(before), len(after), _QUOTED)
    start = 0
    while start < most and before[start].rstrip() == after[start].rstrip():
        start += 1
    if start == _QUOTED or (start == len(before) == len(after)):
        return None
    most = min(len(before) - start, len(after) - start, _QUOTED)
    end = 0
    while end < most and before[-1 - end].rstrip() == after[-1 - end].rstrip():
        end += 1
    return start, end


def changed_lines(old: str, new: str, around: int = 0) -> tuple[str, str]:
    """The lines an edit takes out and puts in, without the unchanged lines it quotes around them (but
    ``around`` of them on each side); nothing when no change is found among its first lines."""
    before, after = old[:_MAX_EDIT].splitlines(), new[:_MAX_EDIT].splitlines()
    bounds = _bounds(before, after)
    if bounds is None:
        return "", ""
    start, end = bounds
    first, tail = max(0, start - around), max(0, end - around)
    shown = start + 400 + around  # more lines than an excerpt holds
    taken, put = before[first : min(len(before) - tail, shown)], after[first : min(len(after) - tail, shown)]
    return "\n".join(taken), "\n".join(put)


def _change(call: ToolCall, params: dict[str, Any]) -> None:
    """What an Edit, MultiEdit, NotebookEdit or Write changes. Its new lines, flattened and cut short, are
    the excerpt. For an edit of one place, the old and new lines around the change are kept too, for what
    is said of it (docs/learning.md): with several, which old lines went with which new ones can't be said
    in one line."""
    pairs: list[tuple[str, str]] = []
    for key in ("new_string", "new_source", "content"):
        if isinstance(params.get(key), str):
            pairs.append((_text(params.get("old_string")) if key == "new_string" else "", params[key]))
    edits = params.get("edits")
    if isinstance(edits, list):
        for edit in edits[:4]:
            if isinstance(edit, dict) and isinstance(edit.get("new_string"), str):
                pairs.append((_text(edit.get("old_string")), edit["new_string"]))
    windows = [window for window in (changed_lines(old, new, _AROUND) for old, new in pairs) if any(window)]
    call.excerpt = _flat(changed_lines(*window)[1] for window in windows)
    if len(windows) == 1 and windows[0][0]:
        call.change = windows[0]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
