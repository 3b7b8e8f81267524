"""Gemini CLI chat recordings: the JSON-lines form (0.39 and later) and the one-document form (up to 0.38).

The fixtures in tests/fixtures/gemini/ are written in the shapes Gemini CLI 0.61.0 and 0.38.2 wrote in a
headless session against a scripted model: a message recorded again each time it changes, tool results
inside ``<untrusted_context>``, hook context in the user's turn, ``$set``/``$rewindTo`` records.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expertise_kit.learning.extract import extract
from expertise_kit.learning.transcripts import detect_format, read_sessions, read_transcript
from expertise_kit.learning.transcripts import gemini as gemini_module
from expertise_kit.learning.transcripts.gemini import _shell_result, read_gemini

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
MAIN = FIXTURES / "session-2026-11-20T10-00-5c0ffee0.jsonl"
TRUNCATED = FIXTURES / "session-2026-11-20T11-00-truncated.jsonl"
MALFORMED = FIXTURES / "session-2026-11-20T12-00-malformed.jsonl"
REWIND = FIXTURES / "session-2026-11-20T13-00-rewind00.jsonl"
LEGACY = FIXTURES / "session-2026-03-02T09-00-legacy00.json"
LEGACY_CUT = FIXTURES / "session-2026-03-02T10-00-legacycut.json"


@pytest.mark.parametrize("path", [MAIN, TRUNCATED, MALFORMED, REWIND, LEGACY, LEGACY_CUT], ids=lambda p: p.name)
def test_both_forms_are_detected_as_gemini(path: Path) -> None:
    assert detect_format(path) == "gemini"
    assert read_transcript(path).format == "gemini"


def test_a_session_reads_its_task_calls_and_results() -> None:
    session = read_transcript(MAIN)
    assert session.id == "5c0ffee0-1111-4222-8333-944445555666"
    assert session.cwd == "/home/dev/shop"  # from the CLI's <session_context>
    # The hooks' context (ours, at session start and per prompt) is not the task; the CLI's context is not a prompt.
    assert session.task == "Fix the failing cart tests in tests/test_cart.py"
    assert session.prompts == [session.task]
    assert (session.started, session.ended) == ("2026-11-20T10:00:00.000Z", "2026-11-20T10:00:08.000Z")
    main = session.threads["main"]
    # Each message was written twice (before and after its calls ran): each call is counted once.
    assert [c.name for c in main] == ["Bash", "Edit", "Bash"]
    failed, edit, passed = main
    assert failed.command == "python -m pytest -q tests/test_cart.py"
    assert (failed.ok, failed.exit_code, failed.interrupted) == (False, 2, False)
    assert "ModuleNotFoundError: No module named 'shop.pricing'" in failed.error
    assert "untrusted_context" not in failed.error and "Process Group PGID" not in failed.error
    assert not failed.error.startswith("Output:")
    assert failed.said == "I'll run the cart tests first."
    assert edit.modifies == ("/home/dev/shop/shop/cart.py",) and edit.ok is True
    assert edit.excerpt == "from shop.prices import total"
    assert edit.said == "The module is named prices, not pricing."
    assert (passed.ok, passed.exit_code, passed.error) == (True, None, "")
    assert passed.said.startswith("Verifying")  # a message with no text: its thought says what it was doing
    assert session.ended_well  # the last call passed and the model answered
    assert session.skipped_lines == 0 and not session.warnings


def test_a_subagents_calls_are_a_thread_of_their_own() -> None:
    session = read_transcript(MAIN)
    sub = FIXTURES / "5c0ffee0-1111-4222-8333-944445555666" / "sub-7777.jsonl"
    assert session.files_read == [MAIN, sub]
    (glob,) = session.threads["agent:sub-7777"]
    assert glob.name == "Glob" and glob.paths == ("shop",) and glob.ok is True
    assert session.calls[-1] is glob  # main thread first
    alone = read_gemini(MAIN, include_subagents=False)
    assert set(alone.threads) == {"main"} and alone.files_read == [MAIN]


def test_a_truncated_last_line_is_reported_and_the_rest_kept() -> None:
    session = read_transcript(TRUNCATED)
    assert session.skipped_lines == 1
    assert any("truncated last line" in w for w in session.warnings)
    assert session.task == "Fix the failing cart tests in tests/test_cart.py"
    (running,) = session.calls  # recorded while it ran; its result never was
    assert running.command == "python -m pytest -q tests/test_cart.py"
    assert running.ok is None and running.error == ""
    assert not session.ended_well


def test_malformed_lines_are_skipped_and_said() -> None:
    session = read_transcript(MALFORMED)
    assert session.skipped_lines == 2
    assert any("not JSON" in w for w in session.warnings)
    assert any("not an object" in w for w in session.warnings)
    clean = read_gemini(MAIN, include_subagents=False)
    assert [(c.command, c.ok, c.exit_code) for c in session.calls] == [
        (c.command, c.ok, c.exit_code) for c in clean.calls
    ]
    assert session.task == clean.task and session.ended_well


def test_a_rewind_moves_the_dropped_turns_to_a_branch() -> None:
    session = read_transcript(REWIND)
    assert session.branches == 2
    (dropped,) = session.threads["branch-1"]
    assert dropped.command == "make build" and dropped.exit_code == 2
    # The rewound prompt is gone; "Please continue." is the CLI's, not the user's.
    assert session.prompts == ["Clean the build directory, then build the docs"]
    main = session.threads["main"]
    # The restated history after a compression repeats r-g2: its calls are still counted once.
    assert [c.command for c in main] == ["rm -rf build", "make docs"]
    assert all(c.interrupted and c.ok is False for c in main)  # denied by policy; a tool not on offer
    assert session.summaries == ["<state_snapshot>\n<overall_goal>Build the docs</overall_goal>\n</state_snapshot>"]
    assert not session.ended_well


def test_the_legacy_document_is_read_a_message_at_a_time() -> None:
    session = read_transcript(LEGACY)
    assert session.id == "legacy-0038"
    assert session.task == "Add a `slugify` helper in shop/text.py and make the lint pass"  # content as a string
    assert [c.name for c in session.calls] == ["Write", "Bash", "Edit", "Read", "Bash"]
    write, lint, edit, read, relint = session.calls
    assert write.modifies == ("/home/dev/shop/shop/text.py",) and "def slugify(s)" in write.excerpt
    # The older shell result: Command, Directory, Stdout, Stderr, Error, Exit Code, Signal, ... sections.
    assert (lint.ok, lint.exit_code) == (False, 1)
    assert lint.error == "shop/text.py:3:5: ANN001 Missing type annotation for function argument `s`\nFound 1 error."
    assert edit.ok is True and edit.excerpt == "def slugify(s: str) -> str:"
    assert read.paths == ("/home/dev/shop/shop/missing.py",) and read.ok is False  # `absolute_path`, as 0.3x named it
    assert "File not found" in read.error
    assert (relint.ok, relint.exit_code) == (True, 0)
    assert session.ended_well and session.skipped_lines == 0


def test_a_truncated_legacy_document_keeps_the_messages_before_the_cut() -> None:
    session = read_transcript(LEGACY_CUT)
    assert session.skipped_lines == 1
    assert any("ends early" in w for w in session.warnings)
    assert [c.name for c in session.calls] == ["Write", "Bash", "Edit", "Read"]
    assert not session.ended_well


def test_the_document_reader_holds_only_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a 64-character buffer step every value spans many reads: the result is the same."""
    whole = read_transcript(LEGACY)
    monkeypatch.setattr(gemini_module, "_CHUNK", 64)
    pieces = read_transcript(LEGACY)
    assert [(c.name, c.command, c.ok, c.error) for c in pieces.calls] == [
        (c.name, c.command, c.ok, c.error) for c in whole.calls
    ]
    assert pieces.task == whole.task and pieces.ended_well == whole.ended_well


