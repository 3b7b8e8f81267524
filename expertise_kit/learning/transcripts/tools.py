"""Building a ToolCall from a tool name and its input, for Claude-style tool names."""

from __future__ import annotations

from typing import Any

from expertise_kit.learning.transcripts.model import MAX_COMMAND_CHARS, MAX_EXCERPT_CHARS, ToolCall
from expertise_kit.learning.transcripts.shell import file_effects

__all__ = ["tool_call", "patch_files", "set_command", "set_patch"]

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
        call.excerpt = _new_text(params)
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
    added = [line[1:].strip() for line in patch.splitlines()[:400] if line.startswith("+") and line[1:].strip()]
    call.excerpt = " ".join(added)[:MAX_EXCERPT_CHARS]


def _new_text(params: dict[str, Any]) -> str:
    """The new lines an Edit, MultiEdit, NotebookEdit or Write puts in, flattened and cut short."""
    pieces: list[str] = []
    for key in ("new_string", "new_source", "content"):
        if isinstance(params.get(key), str):
            pieces.append(params[key][: MAX_EXCERPT_CHARS * 2])
    edits = params.get("edits")
    if isinstance(edits, list):
        for edit in edits[:4]:
            if isinstance(edit, dict) and isinstance(edit.get("new_string"), str):
                pieces.append(edit["new_string"][:MAX_EXCERPT_CHARS])
    return " ".join(" ".join(pieces).split())[:MAX_EXCERPT_CHARS]
