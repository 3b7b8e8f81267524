"""Hostile transcripts and settings files, through the real CLI in real git repos.

Session ids that would forge commit trailers, transcripts that can be read only once (a FIFO, a pipe,
``-``), and agent settings files that are broken, unreadable or full of the user's own look-alike hooks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import ClaudeSession, shop_session, write_codex
from conftest import Cli, git, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from expertise_kit.agents.installer import AGENTS, _legacy_commands, _ours, hook_command
from expertise_kit.learning.transcripts.model import MAX_SESSION_ID_CHARS, safe_session_id

FORGED = "abc\n\nExpertise-Change: reverted\nSigned-off-by: Mallory <m@evil.test>"
SAFE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
EXPERTISE = Path(sys.executable).parent / "expertise"


# -- session ids ---------------------------------------------------------------------------------


def _generic(path: Path, session_id: Any | None) -> Path:
    rows: list[dict[str, Any]] = [
        {"type": "task", "description": "Harden the login endpoint"},
        {"type": "tool_use", "tool_name": "Read", "input": {"file_path": "api/login.py"}, "id": "1"},
        {"type": "tool_result", "tool_use_id": "1", "success": True},
        {"type": "tool_use", "tool_name": "Bash", "input": {"command": "pytest tests/api"}, "id": "2"},
        {"type": "tool_result", "tool_use_id": "2", "success": False, "error": "E   KeyError: 'csrf_token'"},
        {"type": "tool_use", "tool_name": "Edit", "input": {"file_path": "api/csrf.py"}, "id": "3"},
        {"type": "tool_result", "tool_use_id": "3", "success": True},
        {"type": "tool_use", "tool_name": "Bash", "input": {"command": "pytest tests/api"}, "id": "4"},
        {"type": "tool_result", "tool_use_id": "4", "success": True},
        {"type": "result", "status": "completed"},
    ]
    if session_id is not None:
        rows[0]["session_id"] = session_id
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _transcript(fmt: str, directory: Path, session_id: str) -> Path:
    if fmt == "claude-code":
        return shop_session(session_id).write(directory / "session.jsonl")
    if fmt == "codex":
        return write_codex(directory / "rollout-x.jsonl", session_id=session_id)
    return _generic(directory / "generic.jsonl", session_id)


def _assert_trailers_are_ours(project: Path, run: Cli) -> str:
    """The last commit carries only the trailers we wrote, and history reads it as learned."""
    body = git(project, "log", "-1", "--format=%B")
    assert "Signed-off-by" not in body
    assert [line for line in body.splitlines() if line.startswith("Expertise-Change:")] == ["Expertise-Change: learned"]
    assert git(project, "log", "-1", "--format=%(trailers:key=Signed-off-by,valueonly)").strip() == ""
    assert "\n" not in git(project, "log", "-1", "--format=%s").strip()
    row = json.loads(run("history", "--json").stdout)[0]
    assert row["change"] == "learned", row
    assert len(row["sessions"]) == 1
    session: str = row["sessions"][0]
    assert SAFE.fullmatch(session)
    return session


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "generic"])
def test_a_session_id_with_newlines_cannot_forge_trailers(project: Path, run: Cli, tmp_path: Path, fmt: str) -> None:
    path = _transcript(fmt, tmp_path, FORGED)
    result = run("learn", str(path))
    assert result.exit_code == 0, result.output
    assert "committed" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if "session id" in line]
    assert len(warnings) == 1 and str(path) in warnings[0] and "sha-" in warnings[0]
    session = _assert_trailers_are_ours(project, run)
    assert session.startswith("sha-")
    # The same raw id maps to the same safe one, so the file remembers the session was learned from.
    again = json.loads(run("learn", str(path), "--json", "--dry-run").stdout)
    assert again["sessions"][0]["id"] == session


@pytest.mark.parametrize(
    "raw",
    [
        "a" * (MAX_SESSION_ID_CHARS + 1),
        "café-session",
        "id\r\nExpertise-Change: reverted",
        "id\u2028Expertise-Change: reverted",
        "tab\there",
        "",
    ],
)
def test_other_unsafe_session_ids_are_replaced(project: Path, run: Cli, tmp_path: Path, raw: str) -> None:
    path = _generic(tmp_path / "generic.jsonl", raw)
    result = run("learn", str(path))
    assert result.exit_code == 0, result.output
    if raw:  # an empty id falls back to the file name, which is fine
        assert "session id" in result.stderr
    _assert_trailers_are_ours(project, run)


def test_safe_session_ids_pass_unchanged(project: Path, run: Cli, tmp_path: Path) -> None:
    raw = "5e55104e-1d2c-4b1a-9f00-00000000000a:agent_1.x"
    path = _generic(tmp_path / "generic.jsonl", raw)
    result = run("learn", str(path))
    assert result.exit_code == 0 and "session id" not in result.stderr
    assert _assert_trailers_are_ours(project, run) == raw
    numeric = _generic(tmp_path / "numeric.jsonl", 42)
    assert json.loads(run("learn", str(numeric), "--json", "--dry-run").stdout)["sessions"][0]["id"] == "42"


def test_a_file_name_with_a_newline_cannot_forge_trailers(project: Path, run: Cli, tmp_path: Path) -> None:
    # No session id inside: the id falls back to the file's name, which the user's disk may make hostile.
    path = _generic(tmp_path / "x\nExpertise-Change: reverted.jsonl", None)
    result = run("learn", str(path))
    assert result.exit_code == 0, result.output
    _assert_trailers_are_ours(project, run)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_safe_session_id_is_safe_stable_and_keeps_good_ids(raw: str) -> None:
    safe = safe_session_id(raw)
    assert SAFE.fullmatch(safe)
    assert safe_session_id(raw) == safe and safe_session_id(safe) == safe
    if SAFE.fullmatch(raw):
        assert safe == raw
    else:
        assert safe.startswith("sha-") and len(safe) == 20


# -- transcripts read once -----------------------------------------------------------------------


def _big_session() -> ClaudeSession:
    """Enough records that format detection and the binary probe each read well into a pipe."""
    session = shop_session()
    for number in range(24):
        session.bash(f"python -m pytest tests/test_{number}.py -q", "." * 3000 + f"\n{number} passed")
    session.say("All green.")
    return session


def _tool_calls(data: dict[str, Any]) -> int:
    return int(data["sessions"][0]["tool_calls"])


@pytest.fixture
def regular(tmp_path: Path) -> Path:
    return _big_session().write(tmp_path / "session.jsonl")


@pytest.fixture
def expected_calls(run: Cli, project: Path, regular: Path) -> int:
    result = run("learn", str(regular), "--json", "--dry-run")
    assert result.exit_code == 0 and result.stderr == "", result.output
    calls = _tool_calls(json.loads(result.stdout))
    assert calls == 33
    return calls


class _Feed:
    """A writer on the other end of a FIFO, as `<(cat t.jsonl)` would be.

    After writing it answers any later open of the FIFO with an immediate end of file, so a reader
    that opens it a second time (the bug) gets nothing rather than blocking the test forever.
    """

    def __init__(self, path: Path, data: bytes) -> None:
        self.path, self.data = path, data
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with open(self.path, "wb") as handle:
                handle.write(self.data)
        except BrokenPipeError:  # the reader gave up early, which some tests expect
            pass
        while not self.stop.is_set():
            with contextlib.suppress(OSError):  # ENXIO: nobody is waiting to read
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            self.stop.wait(0.02)

    def join(self) -> None:
        self.stop.set()
        self.thread.join(10)


def _feed(path: Path, data: bytes) -> _Feed:
    return _Feed(path, data)


def test_a_fifo_is_read_once_and_whole(
    project: Path, run: Cli, tmp_path: Path, regular: Path, expected_calls: int
) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = _feed(fifo, regular.read_bytes())
    result = run("learn", str(fifo), "--json", "--dry-run")
    writer.join()
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # no "line 1 is not JSON", no skipped records
    data = json.loads(result.stdout)
    assert _tool_calls(data) == expected_calls
    assert data["sessions"][0]["path"] == str(fifo) and data["sessions"][0]["skipped_lines"] == 0


def test_a_pipe_by_dev_fd_is_read_once_and_whole(project: Path, run: Cli, regular: Path, expected_calls: int) -> None:
    read_end, write_end = os.pipe()
    content = regular.read_bytes()

    def write() -> None:
        with open(write_end, "wb") as handle:
            handle.write(content)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        result = run("learn", f"/dev/fd/{read_end}", "--json", "--dry-run")
    finally:
        writer.join(10)
        os.close(read_end)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert _tool_calls(json.loads(result.stdout)) == expected_calls


@pytest.mark.parametrize("argument", ["-", "/dev/stdin"])
def test_stdin_from_a_pipe_in_a_real_process(project: Path, regular: Path, expected_calls: int, argument: str) -> None:
    done = subprocess.run(
        [str(EXPERTISE), "-C", str(project), "learn", argument, "--json", "--dry-run"],
        input=regular.read_bytes(),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    data = json.loads(done.stdout)
    assert _tool_calls(data) == expected_calls
    assert data["sessions"][0]["path"] == "/dev/stdin"


def test_learning_from_a_fifo_commits_what_the_file_would(project: Path, run: Cli, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = _feed(fifo, shop_session().write(tmp_path / "s.jsonl").read_bytes())
    result = run("learn", str(fifo))
    writer.join()
    assert result.exit_code == 0, result.output
    assert "session 5e55104e-1d2 (claude-code): 9 tool calls" in result.stdout
    assert "committed" in result.stdout


@pytest.fixture
def small_spool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from expertise_kit.learning.transcripts import lines

    monkeypatch.setattr(lines, "MAX_SPOOL_BYTES", 4096)  # stands in for the real 1 GiB
    yield


@pytest.mark.usefixtures("small_spool")
def test_a_pipe_over_the_size_limit_is_refused(project: Path, run: Cli, tmp_path: Path, regular: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    before = snapshot(project)
    writer = _feed(fifo, regular.read_bytes())
    result = run("learn", str(fifo))
    writer.join()
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"expertise: error: {fifo}: more than 4096 bytes read from a pipe")
    assert snapshot(project) == before


def test_binary_bytes_down_a_pipe_are_refused(project: Path, run: Cli, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    before = snapshot(project)
    writer = _feed(fifo, b'{"type": "user"}\n' + b"\x00" * 100_000)
    result = run("learn", str(fifo))
    writer.join()
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [f"expertise: error: {fifo}: is a binary file, not a transcript; "
                                          "pass the agent's session file (.jsonl, .json, or aider's "
                                          ".aider.chat.history.md)"]  # fmt: skip
    assert snapshot(project) == before


def test_the_temporary_copy_is_removed(
    project: Path, run: Cli, tmp_path: Path, regular: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = _feed(fifo, regular.read_bytes())
    assert run("learn", str(fifo), "--dry-run").exit_code == 0
    writer.join()
    assert list(scratch.iterdir()) == []


# -- agent settings files ------------------------------------------------------------------------

SETTINGS = ".claude/settings.json"


def _install(run: Cli) -> Any:
    return run("hooks", "install", "--agent", "claude-code")


def _one_error_line(result: Any, path: Path) -> str:
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"expertise: error: {path}")
    line: str = lines[0]
    return line


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"hooks": null}\n', "`hooks` is not an object"),
        (b'{"hooks": {"SessionStart": null}}\n', "hooks.SessionStart is not a list"),
        (b'{"hooks": {"SessionStart": {"hooks": []}}}\n', "hooks.SessionStart is not a list"),
        (b'{"theme": "dark",\n "name": "caf\xe9"}\n', "settings.json:2: not UTF-8 text"),
        (b"\xff\xfe{\x00}\x00", "settings.json:1: not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "settings.json"),
        (b"[1, 2]", "top level is not a JSON object"),
    ],
)
@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_broken_settings_give_one_line_and_change_nothing(
    project: Path, run: Cli, content: bytes, expected: str, command: str
) -> None:
    path = project / SETTINGS
    path.parent.mkdir()
    path.write_bytes(content)
    before = snapshot(project)
    result = run("hooks", command, "--agent", "claude-code")
    if command == "uninstall" and b"hooks" in content and b"\xe9" not in content:
        # Nothing of ours in a file whose hooks are malformed: nothing to remove, nothing to refuse.
        assert result.exit_code == 0 and "nothing changed" in result.stdout
    else:
        assert expected in _one_error_line(result, path)
    assert snapshot(project) == before


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_settings_path_that_is_a_directory(project: Path, run: Cli, command: str) -> None:
    path = project / SETTINGS
    path.mkdir(parents=True)
    (path / "keep.txt").write_text("mine\n")
    before = snapshot(project)
    result = run("hooks", command, "--agent", "claude-code")
    assert "is a directory, not a settings file" in _one_error_line(result, path)
    assert snapshot(project) == before and path.is_dir()


def test_a_settings_directory_that_is_a_file(project: Path, run: Cli) -> None:
    (project / ".claude").write_text("not a directory\n")
    before = snapshot(project)
    result = _install(run)
    _one_error_line(result, project / SETTINGS)
    assert snapshot(project) == before


def test_an_unreadable_settings_file(project: Path, run: Cli) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    path = project / SETTINGS
    path.parent.mkdir()
    path.write_text("{}\n")
    path.chmod(0)
    try:
        result = _install(run)
        assert "can't read it" in _one_error_line(result, path)
    finally:
        path.chmod(0o644)
    assert path.read_text() == "{}\n"


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_a_settings_symlink_loop(project: Path, run: Cli, command: str) -> None:
    path = project / SETTINGS
    path.parent.mkdir()
    path.symlink_to(path.name)  # points at itself
    result = run("hooks", command, "--agent", "claude-code")
    assert "can't read it" in _one_error_line(result, path)
    assert path.is_symlink() and os.readlink(path) == path.name


def test_init_agent_with_a_broken_settings_file_is_one_line(repo: Path, run: Cli) -> None:
    path = repo / SETTINGS
    path.parent.mkdir()
    path.write_bytes(b'{"hooks": {"SessionEnd": [{"hooks": "x"}], "Stop": 3}, "a": "\xff"}')
    result = run("init", "--agent", "claude-code")
    assert "not UTF-8 text" in _one_error_line(result, path)
    assert path.read_bytes().endswith(b'"\xff"}')


PYTHON = "/opt/venv/bin/python3"
OURS_OLD_PYTHON = _legacy_commands("pre", "claude-code", "/old/venv/bin/python")[0]  # what earlier versions wrote
USER_HOOKS = [
    # A user's timeout wrapper around our hook: theirs.
    'timeout 5 python -I -c \'import expertise_kit.hook as h; h.main(["pre", "--agent", "claude-code"])\'',
    # A script of theirs whose path merely contains the module name.
    "/home/ada/bin/expertise_kit.hook.sh --quiet",
    # Our exact command with something after it: not something we wrote.
    hook_command("pre", "claude-code") + " 2>/dev/null",
    # Our command piped somewhere.
    _legacy_commands("post", "claude-code", PYTHON)[0] + " | tee /tmp/log",
    "echo expertise_kit.hook",
]


def _user_settings() -> dict[str, Any]:
    return {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": USER_HOOKS[0]}]},
                {"hooks": [{"type": "command", "command": USER_HOOKS[1], "timeout": 3}]},
            ],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": c} for c in USER_HOOKS[2:]]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": USER_HOOKS[3]}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": USER_HOOKS[4]}]}],
        },
    }


def _commands(data: dict[str, Any]) -> list[str]:
    return [h["command"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]]


def test_users_look_alike_hooks_survive_install_and_uninstall(project: Path, run: Cli) -> None:
    path = project / SETTINGS
    path.parent.mkdir()
    original = _user_settings()
    path.write_text(json.dumps(original, indent=2) + "\n")
    installed = _install(run)
    assert installed.exit_code == 0 and "installed" in installed.stdout
    data = json.loads(path.read_text())
    for event, groups in original["hooks"].items():
        # The user's groups are where they were, as they were; ours come after them.
        assert data["hooks"][event][: len(groups)] == groups
    assert sum(1 for c in _commands(data) if _ours({"command": c})) == 3
    assert all(c in _commands(data) for c in USER_HOOKS)
    removed = run("hooks", "uninstall", "--agent", "claude-code")
    assert removed.exit_code == 0 and "removed" in removed.stdout
    assert json.loads(path.read_text()) == original
    assert run("hooks", "uninstall", "--agent", "claude-code").stdout.startswith("no expertise_kit hooks found")


def test_uninstall_takes_ours_out_of_a_mixed_group_without_moving_it(project: Path, run: Cli) -> None:
    path = project / SETTINGS
    path.parent.mkdir()
    legacy = f"{shlex.quote(PYTHON)} -I -m expertise_kit.hook post --agent claude-code"
    settings_data = {
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": "first.sh"}]},
                {
                    "matcher": "*",
                    "hooks": [
                        {"type": "command", "command": "before.sh"},
                        {"type": "command", "command": OURS_OLD_PYTHON, "timeout": 10},
                        {"type": "command", "command": "after.sh"},
                    ],
                    "note": "the user's own key",
                },
                {"hooks": [{"type": "command", "command": "last.sh"}]},
            ],
            "SessionEnd": [{"hooks": [{"type": "command", "command": legacy}]}],
        }
    }
    path.write_text(json.dumps(settings_data, indent=2) + "\n")
    # Install points our (old-venv, and older -m form) hooks at this interpreter, in place, once each.
    assert _install(run).exit_code == 0
    data = json.loads(path.read_text())
    group = data["hooks"]["UserPromptSubmit"][1]
    assert [h["command"] for h in group["hooks"]][::2] == ["before.sh", "after.sh"]
    assert group["hooks"][1]["command"] == hook_command("pre", "claude-code")
    assert len(data["hooks"]["UserPromptSubmit"]) == 3
    assert data["hooks"]["SessionEnd"] == [
        {"hooks": [{"type": "command", "command": hook_command("post", "claude-code")}]}
    ]
    assert run("hooks", "uninstall", "--agent", "claude-code").exit_code == 0
    after = json.loads(path.read_text())
    assert list(after["hooks"]) == ["UserPromptSubmit"]
    groups = after["hooks"]["UserPromptSubmit"]
    assert [g["hooks"][0]["command"] for g in groups] == ["first.sh", "before.sh", "last.sh"]
    assert groups[1] == {
        "matcher": "*",
        "hooks": [{"type": "command", "command": "before.sh"}, {"type": "command", "command": "after.sh"}],
        "note": "the user's own key",
    }
    assert list(groups[1]) == ["matcher", "hooks", "note"]


def test_a_settings_symlink_stays_a_symlink(project: Path, run: Cli, tmp_path: Path) -> None:
    target = tmp_path / "dotfiles-settings.json"
    target.write_text('{"theme": "dark"}\n')
    link = project / SETTINGS
    link.parent.mkdir()
    link.symlink_to(target)
    assert _install(run).exit_code == 0
    assert link.is_symlink() and "expertise-hook pre" in target.read_text()
    assert run("hooks", "uninstall").exit_code == 0
    assert link.is_symlink() and json.loads(target.read_text()) == {"theme": "dark"}


def test_a_committed_settings_symlink_out_of_the_repository_is_not_written_through(
    project: Path, run: Cli, tmp_path: Path
) -> None:
    """A clone that brings `.claude/settings.json` as a link to `~/.claude/settings.json` must not get our
    hooks into the user's settings for every project; the user's own, uncommitted link still does."""
    target = tmp_path / "global-settings.json"
    target.write_text('{"model": "opus"}\n')
    link = project / SETTINGS
    link.parent.mkdir()
    link.symlink_to(target)
    git(project, "add", str(link))
    git(project, "commit", "-q", "-m", "settings")
    result = _install(run)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"expertise: error: {link}: is a symlink committed to the repository that leads outside it "
        f"(to {target.resolve()}); hooks are installed only inside the repository: replace the link with a file "
        "or folder; nothing was changed"
    )
    assert target.read_text() == '{"model": "opus"}\n' and link.is_symlink()


def test_a_committed_folder_symlink_out_of_the_repository_is_not_written_through(
    project: Path, run: Cli, tmp_path: Path
) -> None:
    outside = tmp_path / "dot-claude"
    outside.mkdir()
    (outside / "settings.json").write_text('{"model": "opus"}\n')
    (project / ".claude").symlink_to(outside)
    git(project, "add", ".claude")
    git(project, "commit", "-q", "-m", "agent folder")
    result = _install(run)
    assert result.exit_code == 1 and f"{project / '.claude'}: is a symlink committed to the repository" in result.stderr
    assert (outside / "settings.json").read_text() == '{"model": "opus"}\n'


@settings(max_examples=200, deadline=None)
@given(
    python=st.text(min_size=1, max_size=60).filter(lambda s: "\x00" not in s),
    mode=st.sampled_from(["pre", "post"]),
    agent=st.sampled_from(sorted(AGENTS)),
    extra=st.text(min_size=1, max_size=20).filter(lambda s: s.strip()),
)
def test_ours_is_exactly_our_command(python: str, mode: str, agent: str, extra: str) -> None:
    for command in (hook_command(mode, agent), *_legacy_commands(mode, agent, python)):
        assert _ours({"type": "command", "command": command})
        assert not _ours({"type": "command", "command": command + " " + extra})
        assert not _ours({"type": "command", "command": extra + " " + command})
        assert not _ours(command) and not _ours({"command": [command]})
    assert not _ours({"command": _legacy_commands(mode, agent, python)[0].replace(" -I ", " ")})
    assert not _ours({"command": hook_command(mode, agent).replace(" || true", "")})


def test_a_gemini_session_is_read_as_gemini_not_mistaken_for_claude_code(
    project: Path, run: Cli, tmp_path: Path
) -> None:
    """Its header carries `sessionId` like Claude Code's; reading it as Claude Code learned nothing, silently."""
    path = tmp_path / "session-2026-11-20T10-00-abc.jsonl"
    path.write_text(
        '{"sessionId": "abc", "projectHash": "f00d", "startTime": "2026-11-20T10:00:00Z"}\n'
        '{"id": "m1", "type": "user", "content": [{"text": "fix the build"}]}\n'
        '{"id": "m2", "type": "gemini", "toolCalls": [{"id": "t1", "name": "run_shell_command", "args": {}}]}\n'
    )
    result = run("learn", "--dry-run", "--json", str(path))
    assert result.exit_code == 0, result.stderr
    (session,) = json.loads(result.stdout)["sessions"]
    assert (session["format"], session["id"], session["task"]) == ("gemini", "abc", "fix the build")
    assert session["tool_calls"] == 1


