"""The agent hooks: stdin in, context out, for each agent; installing; never breaking the agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import shop_session
from conftest import Cli, git

from expertise_kit.agents.installer import AGENTS, hook_command
from expertise_kit.learning.background import log_path, wait_idle

EVENTS = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}


def _hook(
    mode: str, agent: str, stdin: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "expertise_kit.hook", mode, "--agent", agent],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or dict(os.environ),
        timeout=120,
        check=False,
    )


@pytest.fixture
def learned(project: Path, run: Cli, tmp_path: Path) -> Path:
    assert run("learn", str(shop_session().write(tmp_path / "s.jsonl"))).exit_code == 0
    return project


@pytest.mark.parametrize("agent", sorted(EVENTS))
def test_pre_task_hook_injects_context(learned: Path, agent: str) -> None:
    payload = {"prompt": "the checkout test fails again", "cwd": str(learned), "hook_event_name": EVENTS[agent]}
    done = _hook("pre", agent, json.dumps(payload), learned)
    assert done.returncode == 0 and done.stderr == ""
    output = json.loads(done.stdout)
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == EVENTS[agent]
    assert specific["additionalContext"].startswith("## Project expertise: for this task")
    assert "assert 1999 == 2000" in specific["additionalContext"]  # the checkout test's own failure


def test_cursor_gets_its_own_shape(learned: Path) -> None:
    done = _hook("pre", "cursor", json.dumps({"prompt": "fix the checkout test", "cwd": str(learned)}), learned)
    assert json.loads(done.stdout)["additional_context"].startswith("## Project expertise")


def test_session_start_without_a_prompt(learned: Path, run: Cli) -> None:
    run("add", "general", "best_practices", "Run the whole suite before pushing")
    done = _hook("pre", "claude-code", json.dumps({"hook_event_name": "SessionStart", "cwd": str(learned)}), learned)
    context = json.loads(done.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart" and "Run the whole suite" in context["additionalContext"]


def test_pre_hook_is_silent_outside_a_project_and_on_cold_start(tmp_path: Path, project: Path) -> None:
    assert _hook("pre", "claude-code", json.dumps({"prompt": "x", "cwd": str(tmp_path)}), tmp_path).stdout == ""
    cold = _hook("pre", "claude-code", json.dumps({"prompt": "add a migration", "cwd": str(project)}), project)
    assert cold.returncode == 0 and cold.stdout == "" and cold.stderr == ""


@pytest.mark.parametrize(
    "stdin",
    ["not json", "[1, 2]", '{"prompt": 5, "cwd": 7}', "\x00\xff garbage", '{"cwd": "/nonexistent/dir"}'],
)
def test_bad_stdin_never_breaks_the_agent(learned: Path, stdin: str) -> None:
    done = _hook("pre", "claude-code", stdin, learned)
    # A cwd that is no path falls back to the hook's own directory: its general notes may render, as JSON.
    assert done.returncode == 0 and (done.stdout == "" or "hookSpecificOutput" in json.loads(done.stdout))
    assert done.stderr.count("\n") <= 1


def wait_for_rebuild(root: Path) -> None:
    """Until the hook's detached cache rebuild (if any) is done."""
    marker = root / ".git" / "expertise" / "cache" / "rebuilding"
    for _ in range(600):
        if not marker.exists():
            return
        time.sleep(0.05)
    raise AssertionError("the background rebuild did not finish")


def test_broken_yaml_never_breaks_the_agent(learned: Path) -> None:
    payload = json.dumps({"prompt": "fix the checkout test", "cwd": str(learned)})
    good = _hook("pre", "claude-code", payload, learned).stdout
    assert "1999" in good  # the testing domain's learned failure
    (learned / ".expertise" / "testing.yaml").write_text("domain: testing\npatterns: [HOSTILE, unclosed\n")
    # The first prompt after the edit reads the last good state (the rebuild runs detached), never the file.
    first = _hook("pre", "claude-code", payload, learned)
    assert first.returncode == 0 and first.stdout == good and "HOSTILE" not in first.stdout
    wait_for_rebuild(learned)
    done = _hook("pre", "claude-code", payload, learned)
    assert done.returncode == 0 and done.stderr.count("\n") == 1 and "testing.yaml" in done.stderr
    assert "1999" not in done.stdout  # the broken domain's entries are out; the other domains still answer
    assert done.stdout != good