def test_a_one_line_document_reads_like_the_pretty_one(tmp_path: Path) -> None:
    compact = tmp_path / "session-2026-03-02T09-00-compact0.json"
    compact.write_text(json.dumps(json.loads(LEGACY.read_text())))
    assert detect_format(compact) == "gemini"
    one, pretty = read_transcript(compact), read_transcript(LEGACY)
    assert [(c.name, c.ok, c.exit_code) for c in one.calls] == [(c.name, c.ok, c.exit_code) for c in pretty.calls]
    assert one.task == pretty.task and one.id == pretty.id


def test_a_document_nested_too_deeply_is_refused_in_a_line(tmp_path: Path) -> None:
    path = tmp_path / "session-deep.json"
    path.write_text('{\n  "sessionId": "deep",\n  "messages": [' + "[" * 100_000 + "]" * 100_000 + "]\n}\n")
    session = read_transcript(path)
    assert session.id == "deep" and session.calls == [] and session.skipped_lines == 1


def test_a_copy_read_from_a_pipe_reads_the_same(tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere.jsonl"
    shutil.copy(MAIN, copy)
    (session,) = read_sessions(copy)
    assert session.id == "5c0ffee0-1111-4222-8333-944445555666"
    assert set(session.threads) == {"main"}  # no subagent directory beside the copy


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<untrusted_context>\nOutput: boom\nExit Code: 1\nProcess Group PGID: 7\n</untrusted_context>",
         ("boom", 1, "")),
        ("Output: (empty)\nExit Code: 3\nProcess Group PGID: 7", ("", 3, "")),
        ("Output: ok\nProcess Group PGID: 7", ("ok", None, "")),
        # A line the program printed is output; only the trailing sections say how it ended.
        ("Output: Exit Code: 9\ndone\nProcess Group PGID: 7", ("Exit Code: 9\ndone", None, "")),
        ("Output: partial\nSignal: SIGTERM\nProcess Group PGID: 7", ("partial", None, "SIGTERM")),
        ("Command: make\nDirectory: (root)\nStdout: (empty)\nStderr: make: *** No targets.  Stop.\nError: (none)\n"
         "Exit Code: 2\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 9",
         ("make: *** No targets.  Stop.", 2, "")),
    ],
)  # fmt: skip
def test_shell_results_are_split_into_output_and_ending(raw: str, expected: tuple[str, int | None, str]) -> None:
    assert _shell_result(raw) == expected


