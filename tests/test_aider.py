"""The Aider chat-history reader: sessions, prompts, edits and failures, detection, and bad input."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from pathlib import Path

import pytest
from builders import write_aider
from conftest import Cli, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expertise_kit.errors import UserError
from expertise_kit.learning.transcripts import detect_format, read_sessions, read_transcript
from expertise_kit.learning.transcripts.aider import read_aider

HISTORY = ".aider.chat.history.md"


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return write_aider(tmp_path / HISTORY)


def test_each_header_starts_a_session_with_its_prompts_edits_and_commands(history: Path) -> None:
    first, second = read_sessions(history)
    assert (first.format, first.started, second.started) == ("aider", "2026-11-20T09:15:02", "2026-11-21T14:00:59")
    # Consecutive `####` lines are one message; /add, answers to aider's questions and !commands are not asked work.
    assert first.prompts == [
        "Fix the rounding in the checkout total\n\nit should use Decimal",
        "What's wrong? Fix that",
    ]
    assert [(c.name, c.command or c.modifies, c.ok) for c in first.calls] == [
        ("Edit", ("shop/checkout.py",), True),
        ("Bash", "git commit -m 'fix: sum before rounding in checkout total'", True),
        ("Bash", "python -m pytest tests/test_checkout.py -q", False),  # output added unasked: it exited non-zero
        ("Edit", ("shop/pricing.py",), True),
        ("Bash", "git commit -m 'fix: import Decimal in pricing'", True),
        ("Bash", "python -m pytest tests/test_checkout.py -q", True),  # nothing added: it passed
        ("Bash", "git status", True),  # output added because the user said yes, not because it failed
    ]
    assert first.ended_well
    assert second.prompts == ["where is the discount applied?", "Apply the discount before tax"]  # /ask is a mode


def test_lint_errors_and_unmatched_search_blocks_are_failures(history: Path) -> None:
    _, second = read_sessions(history)
    edit, lint, unmatched = second.calls
    assert edit.modifies == ("shop/discounts.py",) and edit.ok
    assert lint.command.startswith("/usr/bin/python3 -m flake8") and lint.ok is False
    assert "F821 undefined name 'tax'" in lint.error and "## Running" not in lint.error
    assert unmatched.name == "Edit" and unmatched.modifies == ("shop/tax.py",) and unmatched.ok is False
    assert unmatched.error.startswith("SearchReplaceNoExactMatch")
    assert not second.ended_well


def test_session_ids_are_stable_and_tell_files_apart(history: Path, tmp_path: Path) -> None:
    ids = [s.id for s in read_sessions(history)]
    assert ids == [s.id for s in read_sessions(history)]  # learning again finds the sessions it learned
    assert len(set(ids)) == 2 and all(i.startswith("aider-") and i.endswith(("T091502", "T140059")) for i in ids)
    other = tmp_path / "other" / HISTORY
    other.parent.mkdir()
    other.write_bytes(history.read_bytes())
    assert not set(ids) & {s.id for s in read_sessions(other)}  # another project's history, same times


def test_sessions_started_in_the_same_second_are_told_apart(tmp_path: Path) -> None:
    path = tmp_path / HISTORY
    header = "# aider chat started at 2026-11-20 09:15:02\n\n"
    edit = "> Applied edit to shop/cart.py  \n\n"
    path.write_text("".join(f"{header}#### add a {thing}\n\n{edit}" for thing in ("cart", "till", "shelf")))
    ids = [s.id for s in read_sessions(path)]
    assert len(set(ids)) == 3 and ids[0].endswith("T091502") and ids[1:] == [ids[0] + "-2", ids[0] + "-3"]
    with path.open("a") as grown:
        grown.write("\n# aider chat started at 2026-11-20 09:16:40\n\n#### and a till\n")
    assert [s.id for s in read_sessions(path)][:3] == ids  # the history grew: the same sessions, the same ids
    calls = [c.call_id for s in read_sessions(path) for c in s.calls]
    assert len(calls) == 3 and len(set(calls)) == 3


def test_detected_by_name_or_by_its_first_line(history: Path, tmp_path: Path) -> None:
    assert detect_format(history) == "aider"
    renamed = tmp_path / "chat.md"
    renamed.write_bytes(history.read_bytes())
    assert detect_format(renamed) == "aider"
    assert len(read_sessions(renamed, "aider")) == 2
    plain = tmp_path / "notes.md"
    plain.write_text("# notes\n\n#### not aider\n")
    assert detect_format(plain) == "unknown"


def test_read_transcript_wants_one_session(history: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="holds 2 sessions"):
        read_transcript(history)
    single = tmp_path / "one" / HISTORY
    single.parent.mkdir()
    text = history.read_text()
    single.write_text(text[: text.index("\n# aider chat started at 2026-11-21")])
    assert read_transcript(single).prompts[0].startswith("Fix the rounding")


def test_learn_reads_every_session_of_the_history(project: Path, run: Cli, history: Path) -> None:
    result = run("learn", str(history), "--json", "--dry-run")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [(s["format"], s["tool_calls"]) for s in data["sessions"]] == [("aider", 7), ("aider", 3)]
    assert data["sessions"][0]["task"].startswith("Fix the rounding")


def test_a_cut_off_or_mangled_history_still_reads(tmp_path: Path, history: Path) -> None:
    data = history.read_bytes()
    cut = tmp_path / "cut" / HISTORY
    cut.parent.mkdir()
    cut.write_bytes(data[data.index(b"#### What's wrong") : -40] + b"\xff\xfe half a line")
    headless, last = read_sessions(cut)  # the first header was cut off: a session with no start time
    assert headless.started == "" and headless.prompts[0] == "What's wrong? Fix that"
    assert headless.calls[0].modifies == ("shop/pricing.py",)
    assert last.started == "2026-11-21T14:00:59" and last.id != headless.id


_MODEL_MARKDOWN = """\
# aider chat started at 2025-05-01 10:00:00

