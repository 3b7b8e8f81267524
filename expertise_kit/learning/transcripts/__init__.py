"""Reading agent session transcripts into one format-neutral ``Session``.

``read_transcript(path, "auto")`` detects Claude Code, Codex or the spec's generic log from the first
records; every reader streams the file in constant memory and skips, and reports, lines it can't use.
"""

from __future__ import annotations

from pathlib import Path

from expertise_kit.errors import UserError
from expertise_kit.learning.transcripts.claude import read_claude
from expertise_kit.learning.transcripts.codex import CODEX_TYPES, read_codex
from expertise_kit.learning.transcripts.generic import GENERIC_TYPES, read_generic
from expertise_kit.learning.transcripts.lines import LineReport, json_lines, looks_binary
from expertise_kit.learning.transcripts.model import Session, ToolCall
from expertise_kit.learning.transcripts.model import record_kind as _kind

__all__ = ["FORMATS", "Session", "ToolCall", "detect_format", "read_transcript"]

FORMATS = ("auto", "claude-code", "codex", "generic")
_CLAUDE_TYPES = {"user", "assistant", "summary", "system", "progress", "file-history-snapshot", "queue-operation"}


def detect_format(path: Path) -> str | None:
    """The format the first records show: None for an empty file, "unknown" when none says."""
    report = LineReport(path)
    seen = 0
    for record in json_lines(path, report):
        seen += 1
        kind = _kind(record)
        if kind in CODEX_TYPES or isinstance(record.get("payload"), dict):
            return "codex"
        if "sessionId" in record or "parentUuid" in record or kind in _CLAUDE_TYPES - {"user", "assistant"}:
            return "claude-code"
        if kind in GENERIC_TYPES and ("tool_name" in record or "success" in record):
            return "generic"
        if "call_id" in record or (kind == "message" and "role" in record):
            return "codex"
        if seen >= 50:
            break
    return None if seen == 0 and report.skipped == 0 else "unknown"


def read_transcript(path: Path, fmt: str = "auto") -> Session:
    if not path.exists():
        raise UserError("transcript not found", path=path, hint="check the path")
    if path.is_dir():
        raise UserError("is a directory, not a transcript", path=path, hint="pass the .jsonl file")
    if looks_binary(path):
        raise UserError("is a binary file, not a JSON-lines transcript", path=path, hint="pass the session .jsonl")
    if fmt == "auto":
        detected = detect_format(path)
        if detected is None:
            session = Session(id=path.stem, format="empty", source=path, files_read=[path])
            session.warnings.append(f"{path}: empty transcript, nothing to learn")
            return session
        if detected == "unknown":
            raise UserError(
                "can't tell which agent wrote this transcript",
                path=path,
                hint="pass --format claude-code, codex or generic",
            )
        fmt = detected
    if fmt == "claude-code":
        return read_claude(path)
    if fmt == "codex":
        return read_codex(path)
    if fmt == "generic":
        return read_generic(path)
    raise UserError(f"unknown format {fmt!r}", hint="use one of " + ", ".join(FORMATS))