def test_learning_from_a_gemini_session_commits_its_failure(project: Path, run: Cli, tmp_path: Path) -> None:
    """The session's paths are made relative to its own workspace: the transcript is moved into the project."""
    text = MAIN.read_text().replace("/home/dev/shop", str(project))
    path = tmp_path / MAIN.name
    path.write_text(text)
    result = run("learn", str(path))
    assert result.exit_code == 0, result.output + result.stderr
    learned = "".join(p.read_text() for p in (project / ".expertise").glob("*.yaml"))
    assert "No module named 'shop.pricing'" in learned
    assert "shop/cart.py" in learned


# -- any records at all: the reader never raises ------------------------------------------------------

KEYS = [
    "$set", "$rewindTo", "id", "type", "content", "text", "toolCalls", "name", "args", "result", "status",
    "functionResponse", "response", "output", "error", "command", "file_path", "messages", "sessionId",
    "projectHash", "timestamp", "thoughts", "directories",
]  # fmt: skip
leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=20),
    st.sampled_from(["user", "gemini", "info", "success", "error", "cancelled", "run_shell_command", "replace",
                     "m1", "m2", "c1", "Output: x\nExit Code: 2", "<hook_context>x</hook_context>fix it"]),
)  # fmt: skip
values = st.recursive(
    leaf,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.sampled_from(KEYS), kids, max_size=6)),
    max_leaves=25,
)
rows = st.lists(st.dictionaries(st.sampled_from(KEYS), values, max_size=8), max_size=12)


@settings(
    max_examples=int(os.environ.get("EXPERTISE_PROPERTY_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(records=rows, document=st.booleans(), cut=st.integers(0, 400))
def test_any_records_read_without_raising(records: list[dict[str, Any]], document: bool, cut: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "session-x.json"
        if document:  # the legacy form, possibly cut short
            text = json.dumps({"sessionId": "s", "projectHash": "p", "messages": records}, indent=2)
            path.write_text(text[: max(len(text) - cut, 1)])
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in records))
        session = read_gemini(path)
    assert session.format == "gemini" and session.id
    assert extract(session, "/p").failures_seen >= 0


@pytest.mark.parametrize("kind", [[], {}, ["user"]])
def test_a_record_whose_type_is_not_text_is_read_without_raising(tmp_path: Path, kind: Any) -> None:
    path = tmp_path / "session-x.json"  # a list as the type once raised TypeError (unhashable)
    path.write_text(json.dumps({"type": kind, "id": "m1"}) + "\n" + json.dumps({"type": "user", "id": "m2"}) + "\n")
    session = read_gemini(path)
    assert session.format == "gemini" and session.records == 2
