"""The format-neutral picture of an agent session that every reader produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ToolCall", "Session", "MAX_ERROR_CHARS", "MAX_COMMAND_CHARS", "MAX_PROMPT_CHARS", "record_kind"]

MAX_ERROR_CHARS = 4000  # kept per failed call while reading; the stored error is cut to 200 later
MAX_COMMAND_CHARS = 2000
MAX_PROMPT_CHARS = 1000


@dataclass(slots=True)
class ToolCall:
    call_id: str
    name: str  # canonical: Bash, Read, Write, Edit, MultiEdit, NotebookEdit, Grep, Glob, apply_patch, ...
    command: str = ""  # the shell command, for shell tools
    paths: tuple[str, ...] = ()  # files the call reads or writes, as the transcript names them
    modifies: tuple[str, ...] = ()  # files it writes
    deletes: tuple[str, ...] = ()  # files it removes (`git rm`, a `git mv` source, a patch's Delete File)
    ok: bool | None = None  # None: no result was recorded (an interrupted or truncated session)
    error: str = ""
    exit_code: int | None = None
    interrupted: bool = False  # the user stopped it or refused permission: not a lesson about the code
    thread: str = "main"
    timestamp: str = ""


@dataclass
class Session:
    id: str
    format: str
    source: Path
    cwd: str | None = None
    prompts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)  # each call once, grouped by thread, in order
    ended_well: bool = False
    started: str = ""
    ended: str = ""
    files_read: list[Path] = field(default_factory=list)
    records: int = 0
    skipped_lines: int = 0
    branches: int = 1
    warnings: list[str] = field(default_factory=list)

    @property
    def threads(self) -> dict[str, list[ToolCall]]:
        grouped: dict[str, list[ToolCall]] = {}
        for call in self.calls:
            grouped.setdefault(call.thread, []).append(call)
        return grouped


def record_kind(record: dict[str, object]) -> str | None:
    """A record's ``type``, when it is a string: logs are untrusted, and a list there must not crash us."""
    kind = record.get("type")
    return kind if isinstance(kind, str) else None
