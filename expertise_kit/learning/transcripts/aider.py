"""Aider chat histories: ``.aider.chat.history.md`` in the project root, one file for all its sessions.

Aider appends Markdown to one file. ``# aider chat started at 2025-07-15 11:38:37`` starts a session;
``#### `` lines are what the user typed (consecutive ones are one message); lines that start with ``> ``
are aider's own output (``Applied edit to PATH``, ``Commit 1a2b3c4 message``, ``Running CMD``); the rest
is the model's answer. Only the first line of a multi-line notice is quoted, so its details (lint errors,
a search block that failed to match) follow as plain lines.

The history keeps no command output, only its traces. ``/test`` adds the output to the chat without
asking exactly when the command exits non-zero, so ``Added N lines of output to the chat.`` with no
question before it marks that command failed; a lint run that found errors prints "Fix any errors
below" and the linter's command line. Every session gets a stable id: a digest of the file's path and
the session's start time, so learning from the same file again recognises the sessions already learned.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path

from expertise_kit.learning.transcripts.lines import LineReport, text_lines
from expertise_kit.learning.transcripts.model import MAX_ERROR_CHARS, Session, ToolCall, settle_session_id
from expertise_kit.learning.transcripts.prompts import task_text
from expertise_kit.learning.transcripts.tools import set_command

__all__ = ["AIDER_HISTORY", "AIDER_STARTED", "read_aider"]

AIDER_HISTORY = ".aider.chat.history.md"
AIDER_STARTED = "# aider chat started at "
_STAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})")
_ANSWER = re.compile(r"\(Y\)es/\(N\)o")  # aider echoes the answers to its questions as typed input
_COMMIT = re.compile(r"Commit ([0-9a-f]{7,40}) (.+)")
_ADDED_OUTPUT = re.compile(r"Added \d+ lines? of output to the chat\.")
_NO_MATCH = "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in "
_LINT_HEADER = "# Fix any errors below, if possible."
_LINT_RUNNING = "## Running: "
# Aider's repo map meets a file git still tracks that is gone from the disk (the next notice asks "Has it
# been deleted from the file system but not from git?"): a fact about the project's git state.
_STALE_IN_MAP = "Repo-map can't include "
# An error aider printed about the model call: the provider's answer, litellm's exception, a traceback.
_MODEL_ERROR = re.compile(
    r"^(?:[\w.]+\.)?\w*(?:Error|Exception)\b(?::|$)|^Traceback \(most recent call last\)|"
    r"^The API provider (?:is not|has)|^(?:litellm|openai|anthropic)\.\w+"
)
# Aider's notices of what it did, which end an error block.
_NOTICES = ("Applied edit to ", "Running ", "Commit ", "Added ", _LINT_HEADER)
_MAX_PATH = 4096  # PATH_MAX on Linux, longer than on macOS and Windows
# Aider's own lines after a model's answer: its notices, and the user's and its own lines as it writes them,
# with a Markdown line break (two spaces) at the end. One inside a model's code block ends the block.
_AIDER_OWN = re.compile(r"^> (?:Tokens: |Applied edit to |Commit [0-9a-f]{7,} )|^(?:####|>) .*  $")
# The model aider says it uses.
_MODEL = re.compile(r"^(?:Main model|Model): (\S+)")
# Chat modes: what follows the command is the request itself.
_MODES = ("/ask", "/code", "/architect")


class _Aider:
    def __init__(self, shown: Path) -> None:
        self.shown = shown
        where = os.path.abspath(shown).encode("utf-8", "surrogateescape")
        self.key = hashlib.sha256(where).hexdigest()[:8]
        self.sessions: list[Session] = []
        self.started: dict[str, int] = {}  # sessions per id before its same-second suffix
        self.session: Session | None = None
        self.typed: list[str] = []  # the user's message being read, a line at a time
        self.shell: ToolCall | None = None  # the command the user ran this turn (/run, /test, !cmd)
        self.lint: ToolCall | None = None  # a lint failure whose details are being read
        self.asked_to_add = False  # the previous notice asked whether to add command output to the chat
        self.model_call: ToolCall | None = None  # the model call whose error output is being read
        self.model = ""  # the model aider said it uses in this session
        self.fenced = False  # inside a fenced block of the model's answer
        self.breaks = False  # the history ends aider's own lines with a Markdown line break (two spaces)

    def feed(self, line: str) -> None:
        if self.fenced:  # the model's code or edit block: its `####` and `>` lines are not the user's or aider's
            if not (line.startswith(AIDER_STARTED) or _AIDER_OWN.match(line)):
                self.fenced = not line.startswith("```")
                return
            self.fenced = False  # a block left open (models' fences are not always paired): aider is talking
        broken = line.endswith("  ")  # aider's Markdown line break
        if line.startswith("#### ") and broken and not self.typed:  # a message's first line shows how aider writes
            self.breaks = True
        if line == "####" or line.startswith("#### ") and (broken or not self.breaks):
            # once the history shows aider's line break, a `####` line without one is the model's heading
            self._current().records += 1
            self.typed.append(line[5:].rstrip())
            return
        if self.typed:
            self._typed_message()
        if line.startswith(AIDER_STARTED):
            self._start(line[len(AIDER_STARTED) :])
        elif line.startswith(">"):
            self.lint = None
            self._notice(line[1:].strip())
            return
        self.model_call = None  # the model's answer, or the next message: the error block is over
        if line.startswith("```"):
            self.fenced = True
            return
        if line.startswith(_NO_MATCH) and len(line) <= _MAX_PATH:
            call = self._call("Edit")
            call.paths = call.modifies = (line[len(_NO_MATCH) :].strip(),)
            call.ok = False
            call.error = line.lstrip("# ")[:MAX_ERROR_CHARS]
        elif self.lint is not None:
            self._lint_detail(line)

    def _current(self) -> Session:
        if self.session is None:  # lines before the first header: the file's start was cut off
            self._start("")
        assert self.session is not None
        return self.session

    def _start(self, header: str) -> None:
        self.shell = self.lint = self.model_call = None
        self.model = ""
        stamp = _STAMP.search(header)
        if stamp:
            year, month, day, hour, minute, second = stamp.groups()
            started = f"{year}-{month}-{day}T{hour}:{minute}:{second}"
            name = f"aider-{self.key}-{year}{month}{day}T{hour}{minute}{second}"
        else:
            started, name = "", f"aider-{self.key}-{len(self.sessions)}"
        # Two aiders started in the same second: the second is told apart by its place in the file, which
        # stays the same as the history grows, so learning it again finds the same sessions.
        same = self.started.get(name, 0)
        self.started[name] = same + 1
        name = f"{name}-{same + 1}" if same else name
        self.session = Session(id=name, format="aider", source=self.shown, started=started, files_read=[self.shown])
        self.sessions.append(self.session)

    def _call(self, name: str) -> ToolCall:
        session = self._current()
        call = ToolCall(call_id=f"{session.id}:{len(session.calls) + 1}", name=name, timestamp=session.started)
        call.ok = True
        session.calls.append(call)
        return call

    def _run(self, command: str) -> ToolCall:
        call = self._call("Bash")
        set_command(call, command)
        return call

    def _typed_message(self) -> None:
        lines, self.typed = self.typed, []
        self.shell = self.model_call = None
        text = "\n".join(lines).strip()
        first = text.split("\n", 1)[0]
        if not text or _ANSWER.search(first):
            return
        word, _, rest = text.partition(" ")
        if text.startswith("!"):
            self.shell = self._run(text[1:].strip())
        elif word in ("/run", "/test"):
            self.shell = self._run(rest.strip())
        elif word == "/git":
            self._run("git " + rest.strip())
        elif word in _MODES:
            self._prompt(rest)
        elif not text.startswith("/"):  # the rest of aider's commands (/add, /drop, /undo) ask for no work
            self._prompt(text)

    def _prompt(self, text: str) -> None:
        task = task_text(text)
        if task:
            self._current().prompts.append(task)

    def _notice(self, text: str) -> None:
        self._current().records += 1
        asked, self.asked_to_add = self.asked_to_add, "output to the chat?" in text
        if self._model_error(text):
            return
        if model := _MODEL.match(text):
            self.model = model.group(1)
        if text.startswith("Applied edit to ") and len(text) <= _MAX_PATH:  # longer: no path a system takes
            call = self._call("Edit")
            call.paths = call.modifies = (text[len("Applied edit to ") :].strip(),)
        elif text.startswith("Running "):
            self._run(text[len("Running ") :].strip())
        elif commit := _COMMIT.fullmatch(text):
            self._run("git commit -m " + shlex.quote(commit.group(2)))
        elif _ADDED_OUTPUT.fullmatch(text) and not asked and self.shell is not None:
            self.shell.ok = False
            self.shell.error = "exited non-zero (aider added its output to the chat)"
        elif text == _LINT_HEADER:
            self.lint = self._call("Bash")
            self.lint.ok = False
        elif text.startswith(_STALE_IN_MAP):
            stale = self._run("aider")
            stale.ok = False
            gone = text[len(_STALE_IN_MAP) :].strip()
            said = f"Repo-map can't include a file deleted from the file system but still tracked by git: {gone}"
            stale.error = said[:MAX_ERROR_CHARS]

    def _model_error(self, text: str) -> bool:
        """Aider's account of a failed model call, read as a failed call of aider with that model: one call
        per error block, its lines (retries, the traceback) its output. Whether a provider's rate limit or
        a flaky connection teaches anything is for the learner to judge, as for any failure."""
        call = self.model_call
        if call is not None and text.startswith(_NOTICES):
            call = self.model_call = None  # aider went on: an edit, a command, a commit
        if call is not None:
            if len(call.error) < MAX_ERROR_CHARS:
                call.error = (call.error + "\n" + text).strip()[:MAX_ERROR_CHARS]
            return True
        if not _MODEL_ERROR.match(text) or not self._current().prompts:
            return False  # before any request: aider's start-up notices, not a model call
        call = self.model_call = self._run("aider --model " + shlex.quote(self.model) if self.model else "aider")
        call.ok = False
        call.error = text[:MAX_ERROR_CHARS]
        return True

    def _lint_detail(self, line: str) -> None:
        assert self.lint is not None
        if line.startswith(_LINT_RUNNING) and not self.lint.command:
            set_command(self.lint, line[len(_LINT_RUNNING) :].strip())
        elif line.strip() and len(self.lint.error) < MAX_ERROR_CHARS:
            self.lint.error = (self.lint.error + "\n" + line.rstrip()).strip()[:MAX_ERROR_CHARS]

    def finish(self, report: LineReport) -> list[Session]:
        if self.typed:
            self._typed_message()
        self._current()
        for session in self.sessions:
            session.ended_well = bool(session.calls) and session.calls[-1].ok is True
            settle_session_id(session)
        first = self.sessions[0]
        first.skipped_lines = report.skipped
        first.warnings = report.messages
        return self.sessions


def read_aider(path: Path, *, label: Path | None = None) -> list[Session]:
    """Every session in the history, oldest first. ``label`` names a pipe's private copy to the user."""
    shown = label or path
    reader = _Aider(shown)
    report = LineReport(shown)
    for line in text_lines(path, report):
        reader.feed(line)
    return reader.finish(report)
