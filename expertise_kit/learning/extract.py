"""Turning one Session into candidate learnings: failures and their fixes, files touched, tool
patterns that worked, and the technique of a session that ended well.

Every string that may be stored is scrubbed of secrets and cut to size here, before it can
reach a file, a commit or ``--json`` output: always the whole text first (a command, an output, a
prompt), then its paths made portable, then the cut, so no cut can leave part of a secret behind.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Any

from expertise_kit import clock
from expertise_kit.clock import iso
from expertise_kit.document.ids import error_signature, normalise_path
from expertise_kit.fast.render import strip_controls
from expertise_kit.learning.redact import redact
from expertise_kit.learning.transcripts.model import Session, ToolCall
from expertise_kit.learning.transcripts.shell import program_of

__all__ = ["Learning", "Rejected", "Extraction", "extract", "ISSUE_CHARS", "ERROR_CHARS", "TEXT_CHARS"]

ISSUE_CHARS = 100  # a one-line summary: what was being done
ERROR_CHARS = 200  # the telling line of the error, not the whole log
TEXT_CHARS = 200
PATH_CHARS = 300
MAX_FILES_PER_SESSION = 50

_TEST_PROGRAMS = {
    "pytest", "python -m pytest", "python -m unittest", "npm test", "yarn test", "pnpm test", "bun test",
    "go test", "cargo test", "jest", "vitest", "mocha", "rspec", "phpunit", "tox", "nox", "make test",
    "mvn test", "gradle test", "dotnet test", "deno test", "ctest",
}  # fmt: skip
_CHECK_PROGRAMS = _TEST_PROGRAMS | {
    "tsc", "mypy", "ruff", "eslint", "flake8", "pyright", "npm build", "yarn build", "pnpm build", "npm lint",
    "npm typecheck", "cargo build", "cargo check", "cargo clippy", "go build", "go vet", "make", "make check",
}  # fmt: skip
_ERRORISH = re.compile(
    r"error|exception|traceback|failed|failure|fatal|not found|no such file|cannot|can't|denied|invalid|"
    r"refused|timed? ?out|undefined|unexpected|missing|EISDIR|ENOENT|EACCES|panic|abort",
    re.I,
)
_WARNING = re.compile(r"^\s*(?:npm\s+)?warn(?:ing)?\b", re.I)


@dataclass
class Learning:
    kind: str  # "failure", "file", "pattern" or "technique"
    section: str
    raw: dict[str, Any]
    text: str  # for routing and reports
    files: list[str] = field(default_factory=list)


@dataclass
class Rejected:
    kind: str
    text: str
    reason: str


@dataclass
class Extraction:
    session: Session
    learnings: list[Learning] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    failures_seen: int = 0
    modified_files: list[str] = field(default_factory=list)  # as the transcript names them
    deleted_files: list[str] = field(default_factory=list)
    task: str = ""


_HOME = re.compile(r"(?:/Users|/home)/[^/\s]+|[A-Za-z]:\\Users\\[^\\\s]+")


def _portable(text: str, bases: tuple[str, ...]) -> str:
    """Project paths made relative and home directories made ``~``: portable, and no user names leak."""
    for base in bases:
        if base and base != "/":
            text = text.replace(base + "/", "").replace(base, ".")
    return _HOME.sub("~", text)


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


@dataclass
class _Context:
    """Per-session helpers: transcript paths mapped into the project, and the text cleaner."""

    rel: dict[str, str]
    bases: tuple[str, ...]

    def clean(self, text: str, limit: int) -> str:
        return _cut(_portable(redact(strip_controls(text)), self.bases), limit)

    def first_line(self, text: str, limit: int) -> str:
        """The first line of ``text``, cleaned: redacted whole first, as a secret may span lines."""
        scrubbed = redact(text).strip()
        return self.clean(scrubbed.splitlines()[0] if scrubbed else "", limit)


def _moment(stamp: str) -> str:
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return iso(clock.now())
    return iso(parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc))


def relative_path(path: str, cwd: str | None, root: str | None) -> str | None:
    """The path relative to the project, or None when it lies outside it (``/tmp``, ``~/.claude``)."""
    cleaned = path.strip().replace("\\", "/")
    if not cleaned:
        return None
    if not cleaned.startswith("/") and not re.match(r"^[A-Za-z]:/", cleaned):
        relative = normalise_path(cleaned)
        return None if relative.startswith("../") or relative == ".." else relative
    for base in (root, cwd):
        if base:
            base_clean = base.replace("\\", "/").rstrip("/")
            if cleaned == base_clean:
                return None
            if cleaned.startswith(base_clean + "/"):
                return normalise_path(cleaned[len(base_clean) + 1 :])
    return None


_STRONG = re.compile(r"\b[A-Z]?\w*(?:Error|Exception)\b|Traceback|^E\s{2,}|\bfatal:|\bpanic:|\berror\b[:\[ ]", re.I)


def _error_score(line: str) -> int:
    if _WARNING.match(line):
        return -1
    if line.startswith("Traceback (most recent call last)"):
        return 1  # the exception itself comes last
    score = 0
    if line.startswith("E  "):
        score += 2  # pytest's own marker for the failing assertion
    if _STRONG.search(line):
        score += 2
    if _ERRORISH.search(line):
        score += 1
    return score


def pick_error(text: str) -> str:
    """The most telling line of an error output: the first of the strongest error-like lines.

    ``E   AssertionError: assert 1999 == 2000`` beats ``1 failed in 0.12s``; a warning never wins.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    best = max(_error_score(line) for line in lines)
    return next(line for line in lines if _error_score(line) == best)


