"""Gemini CLI chat recordings: ``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``.

Since 0.39 the recording is JSON lines, appended as the session goes:

- a header ``{"sessionId", "projectHash", "startTime", "lastUpdated", "kind"}``;
- message records ``{"id", "timestamp", "type": "user"|"gemini"|"info"|"error"|"warning", "content", ...}``.
  A ``gemini`` message carries ``toolCalls``: ``{"id", "name", "args", "result": [{"functionResponse":
  {"response": {"output"|"error": ...}}}], "status": "success"|"error"|"cancelled"}``. A message is
  written again, whole, each time it changes (its tokens, then its tool calls with their results), so the
  last record with an id is the message as it ended; only the newest message is ever rewritten;
- ``{"$set": {...}}`` updates the header; ``{"$set": {"messages": [...]}}`` restates the history (the first
  one holds the CLI's ``<session_context>``, a later one follows a compression);
- ``{"$rewindTo": id}`` drops that message and everything after it from the conversation.

Up to 0.38 the recording was one JSON document, ``session-*.json``, rewritten whole on every change:
``{"sessionId", "projectHash", "startTime", "lastUpdated", "messages": [...]}``. It is read a message at a
time, so neither form is held in memory; only the latest message and the ids already seen are.

A user message's text carries what hooks injected (``<hook_context>...</hook_context>``, ours included) and
the CLI's own context; those are cut out before the task is taken. Subagents write their own files under
``chats/<sessionId>/``; their calls become threads ``agent:<name>``.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from expertise_kit.errors import UserError
from expertise_kit.learning.transcripts.lines import MAX_LINE_BYTES, ODD_CONTENT, LineReport, json_lines
from expertise_kit.learning.transcripts.model import (
    MAX_ERROR_CHARS,
    MAX_SAID_CHARS,
    MAX_SUMMARY_CHARS,
    Session,
    ToolCall,
    settle_session_id,
)
from expertise_kit.learning.transcripts.prompts import task_text
from expertise_kit.learning.transcripts.tools import set_command, tool_call

__all__ = ["read_gemini", "gemini_document", "GEMINI_TYPES"]

GEMINI_TYPES = {"user", "gemini", "info", "error", "warning"}
# Gemini CLI's tool names, as the canonical names the learner knows.
_CANONICAL = {
    "run_shell_command": "Bash",
    "write_file": "Write",
    "replace": "Edit",
    "edit": "Edit",
    "read_file": "Read",
    "read_many_files": "Read",
    "grep_search": "Grep",
    "search_file_content": "Grep",
    "grep": "Grep",
    "glob": "Glob",
    "list_directory": "LS",
}
# Blocks the CLI or a hook put into the user's turn: context, not what the user asked.
_INJECTED = re.compile(
    r"<(hook_context|session_context|untrusted_context|original_user_request)>.*?(?:</\1>|\Z)", re.S
)
_SNAPSHOT = "<state_snapshot>"  # a compression's summary of the conversation so far
_REFERENCED = "--- Content from referenced files ---"  # `@file` contents follow the user's words
_CONTINUE = {"Please continue.", "System: Please continue."}
_WORKSPACE = re.compile(
    r"(?:Workspace Directories:\**\s*\n\s*-\s*|I'm currently working in the directory:\s*)(\S[^\n]*)"
)
# The sections a shell result ends with, after the command's own output.
_TRAILER = re.compile(r"^(?:(Exit Code|Signal|Background PIDs|Process Group PGID): ?(.*)|Error: \(none\))$")
# Results that say the harness would not run the call: no lesson about the project.
_NOT_RUN = (
    "denied by policy",
    "cancelled by user",
    "Operation cancelled",
    "[Operation Cancelled]",
    "User did not allow",
    "Request cancelled.",
)
_NOT_AVAILABLE = re.compile(r'^Tool "[\w.-]+" not found')
ID_WINDOW = 100_000  # message ids remembered for de-duplication and rewinds; bounded like Claude's uuids


def _text_of(content: Any) -> str:
    """The text parts of a message's content (a string, or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part["text"]) for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return ""


def _odd_content(message: dict[str, Any]) -> bool:
    """Whether a message's content is something no Gemini CLI writes (a number, true): not a message to read."""
    content = message.get("content")
    return content is not None and not isinstance(content, (str, list, dict))


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _only_tool_results(content: Any) -> bool:
    parts = content if isinstance(content, list) else [content]
    return bool(parts) and all(isinstance(p, dict) and "functionResponse" in p for p in parts)


