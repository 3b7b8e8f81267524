"""OpenAI Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

Lines are ``{timestamp, type, payload}``: ``session_meta`` first, then ``response_item`` payloads
(``message``, ``function_call``/``function_call_output`` paired by ``call_id``, ``custom_tool_call`` for a
freeform ``apply_patch``, ``local_shell_call``), ``event_msg`` and ``turn_context``. Older rollouts put
the payload at the top level.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from pathlib import Path
from typing import Any

import orjson

from expertise_kit.learning.transcripts.lines import ODD_CONTENT, LineReport, json_lines
from expertise_kit.learning.transcripts.model import (
    MAX_ERROR_CHARS,
    MAX_SAID_CHARS,
    MAX_SUMMARY_CHARS,
    Session,
    ToolCall,
    settle_session_id,
)
from expertise_kit.learning.transcripts.model import record_kind as _kind
from expertise_kit.learning.transcripts.prompts import task_text
from expertise_kit.learning.transcripts.tools import set_command, set_patch

__all__ = ["read_codex", "CODEX_TYPES"]

CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_ITEM_TYPES = {
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
}
_SHELLS = {"shell", "shell_command", "exec_command", "local_shell", "container.exec", "bash"}
_EXIT = re.compile(r"(?:Exit code:|Process exited with code|exit code)\s*(-?\d+)", re.I)
_SANDBOX_FAILED = "failed in sandbox"
_SANDBOX_EXIT = re.compile(r"exit_code: (-?\d+)")


def _shell_command(arguments: dict[str, Any]) -> str:
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        if len(command) >= 3 and command[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") and command[1] in ("-lc", "-c"):
            return str(command[2])
        return shlex.join(command)
    return command if isinstance(command, str) else ""


def _escalation(arguments: dict[str, Any]) -> str:
    """How a shell call asked to run outside the sandbox, as Codex spells it, or "" when it did not."""
    if arguments.get("sandbox_permissions") == "require_escalated":
        return 'sandbox_permissions: "require_escalated"'
    return "with_escalated_permissions: true" if arguments.get("with_escalated_permissions") is True else ""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"input": raw}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _result(call: ToolCall, raw: Any) -> None:
    text = raw
    exit_code: int | None = None
    success: bool | None = None
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        with contextlib.suppress(orjson.JSONDecodeError):
            raw = orjson.loads(raw)
    if isinstance(raw, dict):
        metadata = raw.get("metadata")
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        exit_code = code if isinstance(code, int) else None
        success = raw.get("success") if isinstance(raw.get("success"), bool) else None
        text = raw.get("output", raw.get("content", ""))
    text = text if isinstance(text, str) else str(text)
    if exit_code is None:
        # Only the header before the command's own output: a build log that prints "exit code 1" must
        # not fail a command that succeeded.
        match = _EXIT.search(text.split("\nOutput:", 1)[0][:400])
        exit_code = int(match.group(1)) if match else None
    if exit_code is None and text.startswith(_SANDBOX_FAILED):
        # "failed in sandbox: sandbox error: command was killed by a signal", or a denial quoting the
        # command's own `exit_code: 128`: the command did not succeed either way.
        match = _SANDBOX_EXIT.search(text[:2000])
        exit_code = int(match.group(1)) if match else None
        success = False
    if call.name == "apply_patch" and success is None and exit_code is None:
        success = not re.search(r"verification failed|failed to apply|error:", text[:400], re.I)
    failed = success is False or (exit_code not in (None, 0))
    if "aborted by user" in text[:200] or "rejected by user" in text[:200]:
        call.interrupted = True
    call.exit_code = exit_code
    call.ok = not failed
    if failed:
        call.error = text[:MAX_ERROR_CHARS]
    elif "|" in call.command:
        call.output = text[:MAX_ERROR_CHARS]


def _texts(content: Any) -> list[str] | None:
    """The text parts of a message's content (a list of parts, or a string), or None when it is neither."""
    if isinstance(content, str):
        return [content]
    if content is None:
        return []
    if not isinstance(content, list):
        return None
    return [str(part.get("text", "")) for part in content if isinstance(part, dict)]