def _describe_call(call: ToolCall, ctx: _Context) -> str:
    if call.command:
        return f"`{ctx.first_line(call.command, 80)}`"
    if call.paths:
        return f"{call.name} {ctx.rel.get(call.paths[0], PurePosixPath(call.paths[0]).name)}"
    return call.name


def _kind_key(call: ToolCall) -> tuple[str, str]:
    if call.command:
        return ("Bash", program_of(call.command))
    return (call.name, call.paths[0] if call.paths else "")


def _solution(failed: ToolCall, later: list[ToolCall], ctx: _Context) -> str | None:
    """What changed between a failure and the next success of the same kind of call, if anything did."""
    rel = ctx.rel
    key = _kind_key(failed)
    target = failed.paths[0] if failed.paths else None
    reads: list[str] = []
    edits: list[str] = []
    commands: list[str] = []
    for call in later:
        if call.interrupted or call.ok is not True:
            continue
        if _kind_key(call) == key:
            parts = []
            if reads:
                parts.append(f"read {', '.join(dict.fromkeys(reads))} first")
            if edits:
                shown = list(dict.fromkeys(edits))
                parts.append(
                    "edited " + ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
                )
            parts += list(dict.fromkeys(commands))[:2]
            if call.command and call.command.strip() != failed.command.strip():
                parts.append(f"then ran {_describe_call(call, ctx)} instead")
            return "; ".join(parts) or None  # nothing changed: it just worked on a retry
        if call.name == "Read" and call.paths and call.paths[0] == target:
            reads.append(rel.get(call.paths[0], PurePosixPath(call.paths[0]).name))
        elif call.modifies:
            edits.extend(rel.get(p, PurePosixPath(p).name) for p in call.modifies)
        elif call.command and not _is_test(call.command):
            commands.append(f"ran {_describe_call(call, ctx)}")
    return None


def _provenance(session: Session, stamp: str) -> dict[str, Any]:
    moment = _moment(stamp or session.ended or session.started)
    return {"source": "learned", "sessions": [session.id], "first_seen": moment, "last_seen": moment}


def _is_test(command: str) -> bool:
    program = program_of(command)
    return program in _TEST_PROGRAMS or program.endswith(" test") or program.startswith("test")


def _failures(extraction: Extraction, ctx: _Context) -> None:
    rel = ctx.rel
    session = extraction.session
    seen: set[str] = set()
    for calls in session.threads.values():
        for position, call in enumerate(calls):
            if call.ok is not False or call.interrupted:
                continue
            extraction.failures_seen += 1
            # The whole output is scrubbed before a line of it is picked: a key may span lines.
            error = pick_error(redact(call.error)) or f"{call.name} failed"
            if call.exit_code not in (None, 0) and not _ERRORISH.search(error):
                error = f"exit code {call.exit_code}: {error}"
            signature = error_signature(error)
            if signature in seen:
                continue
            seen.add(signature)
            raw: dict[str, Any] = {
                "issue": ctx.clean(_describe_call(call, ctx), ISSUE_CHARS),
                "error": ctx.clean(error, ERROR_CHARS),
            }
            solution = _solution(call, calls[position + 1 :], ctx)
            if solution:
                raw["solution"] = ctx.clean(solution, ERROR_CHARS)
            raw.update(_provenance(session, call.timestamp))
            files = [rel[p] for p in call.paths if p in rel]
            extraction.learnings.append(
                Learning("failure", "learned_from_failures", raw, f"{raw['issue']} {raw['error']}", files)
            )


