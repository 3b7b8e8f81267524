"""The generic tool-call log: JSON lines of ``{"type": "tool_use", "tool_name", "input"}`` and
``{"type": "tool_result", "success"}``, paired by ``id``/``tool_use_id`` or else by order.

Optional lines: ``{"type": "task", "description": ...}`` (or ``user``/``prompt`` with ``text``) for the
task, ``{"session_id": ...}`` on any line, and ``{"type": "result", "status": "completed"|"error"}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from expertise_kit.learning.transcripts.lines import LineReport, json_lines
from expertise_kit.learning.transcripts.model import (
    MAX_ERROR_CHARS,
    MAX_PROMPT_CHARS,
    Session,
    ToolCall,
    settle_session_id,
)
from expertise_kit.learning.transcripts.model import record_kind as _kind
from expertise_kit.learning.transcripts.tools import tool_call

__all__ = ["read_generic", "GENERIC_TYPES"]

GENERIC_TYPES = {"tool_use", "tool_result"}


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return str(value)


def read_generic(path: Path, *, label: Path | None = None) -> Session:
    """``label`` is the name the user gave when ``path`` is a private copy of it (a pipe read once)."""
    shown = label or path
    session = Session(id=shown.stem, format="generic", source=shown, files_read=[shown])
    report = LineReport(shown)
    by_id: dict[str, ToolCall] = {}
    unpaired: list[ToolCall] = []
    status = ""
    for record in json_lines(path, report):
        session.records += 1
        if isinstance(record.get("session_id"), (str, int)) and str(record["session_id"]):
            session.id = str(record["session_id"])
        stamp = _text(record.get("timestamp"))
        kind = _kind(record)
        if kind == "tool_use":
            name = _text(record.get("tool_name") or record.get("name") or "?")
            call = tool_call(_text(record.get("id")), name, record.get("input"), "main", stamp)
            session.calls.append(call)
            unpaired.append(call)
            if call.call_id:
                by_id[call.call_id] = call
        elif kind == "tool_result":
            key = _text(record.get("tool_use_id") or record.get("id"))
            found = by_id.get(key) if key else None
            if found is None and unpaired:
                found = unpaired[-1]
            if found is None:
                report.skip(report.lines, "a tool_result with no tool_use before it")
                continue
            call = found
            if call in unpaired:
                unpaired.remove(call)
            exit_code = record.get("exit_code")
            call.exit_code = exit_code if isinstance(exit_code, int) else None
            call.ok = bool(record.get("success", call.exit_code in (None, 0)))
            if not call.ok:
                call.error = (_text(record.get("error")) or _text(record.get("output")))[:MAX_ERROR_CHARS]
        elif kind in ("task", "user", "prompt"):
            text = _text(record.get("description") or record.get("text") or record.get("content")).strip()
            if text:
                session.prompts.append(text[:MAX_PROMPT_CHARS])
        elif kind in ("result", "status"):
            status = _text(record.get("status"))
        session.started = session.started or stamp
        session.ended = stamp or session.ended
    session.skipped_lines = report.skipped
    session.warnings = report.messages
    calls = session.calls
    session.ended_well = status == "completed" or (not status and bool(calls) and calls[-1].ok is True)
    settle_session_id(session)
    return session
