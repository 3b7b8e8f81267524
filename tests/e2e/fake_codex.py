"""A scripted stand-in for the OpenAI Responses API, for driving Codex CLI headless in tests.

It listens on 127.0.0.1 only, records every request it receives (method, path, JSON body), and answers
``POST .../responses`` with a server-sent-event stream:

- while fewer tools have answered since the user's newest message (a turn) than it has ``commands``, it
  asks for the next shell command (the first fails, the second is its fix): a ``function_call`` to
  whichever shell tool the request offers (``exec_command``, ``shell_command`` or ``shell``), with the
  arguments that tool takes;
- once all have answered, it ends the turn with a short text message.

``commands`` may also be a function of the request's body: a model that does what it was told.

Hooks' context comes as developer messages, before or after the user's prompt, and does not count.

Anything else (``GET /v1/models`` and the like) gets an empty but well-formed answer, so Codex does not
retry. Run it alone to look at what Codex sends: ``python tests/e2e/fake_codex.py``.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeResponses", "SHELL_TOOLS"]

# Codex has offered its shell under several names over its versions; each takes its command differently.
SHELL_TOOLS = ("exec_command", "shell_command", "shell")
FINAL_TEXT = "The module lives in vendor/: it imports with PYTHONPATH=vendor."


def _tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if name:
                names.append(str(name))
    return names


def _shell_call(names: list[str], command: str) -> tuple[str, dict[str, Any]]:
    for name in SHELL_TOOLS:
        if name in names:
            if name == "exec_command":
                return name, {"cmd": command}
            if name == "shell_command":
                return name, {"command": command}
            return name, {"command": ["bash", "-lc", command]}
    raise LookupError(f"no shell tool among {names}")


def _outputs_this_turn(body: dict[str, Any]) -> int:
    """How many tools have answered since the user's newest message (this turn). Hooks' context arrives
    as developer messages, before or after the user's, so only user messages and tool outputs count."""
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    outputs = 0
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = str(item.get("type", "message"))
        if kind == "message" and item.get("role") == "user" and not _is_context(item):
            outputs = 0
        elif kind.endswith("_output"):
            outputs += 1
    return outputs


def _is_context(item: dict[str, Any]) -> bool:
    """Codex sends its environment (cwd, shell, date) as a user message of its own."""
    content = item.get("content")
    texts = [c.get("text", "") for c in content if isinstance(c, dict)] if isinstance(content, list) else [content]
    return all(isinstance(t, str) and t.lstrip().startswith("<") for t in texts) and bool(texts)


class FakeResponses:
    """``with FakeResponses(commands) as server:`` ... ``server.base_url`` ... ``server.requests``."""

    def __init__(
        self, commands: tuple[str, ...] | Callable[[dict[str, Any]], tuple[str, ...]], final_text: str = FINAL_TEXT
    ) -> None:
        self.commands = commands
        self.final_text = final_text
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeResponses:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def model_requests(self) -> list[dict[str, Any]]:
        """The bodies of the Responses API calls, in the order they came."""
        return [r["body"] for r in self.requests if r["path"].endswith("/responses") and r["method"] == "POST"]

    # -- the answers ------------------------------------------------------------------------------

    def _events(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        n = next(self._ids)
        response_id = f"resp_{n}"
        created = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
        done = _outputs_this_turn(body)
        commands = self.commands(body) if callable(self.commands) else self.commands  # a model that reads
        if done < len(commands):
            name, arguments = _shell_call(_tool_names(body), commands[done])
            item = {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": self.final_text, "annotations": []}],
            }
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        completed = dict(created, status="completed", output=[item], usage=usage)
        return [
            ("response.created", {"type": "response.created", "response": created}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                            "item": dict(item, status="in_progress")}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": completed}),
        ]  # fmt: skip

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _record(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                entry = {"method": self.command, "path": self.path, "body": body}
                with server._lock:
                    server.requests.append(entry)
                return entry

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._record()
                if self.path.split("?")[0].endswith("/models"):
                    self._json(200, {"object": "list", "data": [], "models": []})
                else:
                    self._json(404, {"error": {"message": "not here", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802
                entry = self._record()
                body = entry["body"]
                if not self.path.split("?")[0].endswith("/responses") or not isinstance(body, dict):
                    self._json(404, {"error": {"message": "not here", "type": "not_found"}})
                    return
                try:
                    events = server._events(body)
                except LookupError as exc:
                    server.errors.append(str(exc))
                    self._json(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
                    return
                stream = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(stream)))
                self.end_headers()
                self.wfile.write(stream)

        return Handler


if __name__ == "__main__":  # pragma: no cover - a tool for looking
    import sys
    import time

    with FakeResponses(sys.argv[1] if len(sys.argv) > 1 else 'python3 -c "import nosuchmodule_xyz"') as fake:
        print(fake.base_url, flush=True)
        seen = 0
        try:
            while True:
                time.sleep(0.5)
                while seen < len(fake.requests):
                    print(json.dumps(fake.requests[seen]), flush=True)
                    seen += 1
        except KeyboardInterrupt:
            pass
