"""Reading agent session transcripts into one format-neutral ``Session``.

``read_sessions(path, "auto")`` detects Claude Code, Codex, Gemini CLI, an Aider chat history or the generic
tool-call log from the file's name and first records, and returns its sessions: one for a JSON-lines transcript,
every session in the file for an Aider history. ``read_transcript`` is the same for a file that holds one
session. Every reader streams the file in constant memory and skips, and reports, lines it can't use. A
transcript that can be read only once (a pipe, ``-`` for stdin) is first copied to a temporary file, so
detection and reading both see all of it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from importlib import import_module
from pathlib import Path

from expertise_kit import vocab
from expertise_kit.errors import UserError, bug_in
from expertise_kit.learning.transcripts.aider import AIDER_HISTORY, AIDER_STARTED
from expertise_kit.learning.transcripts.codex import CODEX_TYPES
from expertise_kit.learning.transcripts.cursor import cursor_record
from expertise_kit.learning.transcripts.gemini import gemini_document
from expertise_kit.learning.transcripts.generic import GENERIC_TYPES
from expertise_kit.learning.transcripts.lines import (
    LineReport,
    binary_file,
    json_lines,
    looks_binary,
    read_once,
    spooled,
)
from expertise_kit.learning.transcripts.model import Session, ToolCall, settle_session_id
from expertise_kit.learning.transcripts.model import record_kind as _kind
from expertise_kit.vocab import format_names

__all__ = [
    "FORMATS",
    "STDIN",
    "Session",
    "ToolCall",
    "detect_format",
    "iter_sessions",
    "read_sessions",
    "read_transcript",
]

FORMATS = ("auto", *format_names())
# Each format's reader, from the one table of formats in ``vocab``.
_READERS: dict[str, Callable[..., Session | list[Session]]] = {
    name: getattr(import_module(module), function) for name, module, function in vocab.FORMATS
}
STDIN = Path("/dev/stdin")  # how `-` is named in messages and the session record
_CLAUDE_TYPES = {"user", "assistant", "summary", "system", "progress", "file-history-snapshot", "queue-operation"}


def _aider_history(path: Path) -> bool:
    """Aider's Markdown history: by its usual name, or by the header its first line carries."""
    if path.name.endswith(AIDER_HISTORY):
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).decode("utf-8-sig", "replace")
    except OSError:
        return False
    return head.lstrip().startswith(AIDER_STARTED)


def detect_format(path: Path) -> str | None:
    """The format the first records show: None for an empty file, "unknown" when none says."""
    if _aider_history(path) and path.stat().st_size > 0:
        return "aider"
    if gemini_document(path):
        return "gemini"
    report = LineReport(path)
    seen = 0
    for record in json_lines(path, report):
        seen += 1
        kind = _kind(record)
        # Gemini CLI's `chats/session-*.jsonl`: a header with `projectHash`, then `gemini` turns with
        # `toolCalls`. It has a `sessionId` too, so it must be told apart before Claude Code is guessed.
        if "projectHash" in record or kind == "gemini" or "toolCalls" in record:
            return "gemini"
        if cursor_record(record):
            return "cursor"
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
    """The session ``path`` holds, read as format ``fmt``; ``-`` reads standard input."""
    sessions = read_sessions(path, fmt)
    if len(sessions) != 1:
        shown = STDIN if str(path) == "-" else path
        raise UserError(
            f"holds {len(sessions)} sessions, not one", path=shown, hint="read it with read_sessions()"
        )
    return sessions[0]


def read_sessions(path: Path, fmt: str = "auto") -> list[Session]:
    """Every session ``path`` holds, oldest first, read as format ``fmt``; ``-`` reads standard input."""
    if str(path) == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise UserError("`-` reads a transcript from standard input, but it is a terminal", hint="pipe one in")
        with spooled(sys.stdin.buffer, STDIN) as copy:
            return _read(copy, fmt, STDIN)
    if not path.exists():
        raise UserError("transcript not found", path=path, hint="check the path")
    if path.is_dir():
        raise UserError("is a directory, not a transcript", path=path, hint="pass the .jsonl file")
    if read_once(path):
        try:
            source = open(path, "rb")  # noqa: SIM115 - closed by the `with` below
        except OSError as exc:
            raise UserError(f"can't read it: {exc.strerror or exc}", path=path) from None
        with source, spooled(source, path) as copy:
            return _read(copy, fmt, path)
    return _read(path, fmt, path)


def iter_sessions(paths: Iterable[Path], fmt: str, errors: list[UserError]) -> Iterator[Session]:
    """The sessions of every transcript in ``paths``; a file that can't be read goes to ``errors``.

    Main sessions come first, so a subagent file named on the command line too is read once, as part
    of its session, and then skipped.
    """
    seen: set[Path] = set()
    for path in sorted(paths, key=lambda p: p.name.startswith("agent-")):
        if path.resolve() in seen:
            continue
        try:
            sessions = read_sessions(path, fmt)
        except UserError as exc:
            errors.append(exc)
            continue
        except Exception as exc:  # a reader's bug on input nobody foresaw: the other transcripts still count
            shown = STDIN if str(path) == "-" else path
            errors.append(bug_in("reader", exc, shown, "reading it", "nothing learned from it"))
            continue
        # An aider history is one file for thousands of sessions: each file read is resolved once.
        seen.update(p.resolve() for p in {p for session in sessions for p in session.files_read})
        yield from sessions


def _read(path: Path, fmt: str, label: Path) -> list[Session]:
    """Read ``path``, naming it ``label`` to the user (they differ when ``path`` is a pipe's copy)."""
    if looks_binary(path):
        raise binary_file(label)
    if fmt == "auto":
        detected = detect_format(path)
        if detected is None:
            session = Session(id=label.stem, format="empty", source=label, files_read=[label])
            session.warnings.append(f"{label}: empty transcript, nothing to learn")
            settle_session_id(session)
            return [session]
        if detected == "unknown":
            raise UserError(
                "can't tell which agent wrote this transcript",
                path=label,
                hint="pass --format " + ", ".join(format_names()[:-1]) + " or " + format_names()[-1],
            )
        fmt = detected
    reader = _READERS.get(fmt)
    if reader is None:
        raise UserError(f"unknown format {fmt!r}", hint="use one of " + ", ".join(FORMATS))
    read = reader(path, label=label)
    return read if isinstance(read, list) else [read]