def _files(extraction: Extraction, ctx: _Context) -> None:
    rel = ctx.rel
    session = extraction.session
    counts: dict[str, int] = {}
    stamps: dict[str, str] = {}
    order: list[str] = []
    for call in session.calls:
        if call.ok is not True:
            continue
        for path in call.modifies:
            if path not in order:
                order.append(path)
            counts[path] = counts.get(path, 0) + 1
            stamps[path] = call.timestamp
        for path in call.deletes:
            counts.pop(path, None)  # a file the session deleted is no core file
            if path not in extraction.deleted_files:
                extraction.deleted_files.append(path)
    # Paths are reported in --json too, and a path can hold a token (`/tmp/ghp_.../x`).
    extraction.modified_files = [redact(p) for p in order]
    extraction.deleted_files = [redact(p) for p in extraction.deleted_files]
    inside = [p for p in order if p in counts and rel.get(p)]
    for path in order:
        if path in counts and not rel.get(path):
            extraction.rejected.append(Rejected("file", _cut(redact(path), PATH_CHARS), "outside the project"))
    ranked = sorted(inside, key=lambda p: -counts[p])
    for path in ranked[MAX_FILES_PER_SESSION:]:
        reason = f"more than {MAX_FILES_PER_SESSION} files in one session"
        extraction.rejected.append(Rejected("file", ctx.clean(rel[path], PATH_CHARS), reason))
    for path in [p for p in inside if p in ranked[:MAX_FILES_PER_SESSION]]:
        raw = {"path": ctx.clean(rel[path], PATH_CHARS), **_provenance(session, stamps[path])}
        extraction.learnings.append(Learning("file", "core_files", raw, raw["path"], [rel[path]]))


def _patterns(extraction: Extraction) -> None:
    session = extraction.session
    found: dict[str, str] = {}
    for calls in session.threads.values():
        read: set[str] = set()
        edited_after_read: set[str] = set()
        for index, call in enumerate(calls):
            if call.ok is not True:
                continue
            if call.name == "Read" and call.paths:
                read.add(call.paths[0])
            elif call.modifies and call.name != "Bash" and call.modifies[0] in read:
                edited_after_read.add(call.modifies[0])
            elif call.command and _is_test(call.command) and edited_after_read:
                program = program_of(call.command)
                found[f"read-edit-test:{program}"] = (
                    f"Read -> Edit -> `{program}` passing: read each file before editing it, then run the tests"
                )
                edited_after_read.clear()
            if call.name in ("Grep", "Glob") and index + 1 < len(calls):
                following = calls[index + 1]
                if following.name == "Read" and following.ok:
                    found[f"search-read:{call.name}"] = (
                        f"{call.name} -> Read: locate the files with {call.name} first, then read only those"
                    )
    for text in found.values():
        text = redact(text)  # the program's name comes from a command
        raw = {"text": text, **_provenance(session, session.ended)}
        extraction.learnings.append(Learning("pattern", "effective_patterns", raw, text))


def _technique(extraction: Extraction, ctx: _Context) -> None:
    rel = ctx.rel
    session = extraction.session
    main = session.threads.get("main", [])
    if not session.ended_well:
        if main:
            extraction.rejected.append(Rejected("technique", extraction.task, "the session did not end well"))
        return
    last_edit = max((i for i, c in enumerate(main) if c.ok and c.modifies), default=-1)
    if last_edit < 0:
        return
    checks = [c for c in main[last_edit + 1 :] if c.ok and c.command and program_of(c.command) in _CHECK_PROGRAMS]
    if not checks:
        extraction.rejected.append(
            Rejected("technique", extraction.task, "no passing test or check after the last edit")
        )
        return
    files = list(dict.fromkeys(rel[p] for c in main if c.ok for p in c.modifies if p in rel))
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    task = extraction.task or "the task"
    check = ctx.clean(checks[-1].command, 60)
    text = ctx.clean(f"{_cut(task, 80)}: changed {shown or 'files'}, verified with `{check}`", TEXT_CHARS)
    raw = {"text": text, **_provenance(session, checks[-1].timestamp)}
    extraction.learnings.append(Learning("technique", "successful_techniques", raw, text, files))


def extract(session: Session, project_root: str | None) -> Extraction:
    extraction = Extraction(session)
    root = os.path.realpath(project_root) if project_root else None
    rel: dict[str, str] = {}
    for call in session.calls:
        for path in (*call.paths, *call.modifies, *call.deletes):
            if path not in rel:
                relative = relative_path(path, session.cwd, root)
                if relative:
                    rel[path] = relative
    bases = tuple(sorted({b.rstrip("/") for b in (root, session.cwd) if b}, key=len, reverse=True))
    ctx = _Context(rel, bases)
    prompt = next((p for p in session.prompts if p.strip()), "")
    extraction.task = ctx.first_line(prompt, ISSUE_CHARS)
    _failures(extraction, ctx)
    _files(extraction, ctx)
    _patterns(extraction)
    _technique(extraction, ctx)
    return extraction
