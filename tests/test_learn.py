"""expertise learn: real transcripts, the three formats, secrets, bad input and merging."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from builders import CWD, ClaudeSession, shop_session, write_codex, write_generic
from conftest import TRANSCRIPTS, Cli, git, snapshot

from expertise_kit.learning.transcripts import read_transcript

REAL = sorted(TRANSCRIPTS.glob("*/*/*.jsonl")) if TRANSCRIPTS.is_dir() else []
needs_fixtures = pytest.mark.skipif(not REAL, reason=f"real transcripts not found at {TRANSCRIPTS} (../shared)")
_NOT_FAILURES = ("[Request interrupted by user", "doesn't want to proceed", "haven't granted it yet")


def _learn(run: Cli, *paths: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    result = run("learn", *map(str, paths), "--json", *extra)
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _independent_counts(files: list[str]) -> tuple[set[str], int]:
    """Modified files and failed calls, counted straight from the JSON, without our reader."""
    uses: dict[str, tuple[str, dict[str, Any]]] = {}
    results: dict[str, dict[str, Any]] = {}
    for name in files:
        for line in Path(name).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            content = (record.get("message") or {}).get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") == "tool_use":
                    uses[block["id"]] = (block["name"], block.get("input") or {})
                elif block.get("type") == "tool_result":
                    results[block["tool_use_id"]] = block
    modified = set()
    failures = 0
    for tool_id, (name, params) in uses.items():
        result = results.get(tool_id)
        if result is None:
            continue
        text = json.dumps(result.get("content"))
        if result.get("is_error"):
            if not any(marker in text for marker in _NOT_FAILURES):
                failures += 1
        elif name in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
            modified.add(params.get("file_path") or params.get("notebook_path"))
    return modified, failures


@needs_fixtures
@pytest.mark.parametrize("transcript", REAL, ids=[p.name for p in REAL])
def test_every_real_transcript_learns_and_matches_an_independent_count(
    project: Path, run: Cli, transcript: Path
) -> None:
    data = _learn(run, transcript)
    assert data["errors"] == []
    [session] = data["sessions"]
    modified, failures = _independent_counts(session["files_read"])
    assert set(session["modified_files"]) == modified
    assert session["failures"] == failures
    stored_failures = sum(
        1 for d in data["domains"].values() for e in d["added"] if e["section"] == "learned_from_failures"
    )
    assert stored_failures <= failures
    assert git(project, "status", "--porcelain") == ""


@needs_fixtures
def test_all_real_transcripts_at_once_then_again_changes_nothing(project: Path, run: Cli) -> None:
    first = _learn(run, *REAL)
    assert first["errors"] == []
    added = sum(len(d["added"]) for d in first["domains"].values())
    assert added >= 3 and added + len(first["held"]) >= 20  # files edited in one session only are held
    commits = git(project, "log", "--format=%s", "--grep=learn").splitlines()
    # One revision for the whole learn, every domain it touched in the one commit.
    assert len(commits) == 1 and len({d["commit"] for d in first["domains"].values() if d["commit"]}) == 1
    head = git(project, "rev-parse", "HEAD")
    before = snapshot(project)
    second = _learn(run, *REAL)
    assert all(not d["added"] and not d["updated"] for d in second["domains"].values())
    reasons = {r["reason"] for d in second["domains"].values() for r in d["rejected"]}
    assert "already learned from this session" in reasons
    assert git(project, "rev-parse", "HEAD") == head and snapshot(project) == before


@needs_fixtures
def test_rewinds_and_subagents_in_the_real_branching_session(project: Path, run: Cli) -> None:
    main = next(p for p in REAL if p.name.startswith("b3edadab"))
    session = read_transcript(main)
    assert session.branches >= 3  # checkpoint and conversation rewinds
    assert any(t.startswith("agent:") for t in session.threads)  # the Task agent's own file
    assert session.prompts[-1].startswith("Ok ultrathink and try again")  # the branch that was kept
    assert session.ended_well


def test_sample_session_learns_failures_fixes_files_patterns_and_technique(
    project: Path, run: Cli, tmp_path: Path
) -> None:
    data = _learn(run, shop_session().write(tmp_path / "s.jsonl"))
    added = [(name, e["section"], e["text"]) for name, d in data["domains"].items() for e in d["added"]]
    texts = " | ".join(t for _, _, t in added)
    # The edit tool's own protocol error is no lesson: rejected, with the reason, in --json.
    assert "Edit shop/pricing.py" not in texts
    rejected = [r for d in data["domains"].values() for r in d["rejected"] if r["kind"] == "failure"]
    assert any("File has not been read yet" in r["text"] and "harness noise" in r["reason"] for r in rejected)
    assert "`python -m pytest tests/test_checkout.py -q` -> changed shop/pricing.py" in texts
    # Edited in this one session only: held until another session edits them too.
    held = {h["text"] for h in data["held"] if h["kind"] == "file"}
    assert {"shop/pricing.py", "shop/checkout.py", "shop/money.py"} <= held
    assert not [t for _, s, t in added if s == "core_files"]
    assert data["sessions"][0]["deleted_files"] == ["shop/util.py"]  # the source of the `git mv`
    assert any(
        s == "effective_patterns" and t.startswith("Run `python -m pytest -q` after editing")
        for _, s, t in added
    )
    assert not any(s == "effective_patterns" and "->" in t for _, s, t in added)  # tool orders teach nothing
    assert any(s == "successful_techniques" and "verified with `python -m pytest" in t for _, s, t in added)
    testing = (project / ".expertise" / "testing.yaml").read_text()
    assert "error: 'E AssertionError: assert 1999 == 2000'" in testing
    assert "/home/dev" not in testing  # paths are made project-relative
    body = git(project, "log", "-1", "--format=%B", "--", ".expertise/testing.yaml")
    assert "Expertise-Change: learned" in body and "Expertise-Session: 5e55104e-" in body


def test_codex_rollout(project: Path, run: Cli, tmp_path: Path) -> None:
    data = _learn(run, write_codex(tmp_path / "rollout-2026-11-21T09-00-00-x.jsonl"))
    [session] = data["sessions"]
    assert session["format"] == "codex" and session["id"] == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert session["modified_files"] == ["migrations/versions/0002_orders.py", "app/models.py"]
    assert session["failures"] == 1 and session["task"] == "Add a migration for the orders table"
    database = data["domains"]["database"]["added"]
    failure = next(e for e in database if e["section"] == "learned_from_failures")
    assert failure["text"].startswith("`alembic upgrade head` -> changed migrations/versions/0002_orders.py")


def test_generic_log(project: Path, run: Cli, tmp_path: Path) -> None:
    data = _learn(run, write_generic(tmp_path / "log.jsonl"))
    [session] = data["sessions"]
    assert session["format"] == "generic" and session["id"] == "generic-7" and session["failures"] == 1
    texts = [e["text"] for d in data["domains"].values() for e in d["added"]]
    assert "`pytest tests/api` -> edited api/csrf.py" in texts
    assert any(t.startswith("Harden the login endpoint: changed api/login.py, api/csrf.py") for t in texts)


def test_explicit_format_and_detection(project: Path, run: Cli, tmp_path: Path) -> None:
    path = write_generic(tmp_path / "log.jsonl")
    assert _learn(run, path, extra=("--format", "generic", "--dry-run"))["sessions"][0]["format"] == "generic"
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"hello": "world"}\n')
    result = run("learn", str(unknown))
    assert result.exit_code == 1 and "can't tell which agent wrote this transcript" in result.stderr


def _interrupted_and_rewound(tmp_path: Path) -> Path:
    s = ClaudeSession()
    root = s.prompt("Add a dark mode toggle to the settings page")
    s.tool("Write", {"file_path": f"{CWD}/web/abandoned.tsx", "content": "x"}, "ok")
    s.say("Done with the first attempt.")
    s.last = root  # the user rewinds to the first prompt and asks again
    s.prompt("Actually, put the toggle in the header instead")
    s.tool("Edit", {"file_path": f"{CWD}/web/header.tsx"}, "[Request interrupted by user for tool use]", error=True)
    s.prompt("[Request interrupted by user]")
    s.raw(
        {"type": "system", "subtype": "compact_boundary", "parentUuid": None, "logicalParentUuid": s.last,
         "uuid": "c0mpac7-0000", "sessionId": s.session_id, "timestamp": "2026-11-20T11:00:00.000Z",
         "isSidechain": False, "content": "Conversation compacted"}
    )  # fmt: skip
    s.last = "c0mpac7-0000"
    s.prompt("continue")
    s.tool("Edit", {"file_path": f"{CWD}/web/header.tsx"}, "ok")
    s.bash("npm test", "Tests: 3 passed")
    s.say("The toggle is in the header.")
    return s.write(tmp_path / "rewound.jsonl")


def test_rewind_compaction_and_interruption(tmp_path: Path) -> None:
    session = read_transcript(_interrupted_and_rewound(tmp_path))
    assert session.branches == 2
    main = session.threads["main"]
    assert [c.name for c in main] == ["Edit", "Edit", "Bash"]  # across the compaction boundary
    assert main[0].interrupted and not main[0].error.startswith("E")
    assert [c.modifies for c in session.threads["branch-1"]] == [(f"{CWD}/web/abandoned.tsx",)]
    assert session.prompts[0] == "Add a dark mode toggle to the settings page"
    assert session.ended_well


def test_interruptions_and_denials_are_not_failures(project: Path, run: Cli, tmp_path: Path) -> None:
    data = _learn(run, _interrupted_and_rewound(tmp_path))
    assert data["sessions"][0]["failures"] == 0
    assert all(e["section"] != "learned_from_failures" for d in data["domains"].values() for e in d["added"])


def test_recurrence_across_sessions_and_no_double_count(project: Path, run: Cli, tmp_path: Path) -> None:
    first = shop_session("aaaaaaaa-0000-0000-0000-000000000001").write(tmp_path / "a.jsonl")
    second = shop_session("bbbbbbbb-0000-0000-0000-000000000002").write(tmp_path / "b.jsonl")
    _learn(run, first)
    data = _learn(run, second)
    updated = {e["text"]: e["recurrence"] for d in data["domains"].values() for e in d["updated"]}
    [(text, seen)] = [(t, n) for t, n in updated.items() if t.startswith("`python -m pytest tests/test_checkout.py")]
    assert seen == 2, text
    text = (project / ".expertise" / "testing.yaml").read_text()
    assert "sessions: [aaaaaaaa-0000-0000-0000-000000000001, bbbbbbbb-0000-0000-0000-000000000002]" in text
    assert "recurrence: 2" in text
    assert "seen again" in git(project, "log", "-1", "--format=%B", "--", ".expertise/testing.yaml")


def test_dry_run_writes_nothing(project: Path, run: Cli, tmp_path: Path) -> None:
    path = shop_session().write(tmp_path / "s.jsonl")
    before, head = snapshot(project), git(project, "rev-parse", "HEAD")
    data = _learn(run, path, extra=("--dry-run",))
    assert data["dry_run"] is True and data["domains"]["testing"]["added"]
    assert snapshot(project) == before and git(project, "rev-parse", "HEAD") == head
    human = run("learn", str(path), "--dry-run")
    assert "would learn" in human.stdout


def test_strings_are_capped_and_trivial_learnings_rejected(project: Path, run: Cli, tmp_path: Path) -> None:
    def session(number: int) -> ClaudeSession:
        s = ClaudeSession(f"5e55104e-1d2c-4b1a-9f00-00000000000{number}")
        s.prompt("Refactor the report builder " + "very " * 100)
        s.bash("make reports " + "--flag " * 60, "RuntimeError: " + "boom " * 3000, exit_code=2)
        s.bash("ls missing", "Error", exit_code=1)
        s.say("gave up")
        return s

    first = _learn(run, session(1).write(tmp_path / "long.jsonl"))
    assert [h["text"][:20] for h in first["held"]] == ["`make reports --flag"]  # once, unfixed: held back
    data = _learn(run, session(2).write(tmp_path / "again.jsonl"))  # it recurs in another session: stored now
    stored = [e for d in data["domains"].values() for e in d["added"] if e["section"] == "learned_from_failures"]
    assert len(stored) == 1 and not data["held"]
    rejected = [r for d in data["domains"].values() for r in d["rejected"]]
    assert any("the error says nothing useful" in r["reason"] for r in rejected)
    for path in (project / ".expertise").glob("*.yaml"):
        for line in path.read_text().splitlines():
            if line.strip().startswith("issue:"):
                assert len(line.split("issue:", 1)[1].strip().strip("'\"")) <= 100
            if line.strip().startswith("error:"):
                assert len(line.split("error:", 1)[1].strip().strip("'\"")) <= 200


def test_bad_lines_are_skipped_and_said(project: Path, run: Cli, tmp_path: Path) -> None:
    path = shop_session().write(tmp_path / "s.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(3, "this is not json at all\n")
    lines.insert(5, "[1, 2, 3]\n")
    path.write_text("".join(lines) + '{"type": "assistant", "trunc')  # a truncated last line
    result = run("learn", str(path), "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["sessions"][0]["skipped_lines"] == 3
    assert any(":4: a line that is not JSON, skipped" in w for w in data["warnings"])
    assert any("a truncated last line, skipped" in w for w in data["warnings"])
    assert data["domains"]["testing"]["added"]  # the rest still learns


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("binary.jsonl", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 100, "is a binary file"),
        ("garbage.jsonl", b"garbage\nmore garbage\n", "can't tell which agent wrote this transcript"),
    ],
)
def test_unusable_files_are_errors_but_the_rest_still_learns(
    project: Path, run: Cli, tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    bad = tmp_path / name
    bad.write_bytes(content)
    good = shop_session().write(tmp_path / "good.jsonl")
    result = run("learn", str(bad), str(good), "--json")
    assert result.exit_code == 1
    assert message in result.stderr and str(bad) in result.stderr
    assert "Traceback" not in result.output
    assert json.loads(result.stdout)["domains"]["testing"]["added"]


def test_empty_missing_and_directory_inputs(project: Path, run: Cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = run("learn", str(empty))
    assert result.exit_code == 0 and "empty transcript, nothing to learn" in result.stderr
    missing = run("learn", str(tmp_path / "nope.jsonl"))
    assert missing.exit_code == 1 and "transcript not found" in missing.stderr
    directory = run("learn", str(tmp_path))
    assert directory.exit_code == 1 and "is a directory" in directory.stderr


def test_an_enormous_line_is_skipped_in_constant_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from expertise_kit.learning.transcripts import lines

    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 1 << 20)  # 1 MiB stands in for the real 32 MiB limit
    path = shop_session().write(tmp_path / "s.jsonl")
    last = path.read_text().splitlines()[-1]
    with open(path, "a") as handle:
        handle.write('{"type": "user", "x": "' + "y" * (24 << 20) + '"}\n')  # 24 MiB on one line
        handle.write(last + "\n")
    tracemalloc.start()
    session = read_transcript(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert session.skipped_lines == 1 and len(session.calls) == 9
    assert peak < 8 << 20  # the 24 MiB line was never held


def test_memory_stays_flat_as_the_transcript_grows(tmp_path: Path) -> None:
    base = shop_session()
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    base.write(small)
    filler = json.dumps({"type": "progress", "uuid": "p", "data": "z" * 4000}) + "\n"
    with open(large, "w") as handle:
        handle.write(small.read_text())
        for _ in range(6000):  # ~24 MB of records the reader streams past
            handle.write(filler)
    peaks = []
    for path in (small, large):
        tracemalloc.start()
        read_transcript(path)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < peaks[0] + (2 << 20)


def test_hook_style_invocation_has_no_traceback(tmp_path: Path, project: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", "-C", str(project), "learn", str(bad)],
        capture_output=True,
        text=True,
        env={**os.environ},
        check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_cli_2_1_subagents_folder_is_read_with_its_session(tmp_path: Path) -> None:
    main = ClaudeSession("21000000-0000-4000-8000-000000000021", version="2.1.3")
    main.prompt("Split the pricing module")
    main.tool("Task", {"description": "split", "prompt": "split pricing.py"}, "done")
    main.say("Split.")
    path = main.write(tmp_path / "21000000-0000-4000-8000-000000000021.jsonl")
    agent = ClaudeSession(main.session_id, version="2.1.3")
    agent.counter = 500  # distinct uuids
    agent.prompt("split pricing.py")
    agent.tool("Write", {"file_path": f"{CWD}/shop/tax.py", "content": "x"}, "ok")
    for record in agent.records:
        record.update(isSidechain=True, agentId="a77e2c1")
    (tmp_path / path.stem / "subagents").mkdir(parents=True)
    agent.write(tmp_path / path.stem / "subagents" / "agent-a77e2c1.jsonl")
    session = read_transcript(path)
    assert len(session.files_read) == 2
    assert [c.modifies for c in session.threads["agent:a77e2c1"]] == [(f"{CWD}/shop/tax.py",)]
    assert session.ended_well


def test_learning_into_a_full_file_prunes_and_says_so(project: Path, run: Cli, tmp_path: Path) -> None:
    (project / ".expertise" / "config.yaml").write_text("line_cap: 50\n")
    path = project / ".expertise" / "testing.yaml"
    rules = "".join(f"  - rule {n}\n" for n in range(36))
    path.write_text(path.read_text().replace("\npatterns: []", "\npatterns:\n" + rules))
    result = run("learn", str(shop_session().write(tmp_path / "s.jsonl")))
    assert result.exit_code == 0
    assert "warning: pruned learned " in result.stderr  # learned entries go first...
    assert "hand-written" not in result.stderr  # ...and here they were enough
    text = path.read_text()
    assert text.count("\n") <= 50 and all(f"  - rule {n}\n" in text for n in range(36))


def test_claude_codes_own_words_open_a_result_and_a_file_that_quotes_them_is_no_interrupt(tmp_path: Path) -> None:
    s = ClaudeSession()
    s.prompt("Summarize the permissions doc")
    quoting = "# Permissions\n" + "Each tool asks first. " * 60 + "Permission to use Bash is asked once a session.\n"
    s.tool("Read", {"file_path": f"{CWD}/docs/permissions.md"}, quoting)
    s.tool("Bash", {"command": "rm -rf build"}, "Permission to use Bash with command rm -rf build has been denied.")
    read, denied = read_transcript(s.write(tmp_path / "a.jsonl")).calls
    assert quoting.index("Permission to use") > 1000
    assert (read.ok, read.interrupted) == (True, False) and denied.interrupted