def _user_words(text: str) -> str:
    """What the user typed, without injected context or referenced files' contents."""
    if "<" in text:
        text = _INJECTED.sub("", text)
    return text.split(_REFERENCED, 1)[0].strip()


def _response_text(result: Any) -> tuple[str, bool]:
    """(the text of a tool's result, whether it was an error) from its ``result`` parts."""
    parts = result if isinstance(result, list) else [result]
    texts: list[str] = []
    error = False
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            continue
        response = part.get("functionResponse")
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict):
                if isinstance(body.get("error"), str):
                    texts.append(body["error"])
                    error = True
                elif isinstance(body.get("output"), str):
                    texts.append(body["output"])
                elif body:
                    texts.append(json.dumps(body, ensure_ascii=False)[:MAX_ERROR_CHARS])
            elif isinstance(body, str):
                texts.append(body)
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts), error


def _shell_result(text: str) -> tuple[str, int | None, str]:
    """(the command's output, its exit code, the signal that ended it) from a shell tool's result:
    ``Output: ...`` then ``Exit Code: N``, ``Signal: ...``, ``Process Group PGID: N`` lines (0.39 and later
    inside ``<untrusted_context>``; older ones began with ``Command:``/``Directory:`` and split
    ``Stdout:``/``Stderr:``)."""
    body = text.strip()
    if body.startswith("<untrusted_context>"):
        body = body[len("<untrusted_context>") :]
        body = body[: body.rfind("</untrusted_context>")] if "</untrusted_context>" in body else body
    lines = body.strip("\n").split("\n")
    exit_code: int | None = None
    signal = ""
    while lines:  # the trailer is at the end: a line the program printed can't fake it
        match = _TRAILER.match(lines[-1])
        if not match:
            break
        lines.pop()
        value = (match.group(2) or "").strip()
        if match.group(1) == "Exit Code" and value.lstrip("-").isdigit():
            exit_code = int(value)
        elif match.group(1) == "Signal" and value not in ("", "(none)"):
            signal = value
    while lines and lines[0].startswith(("Command: ", "Directory: ")):
        lines.pop(0)  # older results restate the command first
    output = "\n".join(lines)
    # Older results split the output (`Stdout:`, `Stderr:`); an empty section says `(empty)`.
    labelled = output.startswith(("Output: ", "Stdout: "))
    sections = re.split(r"^(?:Output|Stdout|Stderr): ", output, flags=re.M) if labelled else [output]
    kept = [section.strip() for section in sections if section.strip() not in ("", "(empty)")]
    return "\n".join(kept), exit_code, signal


def _params(name: str, args: Any) -> dict[str, Any]:
    """Gemini's argument names as the Claude-style ones ``tool_call`` reads."""
    params = dict(args) if isinstance(args, dict) else {}
    if "file_path" not in params:
        for key in ("absolute_path", "path"):
            if isinstance(params.get(key), str):
                params["file_path"] = params[key]
                break
    if name in ("Grep", "Glob") and "path" not in params and isinstance(params.get("dir_path"), str):
        params["path"] = params["dir_path"]
    return params


def _apply_result(call: ToolCall, record: dict[str, Any]) -> None:
    status = record.get("status")
    if status not in ("success", "error", "cancelled"):
        return  # still running when the session was cut off: no result
    text, errored = _response_text(record.get("result"))
    if not text and isinstance(record.get("resultDisplay"), str):
        text = record["resultDisplay"]
    exit_code: int | None = None
    signal = ""
    if call.name == "Bash" and not errored:
        text, exit_code, signal = _shell_result(text)
    failed = status != "success" or errored or exit_code not in (None, 0) or bool(signal)
    if status == "cancelled" or any(marker in text[:400] for marker in _NOT_RUN) or _NOT_AVAILABLE.match(text):
        call.interrupted = True
    call.exit_code = exit_code
    call.ok = not failed
    lines = [text] if text else [f"Exit Code: {exit_code}"] if exit_code else []
    if signal:
        lines.append(f"Signal: {signal}")
    call.error = "\n".join(lines)[:MAX_ERROR_CHARS] if failed else ""
    if not failed and "|" in call.command:
        call.output = text[:MAX_ERROR_CHARS]


def _cwd_from(text: str) -> str | None:
    match = _WORKSPACE.search(text)
    return match.group(1).strip() if match else None


