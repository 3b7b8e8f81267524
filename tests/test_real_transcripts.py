"""Every real transcript in ../shared, read whole: counts against an independent count, no fragments, the task.

The independent counters below read the raw records with nothing of ours: tool_use blocks and
function_call items, the files that Write/Edit/MultiEdit/NotebookEdit and apply_patch name, and
is_error flags and non-zero exit codes. Two deliberate choices, the same on both sides:
- an edited file counts when its call succeeded: an edit the harness refused changed nothing;
- a call with no result (the user interrupted it, or the transcript ends first) is a call, but neither a
  failure nor an edit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import TRANSCRIPTS

from expertise_kit.learning.transcripts import Session, read_sessions, read_transcript
from expertise_kit.learning.transcripts.prompts import COMPACTION_PREFIX

ALL = sorted([*TRANSCRIPTS.rglob("*.jsonl"), *TRANSCRIPTS.rglob("*.aider.chat.history.md")])
needs_fixtures = pytest.mark.skipif(not ALL, reason=f"real transcripts not found at {TRANSCRIPTS} (../shared)")

EDIT_TARGET = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Move to: ")
Counts = tuple[int, set[str], int]  # tool calls, edited files, failures


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _claude_counts(files: list[Path]) -> Counts:
    """Tool uses with their results, and an API error saying the request was too large after a prompt of
    20,000 characters or more (a pasted file): a failed call of `claude`."""
    uses: dict[str, dict[str, Any]] = {}
    results: dict[str, dict[str, Any]] = {}
    too_large = 0
    for path in files:
        prompt = 0
        for record in _records(path):
            message = record.get("message")
            typed = isinstance(message, dict) and isinstance(message.get("content"), str)
            if record.get("type") == "user" and typed and not record.get("isCompactSummary"):
                prompt = len(message["content"])
            if record.get("isApiErrorMessage") and "too long" in json.dumps(record) and prompt >= 20_000:
                too_large += 1
                continue
            if not isinstance(message, dict) or not isinstance(message.get("content"), list):
                continue
            for block in message["content"]:
                if record["type"] == "assistant" and block.get("type") == "tool_use":
                    uses[block["id"]] = block
                elif record["type"] == "user" and block.get("type") == "tool_result":
                    results[block["tool_use_id"]] = block
    edited: set[str] = set()
    failures = 0
    for tool_id, use in uses.items():
        result = results.get(tool_id)
        if result is None:
            continue
        if result.get("is_error"):
            failures += 1
        elif use["name"] in EDIT_TARGET:
            edited.add(use["input"][EDIT_TARGET[use["name"]]])
    return len(uses) + too_large, edited, failures + too_large


def _codex_failed(output: str) -> bool:
    if output.startswith("{"):
        exit_code = (json.loads(output).get("metadata") or {}).get("exit_code")
        return exit_code not in (None, 0)
    for line in output.splitlines()[:3]:
        if line.startswith(("Exit code: ", "Process exited with code ")):
            return int(line.rsplit(" ", 1)[1]) != 0
    return output.startswith(("failed in sandbox", "apply_patch verification failed"))


def _codex_patch(item: dict[str, Any]) -> str:
    if item["type"] == "custom_tool_call":
        return str(item.get("input") or "")
    arguments = json.loads(item.get("arguments") or "{}")
    text = arguments.get("input") or arguments.get("command") or ""
    return " ".join(text) if isinstance(text, list) else str(text)


def _codex_counts(path: Path) -> Counts:
    calls: dict[str, dict[str, Any]] = {}
    outputs: dict[str, str] = {}
    for record in _records(path):
        item = record.get("payload") if record.get("type") == "response_item" else record
        if not isinstance(item, dict):
            continue
        if item.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
            calls[item["call_id"]] = item
        elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
            outputs[item["call_id"]] = item["output"]
    edited: set[str] = set()
    failures = 0
    for call_id, item in calls.items():
        output = outputs.get(call_id)
        if output is None:
            continue
        if _codex_failed(output):
            failures += 1
        elif "*** Begin Patch" in _codex_patch(item):
            lines = _codex_patch(item).splitlines()
            edited |= {line[len(h) :].strip() for line in lines for h in PATCH_HEADERS if line.startswith(h)}
    return len(calls), edited, failures


_AIDER_ERROR = re.compile(
    r"> (?:Traceback \(most recent call last\)|(?:litellm|openai|anthropic)\.\w|\S*(?:Error|Exception)(?::|\s*$))"
)
_AIDER_NOTICE = re.compile(r"> (?:Applied edit to |Running |Commit |Added |# Fix any errors below)")


def _aider_counts(path: Path) -> Counts:
    """Aider's own notices, and the commands the user ran; a failure is a search block that did not
    match, a lint run that found errors, a file the repo map can't include (gone, still tracked by git),
    a /test whose output aider added without asking, or a block of error lines aider printed after the
    user's first message of a session (a model or provider error)."""
    calls = failures = 0
    edited: set[str] = set()
    previous = ""
    asked = in_error = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# aider chat started at "):
            asked = in_error = False
        if not line.startswith("> ") or _AIDER_NOTICE.match(line):
            in_error = False
        if line.startswith("#### "):
            asked = True
        if line.startswith("> ") and not in_error and asked and _AIDER_ERROR.match(line):
            calls += 1
            failures += 1
            in_error = True
        user_starts = line.startswith("#### ") and not previous.startswith("#### ")
        if line.startswith("> Applied edit to "):
            calls += 1
            edited.add(line[len("> Applied edit to ") :].strip())
        elif line.startswith("> Running ") or re.match(r"> Commit [0-9a-f]{7,40} ", line):
            calls += 1
        elif re.match(r"#### (!|/run |/test |/git )", line) and user_starts:
            calls += 1  # a command the user ran (the first line of what they typed)
        elif line.startswith(("## SearchReplaceNoExactMatch", "> # Fix any errors below", "> Repo-map can't include ")):
            calls += 1
            failures += 1
        elif re.match(r"> Added \d+ lines? of output", line) and "output to the chat?" not in previous:
            failures += 1  # none in the fixture: every output there was added when the user said yes
        previous = line
    return calls, edited, failures


