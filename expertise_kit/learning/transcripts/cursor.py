"""Cursor's agent transcripts: ``~/.cursor/projects/<workspace path, "/" as "-">/agent-transcripts/``, one
JSON-lines file per conversation (``<id>.jsonl`` from the CLI, ``<id>/<id>.jsonl`` from the IDE).

Each line is ``{"role": "user"|"assistant", "message": {"content": [...]}}``: ``text`` blocks (the user's
wrapped in ``<user_query>``) and the assistant's ``tool_use`` blocks (``name`` and ``input``). That is all
there is: no call ids, no tool results, no exit codes, no timestamps. So a Cursor session tells us its
task, the commands it ran and the files it edited (edits are taken as applied), but never whether a call
failed: no failure, fix or "ended well" can be learned from it, and the reader says so in the session's
warnings.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path
from typing import Any

from expertise_kit.errors import UserError
from expertise_kit.learning.transcripts.lines import LineReport, json_lines
from expertise_kit.learning.transcripts.model import MAX_SAID_CHARS, Session, settle_session_id
from expertise_kit.learning.transcripts.prompts import task_text
from expertise_kit.learning.transcripts.tools import set_command, tool_call

__all__ = ["read_cursor", "cursor_record", "find_cursor_transcript", "NO_OUTCOMES"]

NO_OUTCOMES = "Cursor's transcript records no tool results: its failures and fixes can't be learned"
# Cursor's tool names (the older snake_case ones and the newer ones), as the canonical names the learner
# knows, with the input field naming the file.
_CANONICAL: dict[str, tuple[str, tuple[str, ...]]] = {
    "run_terminal_cmd": ("Bash", ("command",)),
    "shell": ("Bash", ("command",)),
    "edit_file": ("Edit", ("target_file", "file_path", "path")),
    "search_replace": ("Edit", ("file_path", "target_file", "path")),
    "strreplace": ("Edit", ("path", "file_path", "target_file")),
    "multiedit": ("Edit", ("file_path", "path")),
    "write": ("Write", ("file_path", "path", "target_file")),
    "read_file": ("Read", ("target_file", "file_path", "path")),
    "read": ("Read", ("path", "file_path", "target_file")),
    "grep": ("Grep", ()),
    "glob_file_search": ("Glob", ()),
}
_QUERY = re.compile(r"</?user_query>")


def cursor_record(record: dict[str, Any]) -> bool:
    """Whether a JSON line looks like Cursor's: a role and a message, and no ``type`` of its own."""
    return (
        "type" not in record and record.get("role") in ("user", "assistant") and isinstance(record.get("message"), dict)
    )


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    content = record["message"].get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def read_cursor(path: Path, *, label: Path | None = None) -> Session:
    """``label`` is the name the user gave when ``path`` is a private copy of it (a pipe read once)."""
    shown = label or path
    report = LineReport(shown)
    session = Session(id="", format="cursor", source=shown)
    said = ""
    seen = 0
    for record in json_lines(path, report):
        number = report.lines
        if not cursor_record(record):
            report.skip(number, "not a Cursor transcript line")
            continue
        seen += 1
        for block in _blocks(record):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                if record["role"] == "user":
                    text = task_text(_QUERY.sub("", block["text"]))
                    if text:
                        session.prompts.append(text)
                else:
                    said = block["text"][:MAX_SAID_CHARS]
            elif kind == "tool_use" and record["role"] == "assistant" and isinstance(block.get("name"), str):
                session.calls.append(_call(block, f"line{number}.{len(session.calls)}", said))
                said = ""
    if seen == 0 and report.skipped:
        raise UserError("no Cursor transcript lines in it", path=shown, hint="pass an agent-transcripts/*.jsonl file")
    session.records = seen
    session.skipped_lines = report.skipped
    session.warnings = [*report.messages, *session.warnings]
    if session.calls:
        session.warnings.append(f"{shown}: {NO_OUTCOMES}")
    session.id = shown.stem
    settle_session_id(session)
    return session


def _call(block: dict[str, Any], call_id: str, said: str) -> Any:
    name = str(block["name"])
    given = block.get("input")
    params: dict[str, Any] = given if isinstance(given, dict) else {}
    canonical, fields = _CANONICAL.get(name.lower(), (name, ()))
    if canonical == "Bash":
        call = tool_call(call_id, "Bash", {}, "main", "")
        if isinstance(params.get("command"), str):
            set_command(call, params["command"])
    else:
        path = next((params[f] for f in fields if isinstance(params.get(f), str)), None)
        key = {"Edit": "file_path", "Write": "file_path", "Read": "file_path"}.get(canonical)
        call = tool_call(call_id, canonical, {**params, key: path} if key and path else params, "main", "")
    call.said = said
    # Cursor records no outcome. An edit is taken as made (Cursor applies its edit tools' changes to the
    # working tree as they come), so the files a session edited are learned; whether a command or an edit's
    # match failed stays unknown (None), so nothing is learned as a failure or as its fix.
    if call.modifies:
        call.ok = True
    return call


def find_cursor_transcript(conversation_id: str, home: str | None = None) -> str | None:
    """The transcript of a Cursor conversation, found by its id under ``~/.cursor/projects``: Cursor's
    CLI hands hooks no ``transcript_path``."""
    if not conversation_id or not all(c.isalnum() or c in "-_" for c in conversation_id):
        return None
    base = os.path.join(home or os.path.expanduser("~"), ".cursor", "projects", "*", "agent-transcripts")
    for pattern in (f"{conversation_id}.jsonl", os.path.join(conversation_id, f"{conversation_id}.jsonl")):
        found = sorted(glob.glob(os.path.join(base, pattern)), key=os.path.getmtime)
        if found:
            return found[-1]
    return None