class _Gemini:
    """One pass over the records. Only the newest message is held (it may still be rewritten), plus the
    ids already taken in, so a restated or rewritten message is not counted twice."""

    def __init__(self, shown: Path) -> None:
        self.session = Session(id="", format="gemini", source=shown, files_read=[shown])
        self.pending: dict[str, Any] | None = None
        self.seen: set[str] = set()
        self.order: deque[str] = deque()
        # The conversation as it stands, (message id, its calls), for a rewind to cut back; the prompts too.
        self.line: deque[tuple[str, list[ToolCall]]] = deque()
        # Where each message on the line is, counting those that fell off its front, so a rewind finds it at once.
        self.place: dict[str, int] = {}
        self.fallen = 0  # messages that fell off the line's front
        self.lost_rewinds = 0  # rewinds to a message not on the line
        self.first_lost = 0  # the file's line of the first
        self.prompts: list[tuple[str, str]] = []
        self.calls: dict[str, ToolCall] = {}
        self.said = ""
        self.last_kind = ""

    # -- records ------------------------------------------------------------------------------------

    def feed(self, record: dict[str, Any], line: int = 0) -> str | None:
        """Take in the record on ``line``; why it was skipped, if it was."""
        self.session.records += 1
        if isinstance(record.get("$rewindTo"), str):
            self._commit()
            self._rewind(record["$rewindTo"], line)
            return None
        update = record.get("$set")
        if isinstance(update, dict):
            return self._metadata(update)
        if isinstance(record.get("id"), str) and isinstance(record.get("type"), str) and record["type"] in GEMINI_TYPES:
            if _odd_content(record):
                return ODD_CONTENT
            if self.pending is not None and self.pending.get("id") != record["id"]:
                self._commit()
            self.pending = record  # the newest version of the newest message
            return None
        return self._metadata(record)

    def _metadata(self, record: dict[str, Any]) -> str | None:
        session = self.session
        if isinstance(record.get("sessionId"), str) and not session.id:
            session.id = record["sessionId"]
        if isinstance(record.get("startTime"), str) and not session.started:
            session.started = record["startTime"]
        if isinstance(record.get("lastUpdated"), str):
            session.ended = max(session.ended, record["lastUpdated"])
        directories = record.get("directories")
        if session.cwd is None and isinstance(directories, list) and directories and isinstance(directories[0], str):
            session.cwd = directories[0]
        messages = record.get("messages")
        odd = 0
        if isinstance(messages, list):
            self._commit()
            for message in messages:  # a restatement: only messages not taken in yet count
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    if _odd_content(message):
                        odd += 1
                        continue
                    self.pending = message
                    self._commit()
        return f"{odd} restated messages whose content is neither text nor a list" if odd else None

    def message(self, record: dict[str, Any]) -> str | None:
        """Take in a message that will not change again (the legacy document's); why it was skipped, if it was."""
        if _odd_content(record):
            return ODD_CONTENT
        if self.pending is not None and self.pending.get("id") != record.get("id"):
            self._commit()
        self.pending = record
        self._commit()
        return None

    def _remember(self, message_id: str) -> bool:
        """Whether ``message_id`` is new; it is remembered either way."""
        if message_id in self.seen:
            return False
        self.seen.add(message_id)
        self.order.append(message_id)
        if len(self.order) > ID_WINDOW:
            self.seen.discard(self.order.popleft())
        return True

    def _commit(self) -> None:
        record, self.pending = self.pending, None
        if record is None:
            return
        message_id = str(record.get("id"))
        kind = record.get("type")
        stamp = _string(record.get("timestamp"))
        if stamp:
            self.session.started = self.session.started or stamp
            self.session.ended = max(self.session.ended, stamp)
        new = self._remember(message_id)
        if kind == "gemini":
            calls = self._calls(record, stamp)
            if new:
                self._on_line(message_id, calls)
        elif kind == "user" and new:
            prompt = self._user(record)
            if prompt:
                self.prompts.append((message_id, prompt))
            self._on_line(message_id, [])

    def _on_line(self, message_id: str, calls: list[ToolCall]) -> None:
        self.place[message_id] = self.fallen + len(self.line)
        self.line.append((message_id, calls))
        if len(self.line) > ID_WINDOW:
            self._forget(self.line.popleft()[0], self.fallen)
            self.fallen += 1

    def _forget(self, message_id: str, place: int) -> None:
        if self.place.get(message_id) == place:  # not a later message with the same id
            del self.place[message_id]

    def _user(self, record: dict[str, Any]) -> str | None:
        content = record.get("content")
        if _only_tool_results(content):
            return None  # the calls' results, already read from the calls themselves
        text = _text_of(content)
        if self.session.cwd is None and "<session_context>" in text:
            self.session.cwd = _cwd_from(text)
        words = _user_words(text)
        if words.startswith(_SNAPSHOT):
            self.session.summaries.append(words[:MAX_SUMMARY_CHARS])
            return None
        if words in _CONTINUE:
            return None
        task = task_text(words)
        if task:
            self.last_kind = "prompt"
        return task or None

    def _calls(self, record: dict[str, Any], stamp: str) -> list[ToolCall]:
        words = " ".join(_text_of(record.get("content")).split())
        if not words:
            thoughts = record.get("thoughts")
            last = thoughts[-1] if isinstance(thoughts, list) and thoughts else None
            if isinstance(last, dict):
                words = " ".join(f"{last.get('subject') or ''} {last.get('description') or ''}".split())
        if words:
            self.said = words[:MAX_SAID_CHARS]
        raw_calls = record.get("toolCalls")
        listed = [raw for raw in raw_calls if isinstance(raw, dict)] if isinstance(raw_calls, list) else []
        made: list[ToolCall] = []
        for raw in listed:
            call_id = str(raw.get("id") or "")
            known = self.calls.get(call_id) if call_id else None
            if known is not None:  # the same call again (a rewritten or restated message): its result only
                if known.ok is None:
                    _apply_result(known, raw)
                continue
            call = self._call(raw, stamp)
            if call_id:
                self.calls[call_id] = call
            self.session.calls.append(call)
            made.append(call)
        if made:
            self.last_kind = "call"
        elif words and not listed:
            self.last_kind = "answer"
        return made

    def _call(self, raw: dict[str, Any], stamp: str) -> ToolCall:
        original = str(raw.get("name") or "?")
        name = _CANONICAL.get(original, original)
        when = _string(raw.get("timestamp")) or stamp
        params = _params(name, raw.get("args"))
        if name == "Bash":
            call = ToolCall(call_id=str(raw.get("id") or ""), name="Bash", timestamp=when)
            command = params.get("command")
            set_command(call, command if isinstance(command, str) else "")
        else:
            call = tool_call(str(raw.get("id") or ""), name, params, "main", when)
        call.said, self.said = self.said, ""
        _apply_result(call, raw)
        return call

    def _rewind(self, target: str, line: int) -> None:
        """Everything from ``target`` on left the conversation: its calls become a branch of their own."""
        if target not in self.place:
            self.lost_rewinds += 1
            self.first_lost = self.first_lost or line
            return
        position = self.place[target] - self.fallen
        self.session.branches += 1
        branch = f"branch-{self.session.branches - 1}"
        gone: set[str] = set()
        while len(self.line) > position:
            message_id, calls = self.line.pop()
            self._forget(message_id, self.fallen + len(self.line))
            gone.add(message_id)
            for call in calls:
                call.thread = branch
        self.prompts = [(i, p) for i, p in self.prompts if i not in gone]
        self.last_kind = "rewind"

    def finish(self) -> Session:
        self._commit()
        session = self.session
        if self.lost_rewinds:
            where = f"{session.source}:{self.first_lost}" if self.first_lost else str(session.source)
            what = "a rewind" if self.lost_rewinds == 1 else f"{self.lost_rewinds} rewinds, the first here,"
            session.warnings.append(f"{where}: {what} to a message not seen; ignored")
        session.prompts = [prompt for _, prompt in self.prompts]
        # Calls grouped by thread, main first; within a thread, in the order they were made.
        order = {"main": 0}
        for call in session.calls:
            order.setdefault(call.thread, len(order))
        session.calls.sort(key=lambda c: order[c.thread])
        main = [c for c in session.calls if c.thread == "main"]
        session.ended_well = bool(main) and main[-1].ok is True and self.last_kind == "answer"
        return session