class _Codex:
    def __init__(self, path: Path) -> None:
        self.said = ""  # the agent's latest words, for its next call
        self.session = Session(id=path.stem.removeprefix("rollout-"), format="codex", source=path, files_read=[path])
        self.calls: dict[str, ToolCall] = {}
        self.user_messages: list[str] = []
        self.event_prompts: list[str] = []
        self.last_kind = ""
        self.aborted = False

    def feed(self, record: dict[str, Any]) -> str | None:
        """Take in one record; why it was skipped, if it was."""
        kind = _kind(record)
        payload = record.get("payload")
        stamp = str(record.get("timestamp") or "")
        if kind not in CODEX_TYPES and kind in _ITEM_TYPES:
            kind, payload = "response_item", record  # an older rollout: the item is the record
        if not isinstance(payload, dict):
            if kind is None and isinstance(record.get("id"), str) and "timestamp" in record:
                self.session.id = record["id"]  # an older rollout's first line; checked in read_codex
            return None
        self.session.records += 1
        self.session.started = self.session.started or stamp
        self.session.ended = stamp or self.session.ended
        if kind == "session_meta":
            self.session.id = str(payload.get("id") or self.session.id)
            self.session.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else self.session.cwd
        elif kind == "event_msg":
            if payload.get("type") == "user_message" and isinstance(payload.get("message"), str):
                task = task_text(payload["message"])
                if task:
                    self.event_prompts.append(task)
            elif payload.get("type") == "turn_aborted":
                self.aborted = True
        elif kind == "response_item":
            return self._item(payload, stamp)
        elif kind == "compacted" and isinstance(payload.get("message"), str) and payload["message"].strip():
            self.session.summaries.append(payload["message"].strip()[:MAX_SUMMARY_CHARS])
        return None

    def _item(self, item: dict[str, Any], stamp: str) -> str | None:
        kind = _kind(item)
        call_id = str(item.get("call_id") or item.get("id") or "")
        if kind == "message":
            texts = _texts(item.get("content"))
            if texts is None:
                return ODD_CONTENT
            self.last_kind = f"message:{item.get('role')}"
            if item.get("role") == "user":
                task = task_text("\n".join(texts).strip())
                if task:
                    self.user_messages.append(task)
                    self.aborted = False
            elif item.get("role") == "assistant":
                words = " ".join(texts).split()
                if words:
                    self.said = " ".join(words)[:MAX_SAID_CHARS]
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            name = str(item.get("name") or ("local_shell" if kind == "local_shell_call" else "?"))
            arguments = _arguments(item.get("arguments", item.get("input", item.get("action"))))
            call = ToolCall(call_id=call_id, name=name, timestamp=stamp, said=self.said)
            self.said = ""
            if name == "apply_patch":
                patch = arguments.get("input") or arguments.get("patch") or ""
                set_patch(call, patch if isinstance(patch, str) else "")
            elif name in _SHELLS:
                call.name = "Bash"
                set_command(call, _shell_command(arguments))
                call.escalated = _escalation(arguments)
            self.calls[call_id] = call
            self.session.calls.append(call)
            self.last_kind = "call"
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            answered = self.calls.get(call_id)
            if answered is not None:
                _result(answered, item.get("output"))
            self.last_kind = "output"
        return None

    def finish(self) -> Session:
        session = self.session
        session.prompts = self.event_prompts or self.user_messages
        calls = session.calls
        session.ended_well = (
            bool(calls) and calls[-1].ok is True and self.last_kind == "message:assistant" and not self.aborted
        )
        return session


def read_codex(path: Path, *, label: Path | None = None) -> Session:
    """``label`` is the name the user gave when ``path`` is a private copy of it (a pipe read once)."""
    shown = label or path
    reader = _Codex(shown)
    report = LineReport(shown)
    for record in json_lines(path, report):
        why = reader.feed(record)
        if why:
            report.skip(report.lines, why)
    session = reader.finish()
    session.skipped_lines = report.skipped
    session.warnings = report.messages
    settle_session_id(session)
    return session