# -- transcripts a reader could choke on -----------------------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures"


def _claude_records(path: Path, *records: dict[str, Any]) -> Path:
    """A Claude Code transcript of ``records``, each given the fields every record has."""
    base = {"sessionId": "c1c1c1c1-0000-4000-8000-000000000001", "cwd": "/tmp/x", "timestamp": "2026-01-01T00:00:01Z"}
    path.write_text("".join(json.dumps({**base, **record}) + "\n" for record in records))
    return path


def _bash(uuid: str, parent: str | None, tool_id: str, command: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    message = {"role": "assistant", "content": [block]}
    return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "message": message}


def _result(uuid: str, parent: str | None, tool_id: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}
    return {"type": "user", "uuid": uuid, "parentUuid": parent, "message": {"role": "user", "content": [block]}}


_PROMPT = {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "Fix the build"}}
_DONE = {"type": "assistant", "uuid": "u9", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}}  # fmt: skip


def _loop(shape: str, tag: str = "") -> list[dict[str, Any]]:
    """A parentUuid loop: two records naming each other, one naming itself, or three records in a ring."""
    a, b, c = (f"{tag}u{n}" for n in (2, 3, 4))
    if shape == "pair":
        return [_bash(a, b, f"{tag}t1", "make"), _result(b, a, f"{tag}t1")]
    if shape == "self":
        return [_bash(a, a, f"{tag}t1", "make")]
    return [_bash(a, c, f"{tag}t1", "make"), _result(b, a, f"{tag}t1"), _bash(c, b, f"{tag}t2", "make")]