# -- the legacy document, a message at a time ---------------------------------------------------------


_CHUNK = 1 << 20
_SPACE = " \t\r\n"


class _Document:
    """A pretty-printed JSON document read in pieces: the top-level keys' values, and each element of its
    ``messages`` array, decoded one at a time from a sliding buffer."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.buffer = ""
        self.pos = 0
        self.offset = 0  # characters dropped from the buffer's front, for messages
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _fill(self, at_least: int = 0) -> bool:
        if self.eof:
            return False
        if self.pos > _CHUNK:
            self.offset += self.pos
            self.buffer, self.pos = self.buffer[self.pos :], 0
        chunk = self.handle.read(max(at_least, _CHUNK))
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        return True

    def peek(self) -> str:
        while True:
            while self.pos < len(self.buffer) and self.buffer[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self._fill():
                return ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise ValueError(f"expected {char!r} at character {self.offset + self.pos}")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof or len(self.buffer) - self.pos > MAX_LINE_BYTES:
                    raise ValueError(f"{exc.msg} (character {self.offset + exc.pos})") from None
                self._fill(len(self.buffer) - self.pos)  # doubling: a long message costs linear time
                continue
            if end == len(self.buffer) and not self.eof and self._fill():
                continue  # a number cut by the buffer's end would decode short
            self.pos = end
            return value

    def records(self) -> Iterator[tuple[str, Any]]:
        """("meta", {key: value}) for each top-level key, ("message", message) for each message."""
        self.expect("{")
        while self.peek() not in ("}", ""):
            key = self.value()
            self.expect(":")
            if key == "messages" and self.peek() == "[":
                self.pos += 1
                while self.peek() not in ("]", ""):
                    yield "message", self.value()
                    if self.peek() == ",":
                        self.pos += 1
                self.expect("]")
            else:
                yield "meta", {str(key): self.value()}
            if self.peek() == ",":
                self.pos += 1
        self.expect("}")


def gemini_document(path: Path) -> bool:
    """Whether ``path`` is a Gemini CLI session written as one pretty-printed JSON document (up to 0.38)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).decode("utf-8-sig", "replace")
    except OSError:
        return False
    first = head.lstrip().split("\n", 1)[0].strip()
    return first == "{" and '"sessionId"' in head and ('"projectHash"' in head or '"messages"' in head)


