"""Automatic feedback: after a session, what the hooks injected is judged against what the session did,
and the verdicts land in one commit per session, with the counts in trailers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from builders import CWD, ClaudeSession
from builders import learned_failure as _failure
from conftest import Cli, git, settle

from expertise_kit.learning.background import log_path, wait_idle

NO_UPSTREAM = (
    "fatal: The current branch {b} has no upstream branch.\nTo push the current branch, use\n\n"
    " git push --set-upstream origin {b}"
)


def _store(project: Path) -> None:
    (project / ".expertise" / "general.yaml").write_text(
        "domain: general\nlearned_from_failures:\n"
        f"  - {_failure('`git push`', NO_UPSTREAM.format(b='feature').splitlines()[0], 'ran `git push -u origin HEAD`', 5)}\n"  # noqa: E501
        f"  - {_failure('`npm test`', 'Error: STRIPE_KEY is not set', 'ran `cp .env.example .env`', 4)}\n"
    )
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a store")
    settle(project)  # the hook's detached rebuild after a hand edit, done now


def _hook(project: Path, mode: str, payload: Mapping[str, object]) -> subprocess.CompletedProcess[str]:
    """Run a hook as the agent would; after the post hook, wait for the learner it started."""
    done = subprocess.run(
        [sys.executable, "-I", "-m", "expertise_kit.hook", mode, "--agent", "claude-code"],
        input=json.dumps({"cwd": str(project), **payload}),
        capture_output=True, text=True, cwd=project, env=dict(os.environ), timeout=120, check=False,
    )  # fmt: skip
    if mode == "post":
        assert wait_idle(str(project / ".expertise"))
    return done


def _essentials(project: Path, session: str) -> str:
    done = _hook(project, "pre", {"hook_event_name": "SessionStart", "session_id": session})
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]) if done.stdout else ""


def _session(project: Path, tmp_path: Path, session: str, *, heeded: bool, fixed_otherwise: bool = True) -> str:
    """One agent session through both hooks: injected at its start, then pushing a new branch. Not heeded,
    the push fails; then the session fixes it another way than the entry says, or the same way."""
    shown = _essentials(project, session)
    s = ClaudeSession(session)
    s.prompt("Ship the discount rounding fix")
    s.tool("Edit", {"file_path": f"{CWD}/shop/pricing.py", "old_string": "a", "new_string": "b"}, "ok")
    branch = f"fix/{session[:4]}"
    if heeded:
        s.bash(f"git push --set-upstream origin {branch}", "branch set up to track")
    else:
        s.bash("git push", NO_UPSTREAM.format(b=branch), exit_code=128)
        if fixed_otherwise:
            s.bash("git config --global push.autoSetupRemote true", "")
            s.bash("git push", "branch set up to track")
        else:
            s.bash(f"git push -u origin {branch}", "branch set up to track")
    s.say("Pushed.")
    transcript = s.write(tmp_path / f"{session}.jsonl")
    payload = {"hook_event_name": "SessionEnd", "session_id": session, "transcript_path": str(transcript)}
    done = _hook(project, "post", payload)
    assert done.returncode == 0 and done.stdout == "", done.stderr
    return shown


def _counts(run: Cli, issue: str) -> tuple[int, int, int]:
    entries = json.loads(run("show", "general", "--json").stdout)["entries"]
    entry = next(e for e in entries if e.get("issue") == issue)
    return entry["helpful"], entry["harmful"], entry["ended_well"]


def test_a_warning_whose_fix_was_not_the_fix_turns_harmful_and_sinks(project: Path, run: Cli, tmp_path: Path) -> None:
    _store(project)
    first = _essentials(project, "aaaa0000-0000-4000-8000-000000000000")
    assert first.index("git push") < first.index("npm test")  # the push warning recurred more: it leads
    for n in range(1, 4):
        _session(project, tmp_path, f"bbbb000{n}-0000-4000-8000-000000000000", heeded=False)
        assert _counts(run, "`git push`")[1] == n
        message = git(project, "log", "-1", "--format=%B")
        assert "Expertise-Harmful: 1" in message and "Expertise-Change: feedback" in message
        assert f"Expertise-Session: bbbb000{n}" in message
    later = _essentials(project, "cccc0000-0000-4000-8000-000000000000")
    assert "npm test" in later and ("git push" not in later or later.index("npm test") < later.index("git push"))


def test_a_warning_not_heeded_but_right_is_not_sunk(project: Path, run: Cli, tmp_path: Path) -> None:
    """The failure happened anyway and the session fixed it as the entry says: the lesson was right and the
    agent did not follow it. No counter moves; learning counts the recurrence, so it stays on top."""
    _store(project)
    for n in range(1, 3):
        _session(project, tmp_path, f"abcd000{n}-0000-4000-8000-000000000000", heeded=False, fixed_otherwise=False)
    assert _counts(run, "`git push`")[:2] == (0, 0)
    later = _essentials(project, "cccc0000-0000-4000-8000-000000000000")
    assert later.index("git push") < later.index("npm test")


def test_a_heeded_warning_turns_helpful_in_one_commit_per_session(project: Path, run: Cli, tmp_path: Path) -> None:
    _store(project)
    before = int(git(project, "rev-list", "--count", "HEAD"))
    _session(project, tmp_path, "dddd0001-0000-4000-8000-000000000000", heeded=True)
    helpful, harmful, _ = _counts(run, "`git push`")
    assert (helpful, harmful) == (1, 0)
    # The npm warning was shown too, but the session never ran npm: no evidence either way, except that
    # the session ended well, the smaller credit.
    assert _counts(run, "`npm test`") == (0, 0, 1)
    subjects = git(project, "log", "--format=%s", f"-{int(git(project, 'rev-list', '--count', 'HEAD')) - before}")
    feedback = [line for line in subjects.splitlines() if "feedback from session" in line]
    assert len(feedback) == 1, subjects  # one commit for the session's verdicts, not one per entry
    message = git(project, "log", "-1", "--format=%B")
    assert "Expertise-Helpful: 1" in message and "Expertise-Ended-Well: 1" in message


def test_a_session_is_credited_once_however_often_its_hook_runs(project: Path, run: Cli, tmp_path: Path) -> None:
    _store(project)
    session = "eeee0001-0000-4000-8000-000000000000"
    _session(project, tmp_path, session, heeded=True)
    head = git(project, "rev-parse", "HEAD")
    payload = {"hook_event_name": "Stop", "session_id": session, "transcript_path": str(tmp_path / f"{session}.jsonl")}
    done = _hook(project, "post", payload)  # a per-turn stop event, or a resumed session, runs it again
    assert done.returncode == 0 and done.stdout == ""
    assert _counts(run, "`git push`") == (1, 0, 0)
    assert git(project, "rev-parse", "HEAD") == head


def test_no_injection_state_means_no_feedback_and_no_error(project: Path, run: Cli, tmp_path: Path) -> None:
    _store(project)
    s = ClaudeSession("ffff0001-0000-4000-8000-000000000000")
    s.prompt("Ship it")
    s.bash("git push", NO_UPSTREAM.format(b="x"), exit_code=128)
    transcript = s.write(tmp_path / "s.jsonl")
    done = _hook(project, "post", {"session_id": "ffff0001-0000-4000-8000-000000000000",
                                   "transcript_path": str(transcript)})  # fmt: skip
    assert done.returncode == 0 and done.stdout == ""
    assert "feedback" not in Path(log_path(str(project / ".expertise"))).read_text()
    assert _counts(run, "`git push`")[:2] == (0, 0)
