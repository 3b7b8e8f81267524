"""End to end with the real Claude Code CLI, headless, against a scripted model server on 127.0.0.1.

`expertise init --agent claude-code` installs the hooks into a temp git repo; `claude -p` runs a session
in which the (fake) model runs a failing shell command, then its fix, and ends its turn; the test checks
that our pre-task context reached the model's request, that the failure was learned with its fix (by the
detached learner the session-end hook starts) in one commit touching only `.expertise/`, that the user's
staged change survived, that a second session raises the failure's recurrence, and that `hooks doctor`
sees this Claude Code. The hooks run `expertise-hook` from PATH: this interpreter's.

The CLI is installed with npm into a cache (``$EXPERTISE_E2E_CACHE/npm``, by default
``~/.cache/expertise-e2e/npm``), at the version pinned in ``claude_cli.py``. Without node and npm, or when
the install fails (no registry), the test is skipped, never failed. No traffic leaves 127.0.0.1: the CLI
reads ``ANTHROPIC_BASE_URL`` and everything non-essential is switched off.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_cli import CLAUDE_VERSION, IDENTITY, SESSION_TIMEOUT, install_claude
from claude_cli import cli_env as _cli_env
from fake_claude_code import DEFAULT_COMMAND, FIX_COMMAND, FakeAnthropic

from expertise_kit.learning.background import wait_idle

SEEDED = "Build the docs with make html inside docs/ before tagging a release."
STAGED_CHANGE = "print('hello, staged world')\n"


# -- the CLI ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def claude() -> Path:
    """The pinned Claude Code binary, installed into the cache on first use (``claude_cli``)."""
    return install_claude()


# -- the project ------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=_git_env())
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def _git_env() -> dict[str, str]:
    return dict(os.environ, GIT_CONFIG_NOSYSTEM="1", **IDENTITY)


def _expertise(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", *args], cwd=repo, capture_output=True, text=True, env=_git_env()
    )
    assert done.returncode == 0, f"expertise {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def _commits(repo: Path) -> list[str]:
    return _git(repo, "rev-list", "HEAD").split()


def _failure_entries(repo: Path) -> list[dict[str, Any]]:
    """Every learned failure entry that mentions the scripted command's module, across domains."""
    found = []
    for path in sorted((repo / ".expertise").glob("*.yaml")):
        if path.name == "config.yaml":
            continue
        shown = json.loads(_expertise(repo, "show", path.stem, "--json"))
        found += [
            entry for entry in shown["entries"]
            if entry["section"] == "learned_from_failures" and "nosuchmodule_xyz" in json.dumps(entry)
        ]  # fmt: skip
    return found


def _session(claude: Path, repo: Path, home: Path, fake: FakeAnthropic, prompt: str) -> str:
    """Run one headless session; its printed answer."""
    done = subprocess.run(
        [str(claude), "-p", prompt, "--allowedTools", "Bash"],
        cwd=repo, capture_output=True, text=True, timeout=SESSION_TIMEOUT, env=_cli_env(home, fake.url),
    )  # fmt: skip
    assert done.returncode == 0, f"claude exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _learned_after(repo: Path, before: list[str]) -> list[str]:
    """The commits the session's detached learner made, once it is done."""
    assert wait_idle(str(repo / ".expertise"), timeout=120), "the background learner did not finish"
    commits = _commits(repo)
    assert commits[len(commits) - len(before) :] == before
    new = commits[: len(commits) - len(before)]
    for commit in new:  # every one of them touches .expertise/ only
        touched = _git(repo, "show", "--name-only", "--format=", commit).split()
        assert touched and all(path.startswith(".expertise/") for path in touched), touched
    return new


def _learn_commits(repo: Path, commits: list[str]) -> list[str]:
    """The commits that record what a session taught (``expertise(<domain>): learn ... / update ...``), not
    the feedback on what it was given (``expertise: feedback ...``)."""
    return [c for c in commits if _git(repo, "log", "-1", "--format=%s", c).startswith("expertise(")]


