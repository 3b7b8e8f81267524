"""Starting ``expertise mcp`` as an agent would, to see that it really serves: ``hooks install --mcp``
refuses to register a server that can't start, and ``hooks doctor`` lists the tools of the one registered.

The probe speaks plain JSON-RPC lines (initialize, initialized, tools/list) to the program the MCP config
names, found on the agent's PATH, so it needs no MCP SDK in this interpreter: the installation on PATH may
not be this one (a pipx install without the ``mcp`` extra, say).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Probe", "probe_server", "mcp_importable", "MCP_EXTRA_HINT", "PROBE_SECONDS"]

PROBE_SECONDS = 30
MCP_EXTRA_HINT = (
    "install the mcp extra where `expertise` is installed: pip install 'expertise-kit[mcp]' "
    "(pipx: pipx inject expertise-kit mcp; uv tool: uv tool install 'expertise-kit[mcp]')"
)
_REQUESTS = (
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "expertise-hooks-doctor", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
)  # fmt: skip


@dataclass
class Probe:
    ok: bool
    detail: str  # why not, in one line; or the program that answered
    tools: list[str] = field(default_factory=list)
    missing_extra: bool = False  # it said the mcp package is not installed


def mcp_importable() -> bool:
    """Whether this interpreter has the MCP SDK (the ``mcp`` extra)."""
    from importlib.util import find_spec

    try:
        return find_spec("mcp") is not None and find_spec("mcp.server") is not None
    except (ImportError, ValueError):
        return False


def probe_server(root: Path, command: str, args: list[str], env: dict[str, str] | None = None) -> Probe:
    """Start ``command args`` in ``root``, initialise, list its tools, and close its stdin."""
    environ = dict(os.environ if env is None else env)
    program = shutil.which(command, path=environ.get("PATH", os.defpath))
    if program is None:
        return Probe(False, f"`{command}` is not on PATH, so the agent can't start the server")
    try:
        process = subprocess.Popen(
            [program, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=root, env=environ,
        )  # fmt: skip
    except OSError as exc:
        return Probe(False, f"`{program}` can't be run: {exc.strerror or exc}")
    # One request at a time, each answer awaited: a server that reads end-of-input while a request is in
    # flight may stop before answering it. A timer kills one that hangs.
    timer = threading.Timer(PROBE_SECONDS, process.kill)
    timer.start()
    answered: list[str] = []
    try:
        assert process.stdin is not None and process.stdout is not None
        for request in _REQUESTS:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            if "id" in request:
                line = _answer(process.stdout, request["id"])
                if line is None:
                    break
                answered.append(line)
        process.stdin.close()
        stderr = process.stderr.read() if process.stderr is not None else ""
        process.wait()
    except (OSError, ValueError):
        process.kill()
        stderr = ""
    finally:
        timer.cancel()
    if process.returncode is not None and process.returncode < 0:
        return Probe(False, f"`{command} {' '.join(args)}` did not answer within {PROBE_SECONDS} s")
    said = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
    if "mcp package is not installed" in stderr:
        return Probe(False, f"`{command} {' '.join(args)}` exits {process.returncode}: {said}", missing_extra=True)
    tools = _tools("\n".join(answered))
    if tools is None:
        why = said or f"exit {process.returncode}, no answer to tools/list"
        return Probe(False, f"`{command} {' '.join(args)}` did not list its tools ({why[:200]})")
    return Probe(True, program, tools)


def _answer(stdout: Any, request_id: object) -> str | None:
    """The line answering ``request_id`` (None at end of output)."""
    for line in stdout:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == request_id:
            return str(line)
    return None


def _tools(stdout: str) -> list[str] | None:
    for line in stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == 2 and isinstance(message.get("result"), dict):
            listed = message["result"].get("tools")
            if isinstance(listed, list):
                return sorted(str(t.get("name")) for t in listed if isinstance(t, dict))
    return None


def this_installation() -> tuple[str, list[str]]:
    """This interpreter's ``expertise mcp``, for when none is on PATH."""
    return sys.executable, ["-m", "expertise_kit", "mcp"]
