"""Small transcripts built in code, in each agent's real record shapes, for tests and the demo."""

from __future__ import annotations

import json
import uuid as uuidlib
from pathlib import Path
from typing import Any

CWD = "/home/dev/shop"


class ClaudeSession:
    """Builds a Claude Code JSONL transcript: records linked by uuid/parentUuid, tool_use paired by id."""

    def __init__(self, session_id: str = "5e55104e-1d2c-4b1a-9f00-000000000001", version: str = "2.0.74") -> None:
        self.session_id = session_id
        self.version = version
        self.records: list[dict[str, Any]] = []
        self.last: str | None = None
        self.clock = 0
        self.counter = 0

    def _stamp(self) -> str:
        self.clock += 7
        return f"2026-11-20T10:{self.clock // 60 % 60:02d}:{self.clock % 60:02d}.000Z"

    def _record(self, kind: str, message: dict[str, Any], parent: str | None = "last", **extra: Any) -> str:
        self.counter += 1
        uuid = str(uuidlib.UUID(int=self.counter + 0x1000))
        record = {
            "parentUuid": self.last if parent == "last" else parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": self._stamp(),
            **extra,
        }
        self.records.append(record)
        self.last = uuid
        return uuid

    def prompt(self, text: str) -> str:
        return self._record("user", {"role": "user", "content": text})

    def say(self, text: str) -> str:
        return self._record("assistant", {"role": "assistant", "content": [{"type": "text", "text": text}]})

    def tool(
        self,
        name: str,
        params: dict[str, Any],
        output: str = "",
        *,
        error: bool = False,
        extra: Any = None,
    ) -> str:
        self.counter += 1
        tool_id = f"toolu_01{self.counter:022d}"
        self._record(
            "assistant",
            {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": params}]},
        )
        result: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": output}
        if error:
            result["is_error"] = True
        return self._record(
            "user",
            {"role": "user", "content": [result]},
            toolUseResult=extra if extra is not None else (f"Error: {output}" if error else {"stdout": output}),
        )

    def bash(self, command: str, output: str = "", *, exit_code: int = 0) -> str:
        if exit_code:
            return self.tool("Bash", {"command": command}, f"Exit code {exit_code}\n{output}", error=True,
                             extra=f"Error: Exit code {exit_code}\n{output}")  # fmt: skip
        return self.tool(
            "Bash", {"command": command}, output, extra={"stdout": output, "stderr": "", "interrupted": False}
        )

    def raw(self, record: dict[str, Any]) -> None:
        self.records.append(record)

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records), encoding="utf-8")
        return path


def shop_session(session_id: str = "5e55104e-1d2c-4b1a-9f00-000000000001") -> ClaudeSession:
    """A realistic session: a failing test, a read-before-edit mistake, a fix, a rename, green tests."""
    s = ClaudeSession(session_id)
    s.prompt("Fix the failing checkout test in tests/test_checkout.py")
    s.bash(
        "python -m pytest tests/test_checkout.py -q",
        "F\nE   AssertionError: assert 1999 == 2000\nFAILED tests/test_checkout.py::test_total - AssertionError\n"
        "1 failed in 0.12s",
        exit_code=1,
    )
    s.tool("Grep", {"pattern": "def total", "path": f"{CWD}/shop"}, "shop/checkout.py:12:def total(cart):")
    s.tool("Read", {"file_path": f"{CWD}/shop/checkout.py"}, "def total(cart): ...")
    s.tool(
        "Edit",
        {"file_path": f"{CWD}/shop/pricing.py", "old_string": "round(", "new_string": "Decimal("},
        "File has not been read yet. Read it first before writing to it.",
        error=True,
    )
    s.tool("Read", {"file_path": f"{CWD}/shop/pricing.py"}, "def price(x): return round(x)")
    s.tool("Edit", {"file_path": f"{CWD}/shop/pricing.py", "old_string": "round(", "new_string": "Decimal("}, "ok")
    s.tool("Edit", {"file_path": f"{CWD}/shop/checkout.py", "old_string": "a", "new_string": "b"}, "ok")
    s.bash("git mv shop/util.py shop/money.py")
    s.bash("python -m pytest tests/test_checkout.py -q", "1 passed in 0.10s")
    s.say("The checkout total now uses Decimal; the test passes.")
    return s


def write_codex(path: Path, *, session_id: str = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b") -> Path:
    """A Codex CLI rollout: a failing shell call, an apply_patch, a passing run."""

    def line(kind: str, payload: dict[str, Any], second: int) -> str:
        return json.dumps({"timestamp": f"2026-11-21T09:00:{second:02d}.000Z", "type": kind, "payload": payload}) + "\n"

    records = [
        line("session_meta", {"id": session_id, "cwd": CWD, "cli_version": "0.65.0", "originator": "codex_cli_rs"}, 0),
        line("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}, 1),
        line("event_msg", {"type": "user_message", "message": "Add a migration for the orders table", "kind": "plain"}, 2),
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "call_1",
                               "arguments": json.dumps({"command": ["bash", "-lc", "alembic upgrade head"]})}, 3),
        line("response_item", {"type": "function_call_output", "call_id": "call_1", "output": json.dumps(
            {"output": "sqlalchemy.exc.OperationalError: no such table: orders\n", "metadata": {"exit_code": 1}})}, 4),
        line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_2",
                               "input": "*** Begin Patch\n*** Add File: migrations/versions/0002_orders.py\n+x = 1\n"
                                        "*** Update File: app/models.py\n@@\n-a\n+b\n*** End Patch\n"}, 5),
        line("response_item", {"type": "custom_tool_call_output", "call_id": "call_2",
                               "output": "Success. Updated the following files:\nA migrations/versions/0002_orders.py\nM app/models.py\n"}, 6),
        line("response_item", {"type": "function_call", "name": "shell_command", "call_id": "call_3",
                               "arguments": json.dumps({"command": "alembic upgrade head"})}, 7),
        line("response_item", {"type": "function_call_output", "call_id": "call_3",
                               "output": "Exit code: 0\nWall time: 0.4 seconds\nOutput:\nINFO  Running upgrade -> 0002\n"}, 8),
        line("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": "Added the migration."}]}, 9),
    ]  # fmt: skip
    path.write_text("".join(records), encoding="utf-8")
    return path


def write_generic(path: Path) -> Path:
    """The generic tool-call log."""
    rows = [
        {"session_id": "generic-7", "type": "task", "description": "Harden the login endpoint"},
        {"type": "tool_use", "tool_name": "Read", "input": {"file_path": "api/login.py"}, "id": "1"},
        {"type": "tool_result", "tool_use_id": "1", "success": True},
        {"type": "tool_use", "tool_name": "Edit", "input": {"file_path": "api/login.py"}, "id": "2"},
        {"type": "tool_result", "tool_use_id": "2", "success": True},
        {"type": "tool_use", "tool_name": "Bash", "input": {"command": "pytest tests/api"}, "id": "3"},
        {"type": "tool_result", "tool_use_id": "3", "success": False, "error": "E   KeyError: 'csrf_token'"},
        {"type": "tool_use", "tool_name": "Edit", "input": {"file_path": "api/csrf.py"}, "id": "4"},
        {"type": "tool_result", "tool_use_id": "4", "success": True},
        {"type": "tool_use", "tool_name": "Bash", "input": {"command": "pytest tests/api"}, "id": "5"},
        {"type": "tool_result", "tool_use_id": "5", "success": True},
        {"type": "result", "status": "completed"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
