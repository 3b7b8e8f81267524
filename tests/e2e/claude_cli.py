"""The real Claude Code CLI for the end-to-end tests: installed with npm into a cache at a pinned version,
and the environment it runs in (a temp HOME, the fake server on 127.0.0.1, nothing that phones anywhere
else).

The CLI is installed into ``$EXPERTISE_E2E_CACHE/npm`` (by default ``~/.cache/expertise-e2e/npm``). Without
node and npm, or when the install fails (no registry), ``install_claude`` skips the test, never fails it.
Each test module wraps it in a fixture of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from npm_env import CACHE, NPM_TIMEOUT, REAL_HOME, SESSION_TIMEOUT

__all__ = ["CLAUDE_PACKAGE", "CLAUDE_VERSION", "IDENTITY", "SESSION_TIMEOUT", "cli_env", "install_claude"]

CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_VERSION = "2.1.332"

IDENTITY = {
    "GIT_AUTHOR_NAME": "E2E Developer",
    "GIT_AUTHOR_EMAIL": "dev@example.invalid",
    "GIT_COMMITTER_NAME": "E2E Developer",
    "GIT_COMMITTER_EMAIL": "dev@example.invalid",
}


def _binary() -> Path:
    return CACHE / "node_modules" / ".bin" / "claude"


def _version_of(binary: Path) -> str | None:
    if not binary.exists():
        return None
    with tempfile.TemporaryDirectory() as home:
        try:
            done = subprocess.run(
                [str(binary), "--version"], capture_output=True, text=True, timeout=60, env=cli_env(Path(home))
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout.split() else None


def install_claude() -> Path:
    """The pinned Claude Code binary, installed into the cache on first use; skips when that can't be done."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to install the Claude Code CLI")
    binary = _binary()
    if _version_of(binary) != CLAUDE_VERSION:
        CACHE.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, HOME=REAL_HOME)
        spec = f"{CLAUDE_PACKAGE}@{CLAUDE_VERSION}"
        command = ["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", spec]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=NPM_TIMEOUT, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"npm install {spec} did not finish: {exc}")
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            pytest.skip(f"npm install {spec} failed (no registry?): {' | '.join(tail)}")
    found = _version_of(binary)
    if found != CLAUDE_VERSION:
        pytest.skip(f"the installed Claude Code does not run here (version {found!r}, wanted {CLAUDE_VERSION})")
    return binary


def cli_env(home: Path, base_url: str = "http://127.0.0.1:9") -> dict[str, str]:
    """The CLI's environment: the temp HOME, the fake server, nothing that phones anywhere else, and
    nothing inherited from a Claude Code session this test may itself be running in."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "CLAUDE", "OTEL_"))
        and key.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    env.update(IDENTITY)
    env.update(
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)]),
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY="dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    return env
