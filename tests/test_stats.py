"""`expertise stats`: learnings, recurring failures, injected characters, feedback and corrections, from
the git history and the local session log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from builders import CWD, ClaudeSession
from conftest import Cli, git


def _push(session_id: str, branch: str, edited: str) -> ClaudeSession:
    s = ClaudeSession(session_id)
    s.prompt("Ship the fix")
    s.tool("Edit", {"file_path": f"{CWD}/{edited}", "old_string": "a", "new_string": "b"}, "ok")
    s.bash("git push", f"fatal: The current branch {branch} has no upstream branch.", exit_code=128)
    s.bash(f"git push --set-upstream origin {branch}", "branch set up to track")
    s.say("Pushed.")
    return s


def _pre(project: Path, session: str) -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-m", "expertise_kit.hook", "pre", "--agent", "claude-code"],
        input=json.dumps({"cwd": str(project), "session_id": session, "hook_event_name": "SessionStart"}),
        capture_output=True, text=True, cwd=project, env=dict(os.environ), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout, done.stderr


def test_stats_from_history_and_the_session_log(project: Path, run: Cli, tmp_path: Path) -> None:
    ids = [f"{n}aaaaaaa-0000-4000-8000-000000000000" for n in range(1, 6)]
    run("learn", str(_push(ids[0], "feat/a", "shop/a.py").write(tmp_path / "1.jsonl")))
    # The second session edits shop/a.py too: a file edited in two sessions is learned.
    run("learn", str(_push(ids[1], "feat/b", "shop/a.py").write(tmp_path / "2.jsonl")))
    _pre(project, ids[2])  # the push lesson is injected into a third session, and logged
    run("feedback", _failure_id(run), "--harmful")
    # A person removes one learned file entry by hand and commits it with plain git.
    path = project / ".expertise" / "general.yaml"
    text = path.read_text()
    assert "shop/a.py" in text or "shop/a.py" in (project / ".expertise" / "testing.yaml").read_text()
    _remove_line(project, "shop/a.py")
    git(project, "commit", "-q", "-am", "drop a file entry I do not want")
    data = json.loads(run("stats", "--json").stdout)
    assert sum(data["learnings_per_day"].values()) == sum(data["learnings_per_domain"].values()) >= 2
    [push] = [f for f in data["recurring_failures"] if "git push" in f["issue"]]
    assert push["recurrence"] == 2 and push["domain"] == "general" and push["stopped"] is False
    assert data["injected_chars"]["sessions"] == 1 and data["injected_chars"]["max"] > 100
    assert data["feedback"]["per_domain"]["general"]["harmful"] == 1 and data["feedback"]["revisions"] == 1
    rate = data["correction_rate"]
    assert rate["corrected"] == 1 and rate["learned"] >= 2 and 0 < rate["share"] < 1
    text_out = run("stats").stdout
    assert "correction rate:" in text_out and "git push" in text_out and "injected per session" in text_out
    later = json.loads(run("stats", "--since", "2999-01-01", "--json").stdout)
    assert later["learnings_per_day"] == {} and later["revisions"] == 0 and later["injected_chars"]["sessions"] == 0


def _failure_id(run: Cli) -> str:
    shown = json.loads(run("show", "general", "--json").stdout)["entries"]
    return str(next(e["id"] for e in shown if "git push" in (e.get("issue") or "")))


def _remove_line(project: Path, needle: str) -> None:
    for path in (project / ".expertise").glob("*.yaml"):
        lines = path.read_text().splitlines(keepends=True)
        kept = [line for line in lines if needle not in line]
        if len(kept) != len(lines):
            path.write_text("".join(kept))
            return
    raise AssertionError(f"{needle} not found")


def test_a_stop_after_being_learned_shows(project: Path, run: Cli, tmp_path: Path) -> None:
    run("learn", str(_push("1bbbbbbb-0000-4000-8000-000000000000", "feat/a", "a.py").write(tmp_path / "1.jsonl")))
    for n in range(2, 6):  # four later sessions that never fail to push
        s = ClaudeSession(f"{n}bbbbbbb-0000-4000-8000-000000000000")
        s.prompt("Tidy the docs. Always wrap the docs at 100 columns.")  # a rule: each session is a revision
        s.tool("Edit", {"file_path": f"{CWD}/docs/{n}.md", "old_string": "a", "new_string": "b"}, "ok")
        s.say("Done.")
        run("learn", str(s.write(tmp_path / f"{n}.jsonl")))
    [push] = json.loads(run("stats", "--json").stdout)["recurring_failures"]
    assert push["sessions_since_last_seen"] == 4 and push["stopped"] is True


def test_bad_since_is_one_line(project: Path, run: Cli) -> None:
    result = run("stats", "--since", "last tuesday")
    assert result.exit_code == 1 and "--since 'last tuesday' is not a date" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_stats_of_an_empty_store_and_a_torn_log(project: Path, run: Cli) -> None:
    log = project / ".git" / "expertise" / "cache" / "injected.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("garbage line\n1700000000 s-1 12\n1700000000 s-2 300 4\n")
    data = json.loads(run("stats", "--json").stdout)
    assert data["recurring_failures"] == [] and data["correction_rate"]["share"] is None
    assert data["injected_chars"]["sessions"] == 1 and data["injected_chars"]["max"] == 300