def _ours(sessions: list[Session]) -> Counts:
    calls = [call for session in sessions for call in session.calls]
    edits = {"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch"}
    edited = {
        path
        for call in calls
        if call.ok and (call.name in edits or "*** Begin Patch" in call.command)
        for path in call.modifies
    }
    return len(calls), edited, sum(1 for call in calls if call.ok is False)


def _name(path: Path) -> str:
    return str(path.relative_to(TRANSCRIPTS))


@needs_fixtures
@pytest.mark.parametrize("transcript", ALL, ids=[_name(p) for p in ALL])
def test_every_real_transcript_reads_and_matches_an_independent_count(transcript: Path) -> None:
    sessions = read_sessions(transcript)
    assert all(not session.skipped_lines for session in sessions), [s.warnings for s in sessions]
    if transcript.name.endswith(".md"):
        expected = _aider_counts(transcript)
    elif sessions[0].format == "codex":
        expected = _codex_counts(transcript)
    else:  # Claude Code, with the subagent files the reader took in as part of the session
        expected = _claude_counts(sessions[0].files_read)
    assert _ours(sessions) == expected


@needs_fixtures
def test_the_fixtures_hold_every_format_and_plenty_of_activity() -> None:
    """Guards the count test against vacuous passes: a reader that saw nothing would match nothing."""
    formats: dict[str, int] = {}
    for transcript in ALL:
        for session in read_sessions(transcript):
            formats[session.format] = formats.get(session.format, 0) + len(session.calls)
    assert formats["claude-code"] >= 700 and formats["codex"] >= 1300 and formats["aider"] >= 40


# -- sessions in one piece -------------------------------------------------------------------------

