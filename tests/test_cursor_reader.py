"""Cursor's agent transcripts: what they offer (the task, the commands, the files edited) and what they
don't (any tool result), and the post hook finding one by conversation id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Cli

from expertise_kit.errors import UserError
from expertise_kit.learning.background import log_path, wait_idle
from expertise_kit.learning.transcripts import detect_format, read_transcript
from expertise_kit.learning.transcripts.cursor import NO_OUTCOMES, find_cursor_transcript

FIXTURE = Path(__file__).parent / "fixtures" / "cursor" / "c0ffee00-aaaa-4bbb-8ccc-123456789abc.jsonl"


def test_a_cursor_transcript_is_detected_and_read() -> None:
    assert detect_format(FIXTURE) == "cursor"
    session = read_transcript(FIXTURE)
    assert session.format == "cursor" and session.id == FIXTURE.stem
    assert session.task == "Fix the rounding in shop/pricing.py so discounts round half up"
    assert session.prompts[1] == "also run the tests"
    assert [c.name for c in session.calls] == ["Read", "Bash", "Edit", "Write", "Bash"]
    assert session.calls[1].command == "python -m pytest tests/test_pricing.py -q"
    assert [c.modifies for c in session.calls if c.modifies] == [("shop/pricing.py",), ("tests/test_rounding.py",)]
    assert all(c.ok is None for c in session.calls if c.name == "Bash")  # never a failure, never a fix
    assert "switching to Decimal" in session.calls[2].said
    assert any(NO_OUTCOMES in w for w in session.warnings)


def test_learning_a_cursor_session_keeps_its_files_and_invents_no_failure(project: Path, run: Cli) -> None:
    result = run("learn", "--json", str(FIXTURE))
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    # Its files are read (held until another session edits them too), and no failure is invented.
    assert {h["text"] for h in report["held"]} == {"shop/pricing.py", "tests/test_rounding.py"}
    assert all(h["kind"] == "file" for h in report["held"])
    assert [a for d in report["domains"].values() for a in d["added"]] == []
    assert NO_OUTCOMES in result.stderr


def test_bad_cursor_lines_are_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    good = FIXTURE.read_text().splitlines()
    path.write_text("\n".join([good[0], "{cut off", '{"role": "user", "message": "x"}', *good[1:3]]) + "\n")
    session = read_transcript(path, "cursor")
    assert len(session.calls) == 2 and session.skipped_lines == 2
    assert any(f"{path}:2" in w for w in session.warnings)


def test_a_file_with_no_cursor_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"type": "user", "sessionId": "x"}\n')
    with pytest.raises(UserError, match="no Cursor transcript lines"):
        read_transcript(path, "cursor")


def test_a_transcript_is_found_by_conversation_id(tmp_path: Path) -> None:
    cli = tmp_path / ".cursor" / "projects" / "home-dev-shop" / "agent-transcripts" / "abc-1.jsonl"
    ide = tmp_path / ".cursor" / "projects" / "home-dev-shop" / "agent-transcripts" / "abc-2" / "abc-2.jsonl"
    for path in (cli, ide):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(FIXTURE.read_text())
    assert find_cursor_transcript("abc-1", str(tmp_path)) == str(cli)
    assert find_cursor_transcript("abc-2", str(tmp_path)) == str(ide)
    assert find_cursor_transcript("missing", str(tmp_path)) is None
    assert find_cursor_transcript("../../etc/passwd", str(tmp_path)) is None
    assert find_cursor_transcript("*", str(tmp_path)) is None


def test_the_cursor_stop_hook_learns_the_transcript_it_is_not_handed(project: Path) -> None:
    """Cursor's CLI sends `transcript_path: null`; the conversation id finds it."""
    home = Path(os.environ["HOME"])
    transcript = home / ".cursor" / "projects" / "repo" / "agent-transcripts" / "c0ffee-77.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text(FIXTURE.read_text())
    payload = {"conversation_id": "c0ffee-77", "transcript_path": None, "workspace_roots": [str(project)],
               "hook_event_name": "stop"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-I", "-m", "expertise_kit.hook", "post", "--agent", "cursor"], input=json.dumps(payload),
        capture_output=True, text=True, cwd=project, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert wait_idle(str(project / ".expertise"))
    # Its two edited files were read; edited in one session only, they are held, not yet key files.
    assert "learned 0 new, 0 seen again, 2 held" in Path(log_path(str(project / ".expertise"))).read_text()