def _limited_memory() -> None:
    """A learn that loops on a cycle would take all the memory there is: this one stops at 1 GiB."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("shape", ["pair", "self", "ring"])
def test_a_parent_uuid_loop_is_cut_where_it_closes_and_said_once(project: Path, tmp_path: Path, shape: str) -> None:
    path = _claude_records(tmp_path / f"{shape}.jsonl", _PROMPT, *_loop(shape, "x"), *_loop(shape, "y"), _DONE)
    result = subprocess.run(
        [str(EXPERTISE), "-C", str(project), "learn", "--dry-run", "--json", str(path)],
        capture_output=True, text=True, preexec_fn=_limited_memory, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if "parentUuid" in line]
    assert f"{path}:2: 2 parentUuid loops, the first closed here" in warning
    (session,) = json.loads(result.stdout)["sessions"]
    assert session["tool_calls"] == sum(1 for record in _loop(shape) if "Bash" in json.dumps(record)) * 2


def test_a_loop_starts_a_branch_and_the_main_line_is_kept(tmp_path: Path) -> None:
    from expertise_kit.learning.transcripts import read_transcript

    session = read_transcript(_claude_records(tmp_path / "t.jsonl", _PROMPT, *_loop("pair"), _DONE))
    assert [(c.command, c.thread, c.ok) for c in session.calls] == [("make", "branch-1", True)]
    assert session.prompts == ["Fix the build"]
    assert session.warnings == [f"{tmp_path / 't.jsonl'}:2: a parentUuid loop; the record closing it starts a branch"]


_NOT_A_LIST = [True, 1, 1.5]


@pytest.mark.parametrize("content", _NOT_A_LIST)
@pytest.mark.parametrize("role", ["user", "assistant"])
def test_a_codex_message_whose_content_is_no_list_is_skipped_and_the_rest_learned(
    project: Path, run: Cli, tmp_path: Path, role: str, content: Any
) -> None:
    bad = write_codex(tmp_path / "rollout-bad.jsonl")
    item = {"type": "message", "role": role, "content": content}
    with bad.open("a") as handle:
        handle.write(json.dumps({"timestamp": "2026-11-21T09:00:10.000Z", "type": "response_item", "payload": item}))
    good = shop_session().write(tmp_path / "good.jsonl")
    result = run("learn", "--dry-run", "--json", str(bad), str(good))
    assert result.exit_code == 0, result.stderr
    assert f"{bad}:11: a message whose content is neither text nor a list, skipped" in result.stderr
    sessions = json.loads(result.stdout)["sessions"]
    assert sorted(s["format"] for s in sessions) == ["claude-code", "codex"]
    assert all(s["tool_calls"] > 0 for s in sessions)


@pytest.mark.parametrize("content", _NOT_A_LIST)
def test_claude_and_gemini_messages_whose_content_is_no_list_are_said_and_skipped(
    tmp_path: Path, content: Any
) -> None:
    from expertise_kit.learning.transcripts import read_transcript

    claude = _claude_records(
        tmp_path / "claude.jsonl",
        _PROMPT, {"type": "user", "uuid": "u2", "parentUuid": "u1", "message": {"role": "user", "content": content}},
        _bash("u3", "u2", "t1", "make"), _result("u4", "u3", "t1"),
    )  # fmt: skip
    gemini = tmp_path / "session-2026-11-20T10-00-abc.jsonl"
    gemini.write_text(
        '{"sessionId": "abc", "projectHash": "f00d", "startTime": "2026-11-20T10:00:00Z"}\n'
        '{"id": "m1", "type": "user", "content": [{"text": "fix the build"}]}\n'
        + json.dumps({"id": "m2", "type": "gemini", "content": content}) + "\n"
        + json.dumps({"$set": {"messages": [{"id": "m3", "type": "user", "content": content}]}}) + "\n"
        '{"id": "m4", "type": "gemini", "toolCalls": [{"id": "t1", "name": "run_shell_command", "args": {}}]}\n'
    )  # fmt: skip
    for path, line, calls in ((claude, 2, 1), (gemini, 3, 1)):
        session = read_transcript(path)
        assert f"{path}:{line}: a message whose content is neither text nor a list, skipped" in session.warnings
        assert len(session.calls) == calls
    assert read_transcript(gemini).warnings[1] == (
        f"{gemini}:4: 1 restated messages whose content is neither text nor a list, skipped"
    )


def test_a_reader_that_fails_costs_only_its_own_transcript(
    project: Path, run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expertise_kit.learning import transcripts

    def broken(path: Path, **_: Any) -> Any:
        raise TypeError("'bool' object is not iterable")

    monkeypatch.setitem(transcripts._READERS, "codex", broken)
    bad = write_codex(tmp_path / "rollout-bad.jsonl")
    good = shop_session().write(tmp_path / "good.jsonl")
    result = run("learn", "--json", str(bad), str(good))
    assert result.exit_code == 1  # said, after the good transcript was learned
    (error,) = [line for line in result.stderr.splitlines() if "error:" in line]
    assert error.startswith(f"expertise: error: {bad}: reading it failed (TypeError: 'bool' object is not iterable)")
    assert "Traceback" not in result.stderr
    assert [s["format"] for s in json.loads(result.stdout)["sessions"]] == ["claude-code"]


def test_a_learner_that_fails_on_one_session_costs_only_that_session(
    project: Path, run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expertise_kit.learning import learn

    real = learn.extract

    def broken_on_bad(session: Any, root: str) -> Any:
        if session.source.name == "bad.jsonl":
            raise IndexError("list index out of range")
        return real(session, root)

    monkeypatch.setattr(learn, "extract", broken_on_bad)
    bad = shop_session().write(tmp_path / "bad.jsonl")
    good = shop_session().write(tmp_path / "good.jsonl")
    commits = git(project, "rev-list", "--count", "HEAD")
    result = run("learn", "--json", str(bad), str(good))
    assert result.exit_code == 1  # said, after the good transcript was learned
    (error,) = [line for line in result.stderr.splitlines() if "error:" in line]
    assert error.startswith(f"expertise: error: {bad}: learning from session ")
    assert "failed (IndexError: list index out of range); nothing learned from that session; a bug in" in error
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert len(report["sessions"]) == 1
    assert int(git(project, "rev-list", "--count", "HEAD")) == int(commits) + 1  # the good session's lessons


def test_a_test_failure_quoting_claude_codes_words_is_still_a_failure(tmp_path: Path) -> None:
    from builders import CWD, ClaudeSession

    from expertise_kit.learning.transcripts import read_transcript

    s = ClaudeSession()
    s.prompt("Make the tests pass")
    denied = "E   AssertionError: Permission to use the admin API was not granted to role 'editor'"
    s.bash("pytest -q tests/test_acl.py", denied + "\nFAILED tests/test_acl.py::test_editor", exit_code=1)
    s.tool("Bash", {"command": "pytest -q"}, denied, error=True)  # no `Exit code` line first
    s.tool("Bash", {"command": "rm -rf build"}, "Permission to use Bash with command rm -rf build has been denied.",
           error=True)  # fmt: skip
    s.tool("Write", {"file_path": f"{CWD}/CLAUDE.md"}, f"Claude requested permissions to write to {CWD}/CLAUDE.md, "
           "but you haven't granted it yet.", error=True)  # fmt: skip
    s.tool("Bash", {"command": "make"}, "Exit code 2\nmake: *** [Makefile:3] Error 2\n" + "x\n" * 50
           + "[Request interrupted by user for tool use]", error=True)  # fmt: skip
    calls = read_transcript(s.write(tmp_path / "t.jsonl")).calls
    assert [(c.ok, c.interrupted) for c in calls] == [(False, False)] * 2 + [(False, True)] * 2 + [(False, False)]


@pytest.mark.parametrize(
    "fmt", ["claude-code", "codex", "generic", "aider", "gemini", "gemini-document", "cursor"]
)  # fmt: skip
def test_a_byte_order_mark_at_the_start_is_not_a_bad_first_line(tmp_path: Path, fmt: str) -> None:
    from builders import write_aider, write_generic

    from expertise_kit.learning.transcripts import detect_format, read_sessions

    plain = tmp_path / "plain"
    plain.mkdir()
    made = {
        "claude-code": lambda: shop_session().write(plain / "s.jsonl"),
        "codex": lambda: write_codex(plain / "rollout-x.jsonl"),
        "generic": lambda: write_generic(plain / "generic.jsonl"),
        "aider": lambda: write_aider(plain / "history.md"),  # found by its first line, not its name
        "gemini": lambda: FIXTURES / "gemini" / "session-2026-11-20T10-00-5c0ffee0.jsonl",
        "gemini-document": lambda: FIXTURES / "gemini" / "session-2026-03-02T09-00-legacy00.json",
        "cursor": lambda: FIXTURES / "cursor" / "c0ffee00-aaaa-4bbb-8ccc-123456789abc.jsonl",
    }
    clean = plain / made[fmt]().name
    if not clean.exists():  # a fixture, without the subagents' files beside it
        shutil.copy(made[fmt](), clean)
    marked = tmp_path / clean.name
    marked.write_bytes(b"\xef\xbb\xbf" + clean.read_bytes())
    assert detect_format(marked) == detect_format(clean) == fmt.removesuffix("-document")
    before, after = read_sessions(clean), read_sessions(marked)
    assert [s.skipped_lines for s in after] == [0] * len(after)
    read = [[(len(s.calls), s.prompts, s.records) for s in sessions] for sessions in (before, after)]
    assert read[0] == read[1]
    assert all(s.calls for s in after)


def _gemini_with_rewinds(path: Path, lost: int) -> Path:
    rows: list[dict[str, Any]] = [{"sessionId": "abc", "projectHash": "f00d", "startTime": "2026-11-20T10:00:00Z"}]
    for n in range(6):
        rows.append({"id": f"p{n}", "type": "user", "content": [{"text": f"task {n}"}]})
        call = {"id": f"t{n}", "name": "run_shell_command", "args": {"command": f"make {n}"}, "status": "success"}
        rows.append({"id": f"g{n}", "type": "gemini", "toolCalls": [call]})
    rows += [{"$rewindTo": f"nope{n}"} for n in range(lost)]
    rows += [{"$rewindTo": "p4"}, {"$rewindTo": "p1"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_rewinds_to_messages_never_seen_are_said_in_one_line(tmp_path: Path) -> None:
    from expertise_kit.learning.transcripts import read_transcript

    path = _gemini_with_rewinds(tmp_path / "session-2026-11-20T10-00-abc.jsonl", 2000)
    session = read_transcript(path)
    assert session.warnings == [f"{path}:14: 2000 rewinds, the first here, to a message not seen; ignored"]
    assert session.branches == 3
    assert [(c.command, c.thread) for c in session.calls] == [
        ("make 0", "main"), ("make 1", "branch-2"), ("make 2", "branch-2"), ("make 3", "branch-2"),
        ("make 4", "branch-1"), ("make 5", "branch-1"),
    ]  # fmt: skip
    assert session.prompts == ["task 0"]


def test_a_rewind_finds_its_message_after_older_ones_fell_off_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expertise_kit.learning.transcripts import gemini, read_transcript

    monkeypatch.setattr(gemini, "ID_WINDOW", 5)  # the line keeps g3 to g5: p0 to p3 fall off its front
    path = _gemini_with_rewinds(tmp_path / "session-2026-11-20T10-00-abc.jsonl", 1)
    session = read_transcript(path)
    # p4 is found where it is; p1 fell off the line, and a rewind to it is said
    assert session.warnings == [f"{path}:14: 2 rewinds, the first here, to a message not seen; ignored"]
    assert [(c.command, c.thread) for c in session.calls if c.thread != "main"] == [
        ("make 4", "branch-1"), ("make 5", "branch-1")
    ]  # fmt: skip


def test_an_aider_history_of_many_sessions_resolves_its_path_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expertise_kit.learning.transcripts import iter_sessions

    path = tmp_path / ".aider.chat.history.md"
    path.write_text("".join(f"# aider chat started at 2026-01-01 10:00:00\n#### fix {n}\n" for n in range(500)))
    resolved: list[Path] = []
    real = Path.resolve

    def counting(self: Path, strict: bool = False) -> Path:
        resolved.append(self)
        return real(self, strict)

    monkeypatch.setattr(Path, "resolve", counting)
    errors: list[Any] = []
    assert len(list(iter_sessions([path], "auto", errors))) == 500 and not errors
    assert len(resolved) <= 3