MAX = "claude/maxnoobineating+UbuntuDevcontainer_Dotfiles/projects"
HILLVIEW = "claude/HillviewCap+Personal_AI_Infrastructure/projects/-home-jenkins-Personal-AI-Infrastructure"
CAT_VENT = f"{MAX}/-root-nand2tetris-volumn-projects-esp32-cat-vent"


@needs_fixtures
@pytest.mark.parametrize(
    ("name", "calls", "branches"),
    [
        ("67fded5a-e96e-4bdc-b68a-f3d175a61b76.jsonl", 121, 1),
        # After an interrupt the user typed "model", then replaced it with the real request: one rewind.
        # Its 14 tool calls, and a 15th: the API's "prompt is too long" after a 2.6 MB paste.
        ("07aae638-ddcc-4bc0-b041-541fd9a5a666.jsonl", 15, 2),
    ],
)
def test_a_2_1_session_is_one_thread_not_fragments(name: str, calls: int, branches: int) -> None:
    """CLI 2.1.x hangs messages off `attachment` (and `progress`) records, and writes each call of a
    parallel batch as its own record. Read as fragments, 67fded5a had 1 of its 121 calls on the main
    thread, in 23 threads (07aae638: 0 of 14, in 3); whole, every call is on it, and the only branch
    left is a real one."""
    session = read_transcript(TRANSCRIPTS / CAT_VENT / name)
    assert len(session.calls) == calls
    assert set(session.threads) == {"main"}
    assert session.branches == branches