def _staged(repo: Path) -> tuple[str, str]:
    return _git(repo, "diff", "--cached", "--name-status"), _git(repo, "diff", "--cached")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repo with one committed file, `expertise init --agent claude-code` done, one seeded
    convention, and a staged but uncommitted user change."""
    root = tmp_path / "project"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "commit.gpgsign", "false")
    (root / "app.py").write_text("print('hello')\n")
    (root / "vendor").mkdir()
    (root / "vendor" / "nosuchmodule_xyz.py").write_text("VALUE = 1\n")
    _git(root, "add", "app.py", "vendor")
    _git(root, "commit", "-q", "-m", "initial")
    out = _expertise(root, "init", "--agent", "claude-code")
    assert "installed claude-code hooks in .claude/settings.json" in out
    _expertise(root, "add", "general", "best_practices", SEEDED)
    (root / "app.py").write_text(STAGED_CHANGE)
    _git(root, "add", "app.py")
    return root


# -- the test ---------------------------------------------------------------------------------------


def test_claude_code_session_learns_and_commits(claude: Path, repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"  # the CLI's ~/.claude and ~/.claude.json live here
    home.mkdir()
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    assert {"SessionStart", "UserPromptSubmit", "SessionEnd"} <= set(settings["hooks"])  # step 1
    staged_before = _staged(repo)
    assert "M\tapp.py" in staged_before[0]
    before = _commits(repo)

    with FakeAnthropic() as fake:
        first = _session(claude, repo, home, fake, "Check that the optional dependency can be imported.")
        main = fake.main_requests()

        # Step 2: the model asked for the failing command, got its error back, ran the fix, ended the turn.
        assert len(main) >= 3, f"expected two tool calls and a final answer, got {len(main)} requests"
        results = json.dumps(main[-1]["messages"])
        assert "ModuleNotFoundError" in results and '"is_error": true' in results
        assert fake.final_text in first

        # Step 3: the seeded convention reached the model, in the very first request.
        assert SEEDED in json.dumps(main[0]), "the pre-task hook's context is not in the model's request"

        # Step 4: the failure was learned with its fix, in one commit touching only .expertise/ (the
        # session ended well, so a feedback commit for the injected convention may follow: .expertise/ too).
        new = _learned_after(repo, before)
        assert len(_learn_commits(repo, new)) == 1, [_git(repo, "log", "-1", "--format=%s", c) for c in new]
        learned = _failure_entries(repo)
        assert len(learned) == 1, learned
        assert "No module named 'nosuchmodule_xyz'" in (learned[0]["error"] or "")
        assert "PYTHONPATH=vendor" in (learned[0]["solution"] or ""), learned[0]
        assert learned[0]["recurrence"] == 1
        transcripts = list((home / ".claude" / "projects").glob("*/*.jsonl"))
        assert len(transcripts) == 1 and learned[0]["sessions"] == [transcripts[0].stem]

        # Step 5: the user's staged change is still staged, unchanged.
        assert _staged(repo) == staged_before

        # Step 6: a second session with the same failure raises its recurrence.
        after = _commits(repo)
        _session(claude, repo, home, fake, "Try the optional dependency once more, please.")
        again = _failure_entries(repo) if _learned_after(repo, after) else []
        assert len(again) == 1 and again[0]["id"] == learned[0]["id"], again
        assert again[0]["recurrence"] == 2
        assert len(again[0]["sessions"]) == 2
        assert _staged(repo) == staged_before

    # And `hooks doctor` sees it all: the command, the timeouts, this Claude Code's version, a round trip.
    env = dict(_cli_env(home), PATH=os.pathsep.join([str(claude.parent), _cli_env(home)["PATH"]]))
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", "hooks", "doctor", "--agent", "claude-code", "--json"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    (report,) = json.loads(done.stdout)["agents"]
    checks = {c["name"]: c for c in report["checks"]}
    assert report["version"] and CLAUDE_VERSION in report["version"], report
    for name in ("config", "hooks", "timeouts", "command", "round-trip"):
        assert checks[name]["status"] == "ok", checks[name]


# -- reflection (docs/reflect.md) ---------------------------------------------------------------------

ASKED = "expertise_kit asks (at most"  # the first words of our reason
LESSON = "Import nosuchmodule_xyz with PYTHONPATH=vendor: the module lives in vendor/, not site-packages"
FORM = r"\n(\S+) add DOMAIN SECTION \"LESSON\" --session ([\w.-]+)"  # the command our reason gives


def _obedient(body: dict[str, Any]) -> tuple[str, ...]:
    """A model that does what the reflection asks: one lesson, with the command and session it was given."""
    texts = [
        m["content"] if isinstance(m["content"], str) else " ".join(str(b.get("text", "")) for b in m["content"])
        for m in body.get("messages") or [] if m.get("role") == "user"
    ]  # fmt: skip
    form = next((f for t in texts if ASKED in t and (f := re.search(FORM, t))), None)
    if form is None:
        return (DEFAULT_COMMAND, FIX_COMMAND)
    return (DEFAULT_COMMAND, FIX_COMMAND, f'{form[1]} add general best_practices "{LESSON}" --session {form[2]}')


def _agent_entries(repo: Path) -> list[dict[str, Any]]:
    found = []
    for row in json.loads(_expertise(repo, "list", "--json")):
        shown = json.loads(_expertise(repo, "show", row["domain"], "--json"))
        found += [e for e in shown["entries"] if e.get("source") == "agent"]
    return found


def test_claude_code_reflects_once_only_with_reflect(claude: Path, repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    staged_before = _staged(repo)
    with FakeAnthropic(commands=_obedient) as fake:
        # Without --reflect: never asked.
        _session(claude, repo, home, fake, "Check that the optional dependency can be imported.")
        assert not any(ASKED in json.dumps(body) for body in fake.main_requests())
        assert wait_idle(str(repo / ".expertise"), timeout=120)
        out = _expertise(repo, "hooks", "install", "--agent", "claude-code", "--reflect")
        assert "reflect: failures" in out
        settings = json.loads((repo / ".claude" / "settings.json").read_text())
        assert "reflect --agent claude-code" in json.dumps(settings["hooks"]["Stop"])

        # With it: asked once, at the end of the turn that had a failure; the lesson is committed once.
        seen = len(fake.main_requests())
        before = _commits(repo)
        _session(claude, repo, home, fake, "Try the optional dependency once more, please.")
        bodies = fake.main_requests()[seen:]
        asked = [b for b in bodies if ASKED in json.dumps(b["messages"])]
        assert asked, "the reflection never reached the model"
        reason = next(m for m in asked[0]["messages"] if ASKED in json.dumps(m))
        assert reason["role"] == "user" and "nosuchmodule_xyz" in json.dumps(reason)  # the failure is a candidate
        # The session's end: still only once (Claude Code also echoes a block as a system note).
        told = [m for m in bodies[-1]["messages"] if m["role"] == "user" and ASKED in json.dumps(m)]
        assert len(told) == 1
        _learned_after(repo, before)

    session = max((home / ".claude" / "projects").glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime).stem
    (entry,) = _agent_entries(repo)
    assert entry["text"] == LESSON and entry["sessions"] == [session]
    by_agent = [
        c for c in _commits(repo)
        if f"Expertise-Session: {session}" in (m := _git(repo, "log", "-1", "--format=%B", c))
        and "Expertise-Change: agent" in m
    ]  # fmt: skip
    assert len(by_agent) == 1
    assert _staged(repo) == staged_before  # the user's staged work is untouched
    stored = "".join(p.read_text() for p in (repo / ".expertise").glob("*.yaml"))
    assert ASKED not in stored and "--session" not in stored  # our reason and the agent's answer teach nothing
