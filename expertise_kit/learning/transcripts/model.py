"""The format-neutral picture of an agent session that every reader produces."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_SAID_CHARS = 300
MAX_EXCERPT_CHARS = 240

__all__ = [
    "MAX_SAID_CHARS",
    "MAX_EXCERPT_CHARS",
    "ToolCall",
    "Session",
    "MAX_ERROR_CHARS",
    "MAX_COMMAND_CHARS",
    "MAX_PROMPT_CHARS",
    "MAX_TASK_CHARS",
    "MAX_SUMMARY_CHARS",
    "MAX_SESSION_ID_CHARS",
    "record_kind",
    "safe_session_id",
    "settle_session_id",
]

MAX_ERROR_CHARS = 4000  # kept per failed call while reading; the stored error is cut to 200 later
MAX_COMMAND_CHARS = 2000
# A prompt is kept whole up to this, so that the rule reader sees a pasted document as the document it is.
# Typed prompts in real sessions run to about 2,600 characters; one cut here was pasted, and says so by its length.
MAX_PROMPT_CHARS = 4000
MAX_TASK_CHARS = 1000  # of a prompt, when it is classified as the session's task
# A compaction summary is the model's own account of the work so far ("Errors and fixes" included);
# real ones run to about 20,000 characters.
MAX_SUMMARY_CHARS = 40_000
MAX_SESSION_ID_CHARS = 128
# ASCII only, spelled out: `\w` would let in any Unicode letter, and `$` would let in a trailing newline.
_SAFE_ID = re.compile(rf"[A-Za-z0-9_.:-]{{1,{MAX_SESSION_ID_CHARS}}}")


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
    said: str = ""  # what the agent wrote just before this call (its reasoning about a failure, often)
    excerpt: str = ""  # an edit's new lines, a short head of them: what the change was
    # An edit of one place: its old and new lines around the change (a few unchanged ones kept), raw; what
    # it took out is read from them once secrets are scrubbed.
    change: tuple[str, str] = ("", "")
    output: str = ""  # a piped command's output when it exited 0: a pipe hides the exit code of what failed
    # Run outside the agent's sandbox: the parameter that asked for it, as the harness spells it
    # (`sandbox_permissions: "require_escalated"`), else "".
    escalated: str = ""


# A slash command with no arguments: `/specify`, `/speckit.clarify`, `/review`.
BARE_COMMAND = re.compile(r"\s*/[\w:.-]+\s*")


@dataclass
class Session:
    id: str
    format: str
    source: Path
    cwd: str | None = None
    prompts: list[str] = field(default_factory=list)  # the user's own requests, the task first
    summaries: list[str] = field(default_factory=list)  # compaction summaries' text, in order
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
    def task(self) -> str:
        """What the session was asked to do: its first prompt that is more than a bare slash command
        (`/clarify` alone names a template, not the work; what the user typed next does), else the first."""
        for prompt in self.prompts:
            if prompt.strip() and not BARE_COMMAND.fullmatch(prompt):
                return prompt
        return next((p for p in self.prompts if p.strip()), "")

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


def safe_session_id(raw: str) -> str:
    """``raw`` when it is plain enough to stand in a commit trailer, else ``sha-`` and a digest of it.

    A session id ends up in ``Expertise-Session:`` trailers and commit subjects. Transcripts are
    untrusted: an id holding a newline would write trailers of its own (``Expertise-Change: reverted``,
    ``Signed-off-by: ...``) into our commit, so only a conservative charset passes. The digest keeps the
    same raw id mapping to the same session, so repeated learning from it still groups together.
    """
    if _SAFE_ID.fullmatch(raw):
        return raw
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"sha-{digest}"


def settle_session_id(session: Session) -> None:
    """Replace an unsafe ``session.id`` in place, saying so in the session's warnings."""
    safe = safe_session_id(session.id)
    if safe == session.id:
        return
    shown = session.id if len(session.id) <= 60 else session.id[:60] + "..."
    session.warnings.append(
        f"{session.source}: session id {shown!r} has characters a commit trailer can't carry "
        f"(allowed: letters, digits, - _ . :, up to {MAX_SESSION_ID_CHARS}); using {safe}"
    )
    session.id = safe