@needs_fixtures
def test_real_rewinds_still_branch_and_real_subagents_keep_their_threads() -> None:
    session = read_transcript(TRANSCRIPTS / "claude/kfischer-claude-history/b3edadab-bca0-4054-9b41-f7ffa6941260.jsonl")
    assert session.branches == 3
    assert {"main", "branch-1", "branch-2", "agent:a434715"} == set(session.threads)
    viewer = read_transcript(TRANSCRIPTS / "claude/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    assert len(viewer.threads["main"]) == 11 and len(viewer.threads) == 6  # five Task subagents, inline


@needs_fixtures
def test_compaction_summaries_are_kept_apart_from_prompts() -> None:
    session = read_transcript(TRANSCRIPTS / CAT_VENT / "67fded5a-e96e-4bdc-b68a-f3d175a61b76.jsonl")
    assert len(session.summaries) == 4
    assert all(s.startswith(COMPACTION_PREFIX) and "rror" in s for s in session.summaries)
    assert not any(p.startswith(COMPACTION_PREFIX) for p in session.prompts)


# -- the task is the first real prompt -------------------------------------------------------------

# What each session was started to do, judged by reading it: the start of its first real prompt.
# Before: 10 of the 35 JSON-lines sessions were wrong (a /model, /exit or /vim wrapper, nothing, or a
# later prompt of a fragmented session; a spec-kit template instead of what the user typed into it), and
# the 8 Aider sessions could not be read: 25 of 43.
EXPECTED_TASKS = {
    "claude/ai4curation+ai-blame/projects/-Users-cjm-repos-ai-blame.rs-tests-examples-simple/"
    "2c965cfd-41e4-4e31-8339-2986ebced03c.jsonl": "create some files for test purposes.",
    "claude/chiphuyen+sniffly/tests/mock-data/-Users-chip-dev-ai-music/"
    "d3ad4cdc-5657-435d-98fa-0035d53e383d.jsonl": "create a jupyter notebook file so that",
    "claude/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": "/init",
    "claude/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": "/orchestrator @CLAUDE.md",
    "claude/claude-code-viewer/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": "/orchestrator create TODO app by Next.js",
    "claude/kfischer-claude-history/b3edadab-bca0-4054-9b41-f7ffa6941260.jsonl": "Hello I want to have some test",
    "claude/maxnoobineating+UbuntuDevcontainer_Dotfiles/projects/-root--vim-vim/"
    "9fb21847-4bea-4aa8-a00e-fa8f804f579e.jsonl": "how to know where the current mapping is",
    "claude/maxnoobineating+UbuntuDevcontainer_Dotfiles/projects/-root-nand2tetris-volumn-projects-esp32/"
    "833425ea-99b9-4a53-8a30-bed9645f60d9.jsonl": "read all ~/. dotfile (mainly zsh/tmux/vim)",
    "claude/maxnoobineating+UbuntuDevcontainer_Dotfiles/projects/-root-nand2tetris-volumn-projects-esp32/"
    "cc1b59bf-e817-4401-a063-4f6d88fa846b.jsonl": '❯ runuser -c "eim install"',
    f"{CAT_VENT}/07aae638-ddcc-4bc0-b041-541fd9a5a666.jsonl": "look at this\nhttps://www.reddit.com/r/esp32",
    f"{CAT_VENT}/67fded5a-e96e-4bdc-b68a-f3d175a61b76.jsonl": "what's the cleaner way to use script",
    f"{CAT_VENT}/6a948486-be5c-4ee8-9748-51e2e1eb6bf3.jsonl": "what do you remember about the session",
    "claude/maxnoobineating+UbuntuDevcontainer_Dotfiles/projects/-root-nand2tetris-volumn-projects-esp32-get-"
    "started-hello-world/e0ddd92b-126f-41cf-8cc2-a73cfa6301e5.jsonl": "⌕ can you help me understand what each",
    "claude/obra+episodic-memory/test/fixtures/large-conversation.jsonl": "I see four uncommitted files?",
    "claude/obra+episodic-memory/test/fixtures/long-conversation.jsonl": "please read the research and the resources",
    "claude/tomjnsn+agentlogs/fixtures/claudecode/images.jsonl": "go to google.com, make a screenshoot",
    # The nine BMAD sessions start from a prompt template the user ran (an agent persona, or a workflow);
    # it is the user's own request, and what follows it is menu codes ("CP", "C", "y").
    "codex/EdouardZemb+test-framework/sessions/2026/01/29/"
    "rollout-2026-01-29T18-40-15-019c0ad7-6b05-73c0-827b-4ac8bc514f16.jsonl": "You must fully embody this agent's",
    "codex/EdouardZemb+test-framework/sessions/2026/01/30/"
    "rollout-2026-01-30T10-40-15-019c0e46-511b-76b0-9b34-e11f79456986.jsonl": "You must fully embody this agent's",
    "codex/EdouardZemb+test-framework/sessions/2026/01/30/"
    "rollout-2026-01-30T14-16-50-019c0f0c-9c5d-7081-99a9-f4829741831a.jsonl": "You must fully embody this agent's",
    "codex/EdouardZemb+test-framework/sessions/2026/01/30/"
    "rollout-2026-01-30T15-18-42-019c0f45-4143-7112-8bd8-317529e3c409.jsonl": "IT IS CRITICAL THAT YOU FOLLOW THIS "
    "COMMAND: LOAD the FULL @bmad/bmm/workflows/3-solutioning/create-epics",
    "codex/EdouardZemb+test-framework/sessions/2026/01/30/"
    "rollout-2026-01-30T23-40-14-019c1110-6c78-7101-a89d-814cc74cbf46.jsonl": "IT IS CRITICAL THAT YOU FOLLOW THIS "
    "COMMAND: LOAD the FULL @bmad/bmm/workflows/3-solutioning/create-archi",
    "codex/EdouardZemb+test-framework/sessions/2026/02/02/"
    "rollout-2026-02-02T10-44-15-019c1dbd-113a-7ae0-aa36-e2a64f2ff0b3.jsonl": "You must fully embody this agent's",
    "codex/EdouardZemb+test-framework/sessions/2026/02/04/"
    "rollout-2026-02-04T22-14-12-019c2a81-73a6-7de0-a280-e83c91954ab1.jsonl": "You must fully embody this agent's",
    "codex/EdouardZemb+test-framework/sessions/2026/02/04/"
    "rollout-2026-02-04T22-33-43-019c2a93-51f5-7372-88c5-3cf696be54e1.jsonl": "You must fully embody this agent's",
    "codex/EdouardZemb+test-framework/sessions/2026/02/04/"
    "rollout-2026-02-04T22-55-19-019c2aa7-1899-7b11-b9e5-6c775cfe1208.jsonl": "You must fully embody this agent's",
    # spec-kit templates quote what the user typed; that is the task.
    "codex/Kocoro-lab+Shannon/sessions/2026/01/10/"
    "rollout-2026-01-10T14-27-32-019ba997-bbca-7483-9a75-07808dcc061c.jsonl": "I want to ensure the functionality of",
    "codex/MoonLadderStudios+MoonMind/sessions/2025/11/12/"
    "rollout-2025-11-12T17-48-11-019a7ae6-1945-7c63-98f2-210adb922af9.jsonl": "Responding to the note below, why",
    "codex/MoonLadderStudios+MoonMind/sessions/2025/11/13/"
    "rollout-2025-11-13T16-00-16-019a7fa9-a846-7393-8d7a-9997d08b0096.jsonl": "Create a spec which will implement",
    # The template run with nothing typed into it: the template is all the user asked.
    "codex/MoonLadderStudios+MoonMind/sessions/2025/11/13/"
    "rollout-2025-11-13T18-21-11-019a802a-aab1-7c31-9831-d2510c7a74a2.jsonl": "## User Input\n\n```text\n\n```",
    "codex/SproutSeeds+coda/sessions/2025/10/04/"
    "rollout-2025-10-04T22-31-15-0199b26c-737a-71a2-9939-52ce68c95cbe.jsonl": ".codex/prompts/constitution.md",
    "codex/ai4curation+ai-blame/tests/data/mixed-traces/codex-sessions/2025/12/29/"
    "rollout-2025-12-29T11-54-27-019b6b08-58f3-7580-9dca-fe3f30a10650.jsonl": "created a file created-with-codex.md",
    "codex/bumpy-croc+ai-trading-bot/sessions/2025/10/14/"
    "rollout-2025-10-14T22-34-26-0199e4a5-5b78-78f2-b041-6b876f71fdab.jsonl": "Create principles focused on code",
    "codex/bumpy-croc+ai-trading-bot/sessions/2025/10/17/"
    "rollout-2025-10-17T22-40-02-0199f41d-9079-7662-ba8d-eff8c75f8a7a.jsonl": "fix any failing unit tests. Use the",
    "codex/tomjnsn+agentlogs/fixtures/codex/crud.jsonl": "create a file `JOKE.md` with a random joke",
    "codex/tomjnsn+agentlogs/fixtures/codex/images.jsonl": "why does the claude code label break here",
    # Claude Code 2.0.71 with subagents; the other sessions of this project hold only /clear, /exit, /plugin
    # and a background shell's `<bash-notification>`: no prompt.
    f"{HILLVIEW}/155715ec-f4e9-47ea-859c-2e4cfcceab6f.jsonl": "What skills are available?",
    f"{HILLVIEW}/5eac5945-4cf4-4f5c-a46a-1f8dacb407aa.jsonl": "we are getting these errors please resolve:",
    # Codex 0.36 in Chinese; the second rollout replays the first before going on.
    "codex/Hoper-J+cpolar-connect/sessions/2025/09/16/"
    "rollout-2025-09-16T12-47-48-9cd28a74-da7e-4458-a91a-fffec2be9d7a.jsonl": "检查目前项目的设计",
    "codex/Hoper-J+cpolar-connect/sessions/2025/09/16/"
    "rollout-2025-09-16T14-12-31-613a9a68-8816-40b2-a2d4-041ade599da6.jsonl": "检查目前项目的设计",
}
_HELLO, _HELLO_PY = "Crea una función hello world en un archivo nuevo", "Create a simple hello.py file"
_SAY_HI = "Hello,"
# Each Aider history's sessions in order; None: a session that asked for nothing (aider upgraded itself, or
# stopped at its start-up questions).
EXPECTED_AIDER_TASKS = {
    "aider/AFI-Protocol+afi-core/.aider.chat.history.md": [
        "add a comment at the top of schemas/pipeline",
        "chmod +x ~/AFI_Modular_Repos/*.sh",
        'for dir in ~/AFI_Modular_Repos/afi-*; do\n  echo "',
        "sync-afi",
        None,
        "Scan the repo using the current config and identify",
        "Please show me the current Git diff for:",
        "pwd",
        "You are auditing the AFI Protocol's core repository",
    ],
    # 34 short runs of aider by a wrapper (`aider --message ...`) against model providers that failed.
    "aider/Asphyksia+OpenCoder/.aider.chat.history.md": [
        None, None, *[_HELLO] * 11, _HELLO_PY, _HELLO_PY, "Hello, just say hi", _HELLO_PY, _HELLO_PY, _HELLO_PY,
        _HELLO_PY, *[_SAY_HI] * 4, _HELLO, "Hello", *[_SAY_HI] * 3,
        "puedes crearme un script para apagar mi pc en zorinos?", "que eres capaz de hacer como agente",
        "Crea un archivo calculator.py con funciones de suma", "Create a file test_file.py with content",
        "print('hello')",
    ],
    "aider/Aeell+ai-text-detector/.aider.chat.history.md": [
        "analyze the project and give me feedback why the website is not working",
    ],
}


def _tasks() -> list[tuple[str, str, str | None]]:
    """(session, expected task, what we read) for every fixture session with a prompt."""
    rows: list[tuple[str, str, str | None]] = []
    for name, expected in EXPECTED_TASKS.items():
        session = read_transcript(TRANSCRIPTS / name)
        rows.append((name, expected, session.task or None))
    for history, expected in EXPECTED_AIDER_TASKS.items():
        for index, (expected_or_none, session) in enumerate(
            zip(expected, read_sessions(TRANSCRIPTS / history), strict=True)
        ):
            if expected_or_none is None:
                assert session.prompts == [], (history, index)
            else:
                rows.append((f"{history}#{index}", expected_or_none, session.task or None))
    return rows


@needs_fixtures
def test_every_session_with_a_prompt_is_listed() -> None:
    """A fixture added later must be judged here too; sessions with no prompt are named as such."""
    no_prompt = {_name(p) for p in ALL if p.name.startswith("agent-")}  # read as parts of their sessions
    for transcript in ALL:
        if transcript.name.endswith(".md"):
            assert _name(transcript) in EXPECTED_AIDER_TASKS, f"{_name(transcript)}: list its sessions' tasks"
            continue
        if _name(transcript) in EXPECTED_TASKS or _name(transcript) in no_prompt:
            continue
        assert read_transcript(transcript).prompts == [], f"{_name(transcript)} has a task: list it"


@needs_fixtures
def test_the_task_is_the_first_real_prompt_for_every_session() -> None:
    rows = _tasks()
    missed = [(name, expected, got) for name, expected, got in rows if not (got or "").startswith(expected)]
    hit_rate = 1 - len(missed) / len(rows)
    assert len(rows) == 43 + 4 + 32 + 1
    assert missed == [], f"task hit rate {hit_rate:.0%}"


@needs_fixtures
def test_sessions_that_only_ran_cli_commands_have_no_task() -> None:
    for name in (
        "claude/kfischer-claude-history/0d3b22c1-ba90-4fd3-b8d2-056ffc626725.jsonl",  # /clear
        "claude/maxnoobineating+UbuntuDevcontainer_Dotfiles/projects/-root--vim-vim/"
        "0d71a16e-10b1-4793-a126-9d07172be153.jsonl",  # /exit
    ):
        assert read_transcript(TRANSCRIPTS / name).prompts == []