def test_post_session_hook_learns_and_commits(project: Path, tmp_path: Path) -> None:
    transcript = shop_session().write(tmp_path / "s.jsonl")
    payload = {"transcript_path": str(transcript), "cwd": str(project), "hook_event_name": "SessionEnd"}
    done = _hook("post", "claude-code", json.dumps(payload), project)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""  # queued; the agent goes on
    assert wait_idle(str(project / ".expertise"))  # the detached learner did it
    assert "learned 3 new, 0 seen again, 3 held" in Path(log_path(str(project / ".expertise"))).read_text()
    assert "learn" in git(project, "log", "-1", "--format=%s")


def test_post_hook_without_git_or_transcript_never_breaks(project: Path, tmp_path: Path) -> None:
    done = _hook("post", "claude-code", json.dumps({"cwd": str(project)}), project)
    assert done.returncode == 0 and done.stdout == "" and "no transcript_path" in done.stderr
    transcript = shop_session().write(tmp_path / "s.jsonl")
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin"), "GIT_PYTHON_REFRESH": "quiet"}
    payload = {"transcript_path": str(transcript), "cwd": str(project)}
    no_git = _hook("post", "claude-code", json.dumps(payload), project, env=env)
    assert no_git.returncode == 0 and no_git.stdout == "" and no_git.stderr == ""
    assert wait_idle(str(project / ".expertise"))  # the learner inherited the PATH without git
    assert "assert 1999 == 2000" in (project / ".expertise" / "testing.yaml").read_text()  # learned, commit deferred
    assert "git is not available" in (project / ".git" / "expertise-pending.jsonl").read_text()


EXISTING = {
    "claude-code": {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}]},
    },
    "codex": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}},
    "gemini": {
        "theme": "dark",
        "hooks": {
            "BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "./guard.sh"}]}]
        },
    },
    "cursor": {
        "version": 1,
        "hooks": {"afterFileEdit": [{"command": "./format.sh"}], "stop": [{"command": "./mine.sh"}]},
    },
}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_install_merges_twice_is_a_no_op_and_uninstall_removes_only_ours(project: Path, run: Cli, agent: str) -> None:
    path = project / AGENTS[agent].settings
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(EXISTING[agent], indent=4) + "\n")
    first = run("hooks", "install", "--agent", agent)
    assert first.exit_code == 0 and "installed" in first.stdout
    data = json.loads(path.read_text())
    commands = json.dumps(data)
    wanted = 1 + (AGENTS[agent].prompt_event is not None) + len(AGENTS[agent].end_events)
    assert commands.count(f"--agent {agent}") == wanted
    for key, value in EXISTING[agent].items():
        if key != "hooks":
            assert data[key] == value
    for event, entries in EXISTING[agent]["hooks"].items():
        assert all(entry in data["hooks"][event] for entry in entries)
    assert path.read_text().startswith("{\n    ")  # the file's own indentation is kept
    before = path.read_bytes()
    again = run("hooks", "install", "--agent", agent)
    assert "nothing changed" in again.stdout and path.read_bytes() == before
    removed = run("hooks", "uninstall", "--agent", agent)
    assert removed.exit_code == 0 and "removed" in removed.stdout
    assert json.loads(path.read_text()) == EXISTING[agent]


def test_install_into_a_fresh_project_and_init_agent(repo: Path, run: Cli) -> None:
    result = run("init", "--agent", "claude-code")
    assert result.exit_code == 0 and "installed claude-code hooks" in result.stdout
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit", "SessionEnd"}
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == "command -v expertise-hook >/dev/null 2>&1 && expertise-hook pre --agent claude-code || true"
    assert command == hook_command("pre", "claude-code")
    assert "once per clone: start `claude`" in result.stdout and "expertise hooks doctor" in result.stdout
    assert run("hooks", "uninstall").exit_code == 0
    assert "hooks" not in json.loads((repo / ".claude" / "settings.json").read_text())


def test_install_refuses_a_broken_settings_file(project: Path, run: Cli) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {,}')
    result = run("hooks", "install", "--agent", "claude-code")
    assert result.exit_code == 1 and "settings.json:1: not valid JSON" in result.stderr
    assert path.read_text() == '{"hooks": {,}'