def _read_document(path: Path, reader: _Gemini, report: LineReport) -> None:
    try:
        handle = open(path, encoding="utf-8-sig", errors="replace")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise UserError(f"can't read it: {exc.strerror or exc}", path=report.path) from None
    with handle:
        document = _Document(handle)
        try:
            for kind, item in document.records():
                why: str | None = "a message that is not a JSON object"
                if kind == "meta":
                    why = reader.feed(item)
                elif isinstance(item, dict):
                    reader.session.records += 1
                    why = reader.message(item)
                if why:
                    report.skip(reader.session.records, why)
        except RecursionError:
            report.skipped += 1
            report.messages.append(f"{report.path}: a message nested too deeply; the messages before it were read")
        except ValueError as exc:
            why = "the document ends early" if document.eof else "the document is not valid JSON"
            report.skipped += 1
            report.messages.append(f"{report.path}: {why} ({exc}); the messages before it were read")


def _subagent_files(path: Path, session_id: str) -> list[Path]:
    """Subagents' recordings: ``chats/<sessionId>/*.jsonl`` beside the session's own file."""
    if not session_id or "/" in session_id or "\\" in session_id or session_id in (".", ".."):
        return []
    directory = path.parent / session_id
    return sorted(directory.glob("*.jsonl"))[:200] if directory.is_dir() else []


def read_gemini(path: Path, *, include_subagents: bool = True, label: Path | None = None) -> Session:
    """``label`` is the name the user gave when ``path`` is a private copy of it (a pipe read once)."""
    shown = label or path
    reader = _Gemini(shown)
    report = LineReport(shown)
    reports = [report]
    if gemini_document(path):
        _read_document(path, reader, report)
    else:
        for record in json_lines(path, report):
            if why := reader.feed(record, report.lines):
                report.skip(report.lines, why)
    reader._commit()
    session = reader.session
    if include_subagents:
        for agent in _subagent_files(shown, session.id):
            agent_report = LineReport(agent)
            sub = _Gemini(agent)
            for record in json_lines(agent, agent_report):
                if why := sub.feed(record, agent_report.lines):
                    agent_report.skip(agent_report.lines, why)
            sub.finish()
            session.warnings += sub.session.warnings
            thread = f"agent:{agent.stem}"
            for call in sub.session.calls:
                call.thread = thread if call.thread == "main" else f"{thread}:{call.thread}"
            session.calls.extend(sub.session.calls)
            session.files_read.append(agent)
            reports.append(agent_report)
    reader.finish()
    session.id = session.id or shown.stem
    session.skipped_lines = sum(r.skipped for r in reports)
    session.warnings = [m for r in reports for m in r.messages] + session.warnings
    settle_session_id(session)
    return session
