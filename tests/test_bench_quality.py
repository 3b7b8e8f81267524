"""The quality bench's measures on small synthetic data, and its replay through the installed hooks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import CWD, ClaudeSession

from expertise_kit.learning.transcripts import Session, ToolCall

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_quality  # noqa: E402
from quality_metrics import (  # noqa: E402
    Ratio,
    edited_files,
    failing_programs,
    harness_noise,
    ids_in_two_domains,
    mask,
    names_action,
    names_file,
    names_program,
    near_duplicates,
    paths_in_two_domains,
    prompt_problem,
    recall,
    says_nothing,
    store_figures,
)


def _session(*calls: ToolCall, cwd: str = CWD) -> Session:
    return Session(id="s1", format="claude-code", source=Path("s1.jsonl"), cwd=cwd, calls=list(calls))


def _shell(command: str, ok: bool | None, **more: Any) -> ToolCall:
    if ok is False:
        more.setdefault("error", f"error: {command.split()[0]} broke in a way worth learning")
    return ToolCall(call_id=command, name="Bash", command=command, ok=ok, **more)


# -- what a session did ------------------------------------------------------------------------------


def test_failing_programs_are_shell_programs_that_failed_for_real() -> None:
    session = _session(
        _shell("cd web && npm run test -- --watch=false", False),
        _shell("git push origin feat-x", False),
        _shell("pytest -q", True),  # passed
        _shell("make deploy", False, interrupted=True),  # the user stopped it
        _shell("cargo build", None),  # no result recorded
        ToolCall(call_id="r", name="Read", paths=("/x",), ok=False),  # a tool-protocol error, no program
        _shell("'# Default owners\\n* @someone\\n'", False),  # a heredoc body taken for a command
        _shell("rg -n total shop/", False, error="exit code 1"),  # a search that found nothing: no lesson
        _shell("cat shop/missing.py", False, error="cat: shop/missing.py: No such file or directory"),
    )
    assert failing_programs(session) == {"npm test", "git push"}


def test_edited_files_are_successful_writes_inside_the_session_cwd() -> None:
    session = _session(
        ToolCall(call_id="1", name="Edit", modifies=(f"{CWD}/shop/pricing.py",), ok=True),
        ToolCall(call_id="2", name="Write", modifies=("./docs/notes.md",), ok=True),
        ToolCall(call_id="3", name="Edit", modifies=(f"{CWD}/shop/failed.py",), ok=False),
        ToolCall(call_id="4", name="Write", modifies=("/tmp/scratch.py", "../elsewhere.py"), ok=True),
        ToolCall(call_id="5", name="Write", modifies=(f"{CWD}-other/x.py",), ok=True),  # a sibling, not inside
    )
    assert edited_files(session) == {"shop/pricing.py", "docs/notes.md"}


# -- does text name it -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "program", "named"),
    [
        ('- "`cd web && npm run test`" failed with "2 failed"', "npm test", True),
        ("git push on a new branch needs --set-upstream", "git push", True),
        ("git  push\tneeds an upstream", "git push", True),
        ("- `npm install` failed", "npm test", False),
        ("see cat_vent/main.c and cat-vent/README", "cat", False),
        ("`rg -n foo src`", "rg", True),
        ("merging is fine", "rg", False),
        ("`python3 -m pytest -q` failed", "python3 -m pytest", True),
    ],
)
def test_names_program(text: str, program: str, named: bool) -> None:
    assert names_program(text, program) is named


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("- `src/a.py`", True),
        ("edit src/a.py.", True),
        ("edit src/a.py, then", True),
        ("- `src/a.pyc`", False),
        ("- `lib/src/a.py`", False),
        ("- `src/a.py/x`", False),
        ("- `src/a.py.bak`", False),
    ],
)
def test_names_file(text: str, named: bool) -> None:
    assert names_file(text, "src/a.py") is named


def test_recall_counts_each_wanted_item_once() -> None:
    found = recall("`git push` and `npm test`", ["git push", "npm test", "go test", "git push"], names_program)
    assert (found.hits, found.total) == (2, 3)
    assert str(found) == "0.67 (2/3)"


def test_ratio_adds_counts_before_dividing_and_shows_nothing_measured_as_a_dash() -> None:
    total = Ratio()
    assert total.share is None and str(total) == "-"
    total.add(Ratio(1, 1))
    total.add(Ratio(0, 3))
    assert total.share == 0.25


# -- is the session's task a real prompt -------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "problem"),
    [
        ("Fix the failing checkout test in tests/test_checkout.py", None),
        ("/usr/bin/python3 crashes on start, find out why", None),
        ("Work on issue PROJ-142. Run `bd show PROJ-142` to see the details", None),
        (None, "no prompt"),
        ("  \n", "no prompt"),
        ("<system-reminder>Todo list is empty</system-reminder>", "system reminder"),
        ("<command-name>/model</command-name>", "command"),
        ("/compact", "command"),
        ("/model opus", "command"),
        ("/speckit.clarify", "command"),
        ("/fix the login redirect loop", None),
        ("Caveat: The messages below were generated by the user while running local commands.", "command"),
        ("<task-notification>agent finished</task-notification>", "task notification"),
        ("[Request interrupted by user for tool use]", "interrupt"),
        ("This session is being continued from a previous conversation that ran out of context.", "compaction summary"),
        ("<environment_context>\n<cwd>/x</cwd>\n</environment_context>", "instructions"),
        ("# AGENTS.md instructions for /home/dev/shop\n\n<INSTRUCTIONS>", "instructions"),
        # A prompt template the user invoked (a persona or workflow loader, expanded inline by the CLI) is
        # their request, as `/fix-issue 12` is: harness-injected instructions are AGENTS.md and the like.
        ('You must embody this persona.\n\n<agent-activation CRITICAL="TRUE">\n1. LOAD', None),
    ],
)
def test_prompt_problem(prompt: str | None, problem: str | None) -> None:
    assert prompt_problem(prompt) == problem


# -- what a learned store holds ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        "<tool_use_error>Sibling tool call errored</tool_use_error>",
        "File has not been read yet. Read it first before writing to it.",
        "File content (30000 tokens) exceeds maximum allowed tokens (25000).",
        "String to replace not found in file.",
        "File does not exist. Note: your current working directory is /x",
        "InputValidationError: Edit failed due to the following issue",
        "EISDIR: illegal operation on a directory, read",
        "The user doesn't want to proceed with this tool use. The tool use was rejected",
        "[Request interrupted by user for tool use]",
        "User rejected tool use",
    ],
)
def test_harness_noise_is_recognised(error: str) -> None:
    assert harness_noise(error) is not None


@pytest.mark.parametrize(
    "error",
    ["ModuleNotFoundError: No module named 'orders'", "fatal: The current branch feat-x has no upstream branch."],
)
def test_project_errors_are_not_harness_noise(error: str) -> None:
    assert harness_noise(error) is None


@pytest.mark.parametrize(
    ("error", "nothing"),
    [
        ("exit code 1: Exit code: 1", True),
        ("Exit code 2", True),
        ("Bash failed", True),
        ("error", True),
        ("", True),
        ("fatal: Needed a single revision", False),
        ("E   AssertionError: assert 1999 == 2000", False),
        ("exit code 1: rg: docs: No such file or directory", False),
    ],
)
def test_says_nothing(error: str, nothing: bool) -> None:
    assert says_nothing(error) is nothing


@pytest.mark.parametrize(
    ("solution", "action"),
    [
        (None, False),
        ("", False),
        ("edited shop/pricing.py", False),
        ("read shop/pricing.py first; edited shop/pricing.py, shop/a.py, shop/b.py and 2 more", False),
        ("ran `pip install orders`", True),
        ("then ran `git push --set-upstream origin feat-x` instead", True),
        ("added --set-upstream on the first push of a branch", True),
        ("edited shop/pricing.py: round( -> Decimal(", True),
        ("+ from decimal import Decimal", True),
        ("Installed the missing dependency with uv", True),
    ],
)
def test_names_action(solution: str | None, action: bool) -> None:
    assert names_action(solution) is action


def test_mask_folds_numbers_paths_hashes_durations_and_branches() -> None:
    one = "fatal: branch feat-142 at 3f9a2c1d in /tmp/pytest-7/repo failed after 0.52s with 3 errors"
    two = "fatal: branch fix/login at 9be01f7a in /tmp/pytest-81/repo failed after 12s with 14 errors"
    assert mask(one) == mask(two)
    assert mask("fatal: not a git repository") != mask("fatal: bad revision")


def _failure(issue: str, error: str, solution: str = "", section: str = "learned_from_failures") -> dict[str, Any]:
    return {"id": issue[:8], "section": section, "issue": issue, "error": error, "solution": solution}


def test_near_duplicates_are_the_same_program_and_masked_error() -> None:
    records = [
        _failure("`git push origin feat-1`", "fatal: The current branch feat-1 has no upstream branch."),
        _failure("`git push`", "fatal: The current branch fix/two has no upstream branch."),
        _failure("`git pull`", "fatal: The current branch feat-1 has no upstream branch."),  # another program
        {"id": "f1", "section": "core_files", "path": "a/b.py"},
        {"id": "f2", "section": "core_files", "path": "a/c.py"},  # file entries are no lessons here
        {"id": "p1", "section": "patterns", "text": "Wait 30s for the device to reboot"},
        {"id": "p2", "section": "patterns", "text": "Wait 45s for the device to reboot"},
    ]
    assert near_duplicates(records) == 2


def test_two_domains() -> None:
    entries = [
        ("general", {"id": "aa", "section": "core_files", "path": "src/app.py"}),
        ("api", {"id": "aa", "section": "core_files", "path": "src/app.py"}),
        ("api", {"id": "bb", "section": "core_files", "path": "src/api.py"}),
        ("general", _failure("`git push`", "fatal: no upstream") | {"id": "cc"}),
        ("database", _failure("`git push`", "fatal: no upstream") | {"id": "cc"}),
        ("database", _failure("`alembic upgrade`", "no such table") | {"id": "dd"}),
    ]
    assert paths_in_two_domains(entries) == ["src/app.py"]
    assert ids_in_two_domains(entries) == ["cc"]


def test_store_figures() -> None:
    entries = [
        ("general", _failure("`git push`", "fatal: no upstream branch", "ran `git push -u origin HEAD`")),
        ("general", _failure("Edit shop/a.py", "String to replace not found in file.", "edited shop/a.py")),
        ("testing", _failure("`pytest -q`", "exit code 1: Exit code 1")),
        ("general", {"id": "f1", "section": "core_files", "path": "shop/a.py"}),
    ]
    figures = store_figures(entries)
    assert (figures.entries, figures.failures, figures.files) == (4, 3, 1)
    assert [n.split(":")[0] for n in figures.harness_noise] == ["edit did not match"]
    assert figures.says_nothing == ["exit code 1: Exit code 1"]
    assert (figures.with_action.hits, figures.with_action.total) == (1, 3)
    assert figures.paths_in_two_domains == [] and figures.ids_in_two_domains == []
    assert (figures.near_duplicates.hits, figures.near_duplicates.total) == (0, 3)


# -- the replay --------------------------------------------------------------------------------------


def test_hook_output_is_read_in_either_shape() -> None:
    nested = '{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "## A"}}\n'
    flat = '{"additional_context": "## B"}\n'
    assert bench_quality._context_of(nested) == "## A"
    assert bench_quality._context_of(flat + "\n") == "## B"
    assert bench_quality._context_of("") == ""


def test_rollouts_are_ordered_by_the_time_in_their_name(tmp_path: Path) -> None:
    session = Session(id="x", format="codex", source=tmp_path, started="2026-01-01T00:00:00Z")
    named = tmp_path / "rollout-2026-01-30T10-40-15-019c0e46.jsonl"
    assert bench_quality._order_key(named, session) == "2026-01-30T10:40:15"
    assert bench_quality._order_key(tmp_path / "abc.jsonl", session) == "2026-01-01T00:00:00Z"


def _push_session(session_id: str, minute: int, prompt: str) -> ClaudeSession:
    s = ClaudeSession(session_id)
    s.clock = minute * 60
    s.prompt(prompt)
    s.bash("git push origin feat-x", "fatal: The current branch feat-x has no upstream branch.", exit_code=128)
    s.bash("git push --set-upstream origin feat-x", "branch 'feat-x' set up to track 'origin/feat-x'.")
    s.tool("Read", {"file_path": f"{CWD}/shop/pricing.py"}, "def price(x): return round(x)")
    s.tool("Edit", {"file_path": f"{CWD}/shop/pricing.py", "old_string": "round(", "new_string": "Decimal("}, "ok")
    s.say("Pushed.")
    return s


def test_a_series_is_replayed_in_time_order_and_scored_before_each_session_is_learned(tmp_path: Path) -> None:
    series = tmp_path / "series"
    (series / "sub" / "subagents").mkdir(parents=True)
    # Named so that file-name order is the reverse of time order.
    _push_session("5e55104e-0000-4000-8000-000000000002", 40, "Push the pricing fix").write(series / "a.jsonl")
    _push_session("5e55104e-0000-4000-8000-000000000001", 5, "Fix the pricing rounding").write(series / "b.jsonl")
    (series / "sub" / "subagents" / "agent-1.jsonl").write_text("")  # read with its session, not replayed
    (series / ".aider.chat.history.md").write_text("# aider chat started at 2026-01-01 10:00:00\n")

    result = bench_quality.replay_series("synthetic", series)

    assert [s.session_id[-1] for s in result.sessions] == ["1", "2"]
    assert result.agent == "claude-code"
    assert any("aider" in note for note in result.notes)
    first, second = result.sessions
    assert first.injected == {"start": "", "prompt1": ""}  # an empty store injects nothing
    assert (first.fail_recall.total, first.file_recall.total) == (0, 0)
    # What session 2 repeats of session 1 is what it is scored on, whatever the hooks then showed.
    assert (second.fail_recall.total, second.file_recall.total) == (1, 1)
    assert (first.task_problem, second.task_problem) == (None, None)  # the reader picks real prompts
    assert str(result.real_tasks()) == "1.00 (2/2)"
    assert result.store.entries > 0 and first.learned.startswith("+")
    assert result.root is not None and not result.root.exists()  # the temp repo is cleaned up
    shown: list[str] = []
    bench_quality.print_block(result, shown.append)
    assert shown[0].startswith("== synthetic (claude-code, 2 sessions") and any("real prompt" in s for s in shown)
    figures = json.loads(json.dumps(bench_quality.as_json(result)))
    assert figures["fail_recall"]["total"] == 1 and figures["real_tasks"] == {"hits": 2, "total": 2, "share": 1.0}
    assert [s["chars"] for s in figures["sessions"]][0] == {"start": 0, "prompt1": 0}


def test_inject_runs_the_installed_hook_as_the_agent_would() -> None:
    replay = bench_quality.Replay("codex")
    try:
        assert replay.hook_commands("SessionStart") and replay.hook_commands("UserPromptSubmit")
        replay._cli("add", "general", "patterns", "The first git push of a branch needs --set-upstream")
        session = Session(id="abc", format="codex", source=Path("x.jsonl"))
        start = replay.inject(session)
        assert start.notes == []
        assert start.text.startswith("## Project expertise") and names_program(start.text, "git push")
        # Another session, so nothing counts as already shown in this one.
        prompted = replay.inject(Session(id="def", format="codex", source=Path("y.jsonl")), "Push the branch")
        assert prompted.notes == []
        assert prompted.text.count("needs --set-upstream") == 1
    finally:
        replay.close()
    assert not replay.root.exists()
