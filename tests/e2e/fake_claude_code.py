"""A scripted stand-in for the Anthropic Messages API, for driving the Claude Code CLI end to end.

It listens on 127.0.0.1 (an ephemeral port), records every request it receives (method, path, body) and
answers:

- ``POST /v1/messages`` whose body offers a ``Bash`` tool (the main conversation): a ``tool_use`` asking
  Bash to run the next of ``commands`` (the first fails, the second is its fix), counted by the tool
  results already in the conversation; once all have run, a short text that ends the turn. Stateless, so
  every session (and every resume) plays the same steps. ``commands`` may also be a function of the
  request's body, for a model that decides from what it was told (the hooks' context in the request).
- any other ``POST /v1/messages`` (a side request: a title, a summary, a quota probe): a short text.
- ``POST /v1/messages/count_tokens``: a token estimate.
- anything else: an empty JSON object.

Streaming requests (``"stream": true``) get the SSE events the API sends (``message_start``,
``content_block_start``, ``content_block_delta`` with ``text_delta``/``input_json_delta``,
``content_block_stop``, ``message_delta`` with the ``stop_reason``, ``message_stop``); others get one JSON
message.

Run it alone with ``python fake_claude_code.py --log requests.jsonl`` (it prints its base URL), or use
``FakeAnthropic`` from a test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeAnthropic", "DEFAULT_COMMAND", "FIX_COMMAND", "FINAL_TEXT"]

DEFAULT_COMMAND = 'python3 -c "import nosuchmodule_xyz"'  # fails: the module lives in vendor/
FIX_COMMAND = 'PYTHONPATH=vendor python3 -c "import nosuchmodule_xyz"'
FINAL_TEXT = "nosuchmodule_xyz lives in vendor/: it imports with PYTHONPATH=vendor."
MODEL = "claude-fake-1"


def _has_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def _tool_names(body: dict[str, Any]) -> set[str]:
    return {str(tool.get("name")) for tool in body.get("tools") or [] if isinstance(tool, dict)}


class FakeAnthropic:
    """The server; ``requests`` holds every request as ``{"method", "path", "body"}`` in arrival order."""

    def __init__(
        self,
        commands: tuple[str, ...] | Callable[[dict[str, Any]], tuple[str, ...]] = (DEFAULT_COMMAND, FIX_COMMAND),
        final_text: str = FINAL_TEXT,
        log: Path | None = None,
    ):
        self.commands = commands
        self.final_text = final_text
        self.log = log
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- what the model says --------------------------------------------------------------------------

    def main_requests(self) -> list[dict[str, Any]]:
        """The bodies of the main conversation's requests (those offering the Bash tool)."""
        with self._lock:
            return [
                r["body"] for r in self.requests
                if r["path"].startswith("/v1/messages") and "count_tokens" not in r["path"]
                and isinstance(r["body"], dict) and "Bash" in _tool_names(r["body"])
            ]  # fmt: skip

    def _reply(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """The content blocks and stop reason for this request."""
        # Claude Code 2.1 also sends "system" role messages (environment, hook context) among the turns.
        turns = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") != "system"]
        if "Bash" in _tool_names(body):
            commands = self.commands(body) if callable(self.commands) else self.commands
            ran = sum(1 for turn in turns if _has_tool_result(turn))
            if ran < len(commands):
                tool_id = f"toolu_fake{next(self._ids):04d}"
                call = {"command": commands[ran], "description": "Import the module the task needs"}
                return [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": call}], "tool_use"
            return [{"type": "text", "text": self.final_text}], "end_turn"
        return [{"type": "text", "text": "Fake session"}], "end_turn"

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        blocks, stop = self._reply(body)
        return {
            "id": f"msg_fake{next(self._ids):04d}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model") or MODEL),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    @staticmethod
    def _events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        start: dict[str, Any] = dict(message, content=[], stop_reason=None)
        start["usage"] = {"input_tokens": 10, "output_tokens": 1}
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
        for index, block in enumerate(message["content"]):
            opening: dict[str, Any]
            if block["type"] == "text":
                opening = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [
                ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}),
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
        finish = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        events += [
            ("message_delta", {"type": "message_delta", "delta": finish, "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        return events

    # -- HTTP -----------------------------------------------------------------------------------------

    def _record(self, method: str, path: str, body: Any) -> None:
        entry = {"method": method, "path": path, "body": body}
        with self._lock:
            self.requests.append(entry)
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(entry) + "\n")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", "req_fake")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                fake._record("GET", self.path, None)
                self._json(200, {})

            def do_HEAD(self) -> None:  # noqa: N802
                fake._record("HEAD", self.path, None)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                fake._record("POST", self.path, body)
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    size = len(json.dumps(body)) if body is not None else 0
                    self._json(200, {"input_tokens": max(1, size // 4)})
                    return
                if not path.endswith("/v1/messages") or not isinstance(body, dict):
                    self._json(200, {})
                    return
                message = fake._message(body)
                if not body.get("stream"):
                    self._json(200, message)
                    return
                chunks = b"".join(
                    f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in fake._events(message)
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(chunks)))
                self.send_header("request-id", "req_fake")
                self.end_headers()
                self.wfile.write(chunks)

        return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", type=Path, help="append every request here, one JSON object a line")
    parser.add_argument("--command", action="append", help="a Bash command the model asks for, in order")
    args = parser.parse_args()
    commands = tuple(args.command) if args.command else (DEFAULT_COMMAND, FIX_COMMAND)
    with FakeAnthropic(commands=commands, log=args.log) as fake:
        print(fake.url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
