"""A scripted stand-in for the Gemini API, listening on 127.0.0.1 only, for the Gemini CLI end-to-end test.

Gemini CLI (with ``GOOGLE_GEMINI_BASE_URL`` pointing here) posts the conversation to
``/v1beta/models/<model>:streamGenerateContent?alt=sse`` and reads server-sent events, each
``data: {"candidates": [{"content": {"role": "model", "parts": [...]}, "finishReason": ...}], "usageMetadata": ...}``.
It may also call ``:generateContent`` (one JSON answer) and ``:countTokens``.

The script is stateless, decided by the request alone, so any number of sessions and retries behave alike:
``calls`` is the list of tool calls the model makes, one per turn, in order. A request whose conversation
ends with the user's words gets the first; one that ends with ``n`` tool results since the user's words
gets call ``n``, and once they are all answered the model ends the turn with ``final_text``. Requests
without tools (the CLI's own helper calls, if any) get ``final_text`` too.

Every request is recorded (path and parsed body) in ``requests``, for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeGemini"]

_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def _results_since_prompt(body: dict[str, Any]) -> int:
    """How many tool-result turns end the conversation, after the user's last words."""
    contents = body.get("contents")
    count = 0
    for turn in reversed(contents if isinstance(contents, list) else []):
        parts = turn.get("parts") if isinstance(turn, dict) else None
        if not isinstance(turn, dict) or turn.get("role") != "user" or not isinstance(parts, list):
            continue  # the model's own turns
        if any(isinstance(p, dict) and "functionResponse" in p for p in parts):
            count += 1
        else:
            break
    return count


def _is_agent_turn(body: dict[str, Any]) -> bool:
    """The main agent's request offers tools; the CLI's helper calls (routing, summaries) do not."""
    return bool(body.get("tools"))


class FakeGemini:
    def __init__(self, calls: list[tuple[str, dict[str, Any]]], final_text: str = "Done.") -> None:
        self.calls = calls
        self.final_text = final_text
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeGemini:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def agent_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["path"].split("?")[0].endswith(":streamGenerateContent")]

    def _answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The model's parts for this request."""
        step = _results_since_prompt(body)
        if _is_agent_turn(body) and step < len(self.calls):
            name, args = self.calls[step]
            return [{"text": f"Step {step + 1}."}, {"functionCall": {"name": name, "args": args}}]
        return [{"text": self.final_text}]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    parsed = json.loads(raw or b"{}")
                except ValueError:
                    parsed = {"_raw": raw.decode("utf-8", "replace")}
                return parsed if isinstance(parsed, dict) else {"_value": parsed}

            def _send(self, status: int, payload: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with fake._lock:
                    fake.requests.append({"method": "GET", "path": self.path, "body": {}})
                self._send(404, b'{"error": {"code": 404, "message": "not here"}}', "application/json")

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self._body()
                with fake._lock:
                    fake.requests.append({"method": "POST", "path": self.path, "body": body})
                route = self.path.split("?", 1)[0]
                if route.endswith(":countTokens"):
                    self._send(200, b'{"totalTokens": 10}', "application/json")
                    return
                parts = fake._answer(body)
                candidate = {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": "STOP",
                    "index": 0,
                }
                if route.endswith(":streamGenerateContent"):
                    # One event per part, then the finish reason: the way the real API streams.
                    events: list[dict[str, Any]] = [
                        {"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}]} for p in parts
                    ]
                    events[-1] = {"candidates": [{**events[-1]["candidates"][0], "finishReason": "STOP"}],
                                  "usageMetadata": _USAGE}  # fmt: skip
                    stream = b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)
                    self._send(200, stream, "text/event-stream")
                    return
                if route.endswith(":generateContent"):
                    self._send(200, json.dumps({"candidates": [candidate], "usageMetadata": _USAGE}).encode(),
                               "application/json")  # fmt: skip
                    return
                self._send(404, b'{"error": {"code": 404, "message": "not here"}}', "application/json")

        return Handler


if __name__ == "__main__":  # by hand: `python fake_gemini.py '[["run_shell_command", {"command": "false"}]]' log.json`
    import sys
    import time

    with FakeGemini([tuple(c) for c in json.loads(sys.argv[1])]) as server:
        print(server.url, flush=True)
        try:
            while True:
                time.sleep(1)
                if len(sys.argv) > 2:
                    with open(sys.argv[2], "w") as out:
                        json.dump(server.requests, out, indent=1)
        except KeyboardInterrupt:
            pass