> Main model: gpt-4o with diff edit format|

#### review db.py and add a contributing section to README.md|

#### Always use parameterized queries

README.md
```markdown
<<<<<<< SEARCH
=======
#### Never push directly to main
> Running the integration tests needs Docker
>>>>>>> REPLACE
```

```python
```typescript
#### keep the service layer thin|

> Applied edit to README.md|
""".replace("|\n", "  \n")  # aider ends its own lines with a Markdown line break


def test_the_models_headings_and_code_blocks_are_neither_prompts_nor_notices(tmp_path: Path) -> None:
    history = tmp_path / ".aider.chat.history.md"
    history.write_text(_MODEL_MARKDOWN)
    [session] = read_aider(history)
    # the model's `####` heading (no line break: aider ends its lines with two spaces), the `####` and `>`
    # lines of its edit block; but a block the model left open ends at the user's next line
    assert session.prompts == [
        "review db.py and add a contributing section to README.md", "keep the service layer thin"
    ]  # fmt: skip
    assert [(c.name, c.paths or c.command) for c in session.calls] == [("Edit", ("README.md",))]


def test_a_block_the_model_left_open_ends_at_a_message_ending_in_three_spaces(tmp_path: Path) -> None:
    history = tmp_path / ".aider.chat.history.md"
    history.write_text("# aider chat started at 2025-05-01 10:00:00\n\n#### explain the retry loop  \n\n```python\n"
                       "for i in range(3):\n\n#### now add a test for the retry loop   \n\nSure.\n\n"
                       "> Applied edit to tests/test_retry.py  \n")  # fmt: skip
    [session] = read_aider(history)
    assert session.prompts == ["explain the retry loop", "now add a test for the retry loop"]
    assert [c.paths for c in session.calls] == [("tests/test_retry.py",)]


def test_an_edit_of_a_path_no_system_takes_is_not_read(tmp_path: Path) -> None:
    history = tmp_path / ".aider.chat.history.md"
    long = "a/" * 3000  # routing such a path once took seconds per megabyte
    history.write_text(f"# aider chat started at 2025-05-01 10:00:00\n\n#### fix it  \n\n> Applied edit to {long}x  \n"
                       "> Applied edit to src/app.py  \n")  # fmt: skip
    [session] = read_aider(history)
    assert [c.paths for c in session.calls] == [("src/app.py",)]


def test_an_enormous_line_is_skipped_in_constant_memory(
    tmp_path: Path, history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expertise_kit.learning.transcripts import lines

    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 1 << 20)  # 1 MiB stands in for the real 32 MiB limit
    with open(history, "a") as handle:
        handle.write("#### " + "y" * (24 << 20) + "\n")  # 24 MiB pasted on one line
        handle.write("#### and then a question  \n")
    tracemalloc.start()
    sessions = read_sessions(history)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sessions[0].skipped_lines == 1 and "a line over 1 MiB, skipped" in sessions[0].warnings[0]
    assert sessions[1].prompts[-1] == "and then a question"
    assert peak < 8 << 20


def test_a_binary_file_named_like_a_history_is_one_line_of_error(project: Path, run: Cli, tmp_path: Path) -> None:
    path = tmp_path / HISTORY
    path.write_bytes(b"# aider chat started at 2026-11-20 09:15:02\n\x00\x01\x02" * 100)
    before = snapshot(project)
    result = run("learn", str(path))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"expertise: error: {path}: is a binary file, not a transcript; pass the agent's session file (.jsonl, "
        ".json, or aider's .aider.chat.history.md)"
    ]
    assert snapshot(project) == before


def test_a_history_down_a_pipe_is_read_whole(project: Path, run: Cli, tmp_path: Path, history: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    content = history.read_bytes()

    def write() -> None:
        with open(fifo, "wb") as handle:
            handle.write(content)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    result = run("learn", str(fifo), "--json", "--dry-run")
    writer.join(10)
    assert result.exit_code == 0, result.output
    assert [s["tool_calls"] for s in json.loads(result.stdout)["sessions"]] == [7, 3]


_PIECES = st.sampled_from(
    [
        "# aider chat started at 2026-11-20 09:15:02",
        "# aider chat started at",
        "#### ",
        "####",
        "#### /test ",
        "#### /run",
        "#### !",
        "#### /ask",
        "> Applied edit to ",
        "> Running ",
        "> Commit abcdef1 ",
        "> Added 3 lines of output to the chat.",
        "> # Fix any errors below, if possible.",
        "## Running: ",
        "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in ",
        ">",
        "",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_PIECES, st.text(max_size=30)), max_size=40))
def test_any_lines_read_without_raising(rows: list[tuple[str, str]], tmp_path: Path) -> None:
    path = tmp_path / "h.md"
    path.write_text("\n".join(prefix + text for prefix, text in rows), encoding="utf-8", errors="surrogatepass")
    sessions = read_aider(path)
    assert sessions and all(s.format == "aider" for s in sessions)
    assert all(call.ok is not None for s in sessions for call in s.calls)