def test_the_hook_path_imports_nothing_heavy(learned: Path) -> None:
    probe = (
        "import sys, io, json;"
        "sys.stdin = io.StringIO(json.dumps({'prompt': 'fix the checkout test', 'cwd': sys.argv[1]}));"
        "from expertise_kit.hook import main; main(['pre', '--agent', 'claude-code']);"
        "heavy = [m for m in ('git', 'pydantic', 'click', 'ruamel.yaml', 'ruamel') if m in sys.modules];"
        "sys.stderr.write('HEAVY=' + ','.join(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(learned)], capture_output=True, text=True, check=False
    )
    assert "Project expertise" in done.stdout
    assert done.stderr.endswith("HEAVY="), done.stderr


def test_the_first_prompt_after_a_pull_imports_nothing_heavy_either(learned: Path) -> None:
    """A domain file changed outside expertise (a pull, a checkout, a hand edit): the hook answers from the
    last good cache and leaves the YAML to a detached rebuild, so it parses nothing and imports nothing
    heavy; the next prompt has the change."""
    path = learned / ".expertise" / "testing.yaml"
    path.write_text(path.read_text().replace("patterns: []", "patterns:\n  - Pulled, run the checkout tests twice"))
    probe = (
        "import sys, io, json;"
        "sys.stdin = io.StringIO(json.dumps({'prompt': 'fix the checkout test', 'cwd': sys.argv[1]}));"
        "from expertise_kit.hook import main; main(['pre', '--agent', 'claude-code']);"
        "heavy = [m for m in ('git', 'pydantic', 'click', 'ruamel.yaml', 'ruamel', 'yaml') if m in sys.modules];"
        "sys.stderr.write('HEAVY=' + ','.join(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(learned)], capture_output=True, text=True, check=False
    )
    assert "Project expertise" in done.stdout and "Pulled" not in done.stdout
    assert done.stderr.endswith("HEAVY="), done.stderr
    wait_for_rebuild(learned)
    again = _hook("pre", "claude-code", json.dumps({"prompt": "fix the checkout test", "cwd": str(learned)}), learned)
    assert "Pulled, run the checkout tests twice" in again.stdout


SNIPPETS = {
    "claude-code": "claude-code.settings.json",
    "codex": "codex.hooks.json",
    "gemini": "gemini.settings.json",
    "cursor": "cursor.hooks.json",
}


@pytest.mark.parametrize("agent", sorted(SNIPPETS))
def test_the_snippets_in_hooks_dir_are_what_install_writes(tmp_path: Path, agent: str) -> None:
    from expertise_kit.agents.installer import install_hooks

    written = install_hooks(tmp_path, agent).path.read_text()
    snippet = Path(__file__).resolve().parents[1] / "hooks" / SNIPPETS[agent]
    assert snippet.read_text() == written


def test_post_hook_waits_for_a_transcript_still_being_flushed(project: Path, tmp_path: Path) -> None:
    import threading
    import time

    full = shop_session().write(tmp_path / "full.jsonl").read_text().splitlines(keepends=True)
    transcript = tmp_path / "late.jsonl"
    transcript.write_text("".join(full[:4]))  # the agent has not written the rest yet

    def finish_writing() -> None:
        time.sleep(0.5)
        with open(transcript, "a") as handle:
            handle.write("".join(full[4:]))

    writer = threading.Thread(target=finish_writing)
    writer.start()
    payload = {"transcript_path": str(transcript), "cwd": str(project)}
    done = _hook("post", "claude-code", json.dumps(payload), project)
    writer.join()
    assert done.returncode == 0
    assert wait_idle(str(project / ".expertise"))
    # Everything, including what arrived after the hook started.
    assert "learned 3 new, 0 seen again, 3 held" in Path(log_path(str(project / ".expertise"))).read_text()


def test_gemini_gets_its_time_limits_in_milliseconds(project: Path) -> None:
    """Gemini CLI reads `timeout` in milliseconds: 10 would kill the hook at once, silently."""
    from expertise_kit.agents.installer import install_hooks

    def limits(settings: Path) -> set[int]:
        events = json.loads(settings.read_text())["hooks"].values()
        return {hook["timeout"] for groups in events for group in groups for hook in group["hooks"]}

    path = install_hooks(project, "gemini").path
    assert limits(path) == {10_000, 30_000}
    settings = json.loads(path.read_text())
    settings["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] = 10  # an install made before the fix
    path.write_text(json.dumps(settings, indent=2) + "\n")
    assert install_hooks(project, "gemini").changed
    assert json.loads(path.read_text())["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] == 10_000
    assert limits(install_hooks(project, "claude-code").path) == {10, 30}  # seconds there, and under SessionEnd's 60
