"""Each agent's hook protocol as its CLI really speaks it: the machine-independent command, the detached
learner at session end, sessions that grow, Gemini's stdout, Cursor's payload, Codex's positional trust,
and `expertise hooks doctor` on broken setups."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import ClaudeSession, shop_session
from conftest import Cli, git, settle

from expertise_kit.agents.doctor import codex_hook_hash
from expertise_kit.agents.installer import AGENTS, _legacy_commands, hook_command, install_hooks
from expertise_kit.hook import _without_hook_context
from expertise_kit.learning.background import STALE_SECONDS, enqueue, failed, log_path, pending, wait_idle

BIN = str(Path(sys.executable).parent)  # where `expertise-hook` is installed with this interpreter
NO_UPSTREAM = (
    "fatal: The current branch fix/x has no upstream branch.\nTo push the current branch, use\n\n"
    " git push --set-upstream origin fix/x"
)


def _path_without_us() -> str:
    """PATH without any directory holding an `expertise-hook` (this venv's, or a pipx install's)."""
    parts = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(p for p in parts if p and p != BIN and not os.path.exists(os.path.join(p, "expertise-hook")))


def _shell(command: str, payload: dict[str, object], cwd: Path, path: str) -> subprocess.CompletedProcess[str]:
    """Run an installed hook command the way the agents do: through the shell, JSON on stdin."""
    env = {**os.environ, "PATH": path}
    return subprocess.run(
        ["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True, cwd=cwd, env=env,
        timeout=120, check=False,
    )  # fmt: skip


def _hook(mode: str, agent: str, payload: dict[str, object], cwd: Path) -> subprocess.CompletedProcess[str]:
    return _shell(hook_command(mode, agent), payload, cwd, os.pathsep.join([BIN, _path_without_us()]))


def _expertise(project: Path) -> str:
    return str(project / ".expertise")


@pytest.fixture
def learned(project: Path, run: Cli, tmp_path: Path) -> Path:
    assert run("learn", str(shop_session().write(tmp_path / "s.jsonl"))).exit_code == 0
    return project


# -- the command in the committed settings -------------------------------------------------------------


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_the_committed_command_names_no_path_of_this_machine(project: Path, agent: str) -> None:
    text = install_hooks(project, agent).path.read_text()
    assert sys.executable not in text and BIN not in text and str(Path.home()) not in text
    assert f"expertise-hook pre --agent {agent}" in text and f"expertise-hook post --agent {agent}" in text


def test_a_teammate_without_expertise_kit_sees_nothing(learned: Path) -> None:
    payload = {"prompt": "fix the checkout test", "cwd": str(learned), "hook_event_name": "UserPromptSubmit"}
    for mode in ("pre", "post"):
        done = _shell(hook_command(mode, "claude-code"), payload, learned, _path_without_us())
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_installed_command_finds_expertise_hook_on_path_and_injects(learned: Path) -> None:
    payload = {"prompt": "fix the checkout test", "cwd": str(learned), "hook_event_name": "UserPromptSubmit"}
    done = _hook("pre", "claude-code", payload, learned)
    assert done.returncode == 0, done.stderr
    assert "Project expertise" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_hook_stays_silent_outside_an_expertise_project(tmp_path: Path) -> None:
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    for mode in ("pre", "post"):
        payload = {"prompt": "hi", "cwd": str(elsewhere), "transcript_path": str(tmp_path / "none.jsonl")}
        done = _hook(mode, "claude-code", payload, elsewhere)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_install_replaces_an_earlier_versions_venv_command(project: Path, run: Cli) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    old = _legacy_commands("pre", "claude-code", "/home/someone/.venv/bin/python")[0]
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": old}]}]}}))
    assert run("hooks", "install", "--agent", "claude-code").exit_code == 0
    data = json.loads(path.read_text())
    commands = [h["command"] for g in data["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert commands == [hook_command("pre", "claude-code")]  # replaced in place, not added beside it
    assert "/home/someone" not in path.read_text()


def test_claude_codes_session_end_limit_is_within_its_60_s(project: Path) -> None:
    data = json.loads(install_hooks(project, "claude-code").path.read_text())
    assert all(h["timeout"] <= 60 for g in data["hooks"]["SessionEnd"] for h in g["hooks"])


def test_install_says_what_is_left_to_do(project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_without_us())
    result = run("hooks", "install", "--agent", "codex")
    assert result.exit_code == 0
    assert "`expertise-hook` is not on PATH" in result.stderr
    assert "trust the hooks" in result.stdout and "expertise hooks doctor --agent codex" in result.stdout
    cursor = run("hooks", "install", "--agent", "cursor")
    assert "no tool results" in cursor.stdout


# -- Codex trusts hooks by position ---------------------------------------------------------------------


def test_codex_uninstall_leaves_an_empty_group_where_a_users_later_group_depends_on_it(project: Path) -> None:
    path = project / ".codex" / "hooks.json"
    install_hooks(project, "codex")
    data = json.loads(path.read_text())
    mine = {"hooks": [{"type": "command", "command": "notify-send started", "timeout": 5}]}
    data["hooks"]["SessionStart"].append(mine)  # the user's own hook, after ours: trusted at index 1
    path.write_text(json.dumps(data, indent=2))
    from expertise_kit.agents.installer import uninstall_hooks

    assert uninstall_hooks(project, "codex").changed
    after = json.loads(path.read_text())
    assert after["hooks"] == {"SessionStart": [{"hooks": []}, mine]}  # index 1 still the user's


def test_other_agents_uninstall_drops_the_emptied_group(project: Path) -> None:
    from expertise_kit.agents.installer import uninstall_hooks

    path = install_hooks(project, "claude-code").path
    data = json.loads(path.read_text())
    mine = {"hooks": [{"type": "command", "command": "echo hi"}]}
    data["hooks"]["SessionStart"].append(mine)
    path.write_text(json.dumps(data))
    uninstall_hooks(project, "claude-code")
    assert json.loads(path.read_text())["hooks"] == {"SessionStart": [mine]}


# -- Gemini CLI and Cursor payloads --------------------------------------------------------------------


def test_gemini_gets_a_json_object_whenever_the_hook_has_nothing_to_print(learned: Path, tmp_path: Path) -> None:
    """Gemini CLI shows a hook's stderr to the user when its stdout is empty."""
    (learned / ".expertise" / "api.yaml").write_text("domain: api\nfoo: [\n")  # a broken file: a stderr note
    settle(learned)  # once rebuilt: the first prompt after the edit reads the last good state, silently
    payload = {"prompt": "nothing relevant at all", "cwd": str(learned), "hook_event_name": "BeforeAgent"}
    done = _hook("pre", "gemini", payload, learned)
    assert done.returncode == 0 and "api.yaml" in done.stderr
    assert json.loads(done.stdout) == {} or "hookSpecificOutput" in json.loads(done.stdout)
    quiet = _hook("post", "gemini", {"cwd": str(learned)}, learned)  # no transcript: a note, and `{}`
    assert json.loads(quiet.stdout) == {} and "transcript" in quiet.stderr
    other = _hook("post", "claude-code", {"cwd": str(learned)}, learned)
    assert other.stdout == ""


def test_geminis_hook_context_is_not_taken_for_the_users_task() -> None:
    prompt = "<hook_context>## Project expertise\nmigrations and SQL indexes</hook_context>\n\nFix the checkout test"
    assert _without_hook_context(prompt) == "Fix the checkout test"
    assert _without_hook_context("a <hook_context>unclosed") == "a <hook_context>unclosed"


def test_cursor_names_its_project_in_workspace_roots(learned: Path, tmp_path: Path) -> None:
    payload = {"workspace_roots": [str(learned)], "hook_event_name": "sessionStart", "conversation_id": "c-1"}
    done = _hook("pre", "cursor", payload, tmp_path)  # run from elsewhere: only the payload names the project
    assert done.returncode == 0, done.stderr
    assert "Project expertise" in json.loads(done.stdout)["additional_context"]


def test_cursors_missing_transcript_is_said_not_swallowed(project: Path) -> None:
    done = _hook("post", "cursor", {"workspace_roots": [str(project)], "transcript_path": None}, project)
    assert done.returncode == 0 and done.stdout == ""
    assert "no tool results" in done.stderr


# -- learning in the background ------------------------------------------------------------------------


def _push_session(session: str, *, fixed: bool) -> ClaudeSession:
    s = ClaudeSession(session)
    s.prompt("Ship the discount rounding fix")
    s.bash("git push", NO_UPSTREAM, exit_code=128)
    if fixed:
        s.bash("git push --set-upstream origin fix/x", "branch 'fix/x' set up to track 'origin/fix/x'.")
    s.say("Done.")
    return s


def _post(project: Path, session: str, transcript: Path, event: str = "Stop") -> None:
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": str(project), "hook_event_name": event}
    done = _hook("post", "codex", payload, project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert wait_idle(_expertise(project), timeout=120)


def test_the_post_hook_returns_while_learning_waits_for_the_store(project: Path, run: Cli, tmp_path: Path) -> None:
    """The agent never waits on learning: with the store's lock held by someone else, the post hook still
    returns at once, its session queued; the learner learns it once the lock is free."""
    from expertise_kit.project import find_project
    from expertise_kit.store import Store

    transcript = shop_session().write(tmp_path / "s.jsonl")
    payload = {"session_id": "f6f6-1", "transcript_path": str(transcript), "cwd": str(project)}
    head = git(project, "rev-parse", "HEAD")
    with Store(find_project(project)).locked():
        done = _hook("post", "claude-code", payload, project)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert git(project, "rev-parse", "HEAD") == head and len(pending(_expertise(project))) == 1
    assert wait_idle(_expertise(project), timeout=120)
    assert git(project, "rev-parse", "HEAD") != head and pending(_expertise(project)) == []


def _push_entries(run: Cli) -> list[dict[str, object]]:
    entries = json.loads(run("show", "general", "--json").stdout)["entries"]
    return [e for e in entries if "git push" in str(e.get("issue", ""))]


def test_a_session_that_grows_is_learned_again_and_counted_once(project: Path, run: Cli, tmp_path: Path) -> None:
    """Codex's Stop fires after every turn: turn 1 fails, turn 2 finds the fix."""
    session = "a1a1a1a1-0000-4000-8000-000000000001"
    transcript = tmp_path / "rollout.jsonl"
    _push_session(session, fixed=False).write(transcript)
    _post(project, session, transcript)
    assert _push_entries(run) == []  # seen once with no fix: held back
    _push_session(session, fixed=True).write(transcript)  # the same session, one turn longer
    _post(project, session, transcript)
    (entry,) = _push_entries(run)
    assert "set-upstream" in str(entry["solution"]) and entry.get("recurrence", 1) == 1
    head = git(project, "rev-parse", "HEAD")
    _post(project, session, transcript)  # the next Stop, nothing new: no commit
    assert git(project, "rev-parse", "HEAD") == head


def test_a_fix_found_later_in_a_counted_session_fills_in_the_entry(project: Path, run: Cli, tmp_path: Path) -> None:
    first, second = "b2b2b2b2-0000-4000-8000-000000000001", "b2b2b2b2-0000-4000-8000-000000000002"
    for session in (first, second):  # two sessions fail the same way with no fix: stored, recurrence 2
        _post(project, session, _push_session(session, fixed=False).write(tmp_path / f"{session}.jsonl"))
    (entry,) = _push_entries(run)
    assert entry.get("recurrence") == 2 and not entry.get("solution")
    _post(project, second, _push_session(second, fixed=True).write(tmp_path / f"{second}.jsonl"))
    (entry,) = _push_entries(run)
    assert entry.get("recurrence") == 2 and "set-upstream" in str(entry["solution"])


def test_a_queued_session_survives_its_learner_and_the_next_session_start_resumes_it(
    project: Path, tmp_path: Path
) -> None:
    transcript = shop_session().write(tmp_path / "s.jsonl")
    job = enqueue(_expertise(project), "claude-code", {"session_id": "c3c3-1"}, str(transcript))  # learner killed
    old = time.time() - STALE_SECONDS - 5
    os.utime(job, (old, old))
    head = git(project, "rev-parse", "HEAD")
    done = _hook("pre", "claude-code", {"cwd": str(project), "hook_event_name": "SessionStart"}, project)
    assert done.returncode == 0
    assert wait_idle(_expertise(project), timeout=120)
    assert pending(_expertise(project)) == [] and git(project, "rev-parse", "HEAD") != head
    assert "learned 3 new, 0 seen again, 3 held" in Path(log_path(_expertise(project))).read_text()


def test_a_session_that_cannot_be_learned_is_set_aside_and_reported(project: Path, run: Cli, tmp_path: Path) -> None:
    transcript = shop_session().write(tmp_path / "gone.jsonl")
    session = "d4d4d4d4-0000-4000-8000-000000000001"
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": str(project)}
    enqueue(_expertise(project), "claude-code", payload, str(transcript))
    transcript.unlink()  # deleted before the learner got to it
    from expertise_kit.learning.background import drain

    assert drain(_expertise(project), nice=False) == 0
    (aside,) = failed(_expertise(project))
    assert "transcript is gone" in json.loads(Path(aside).read_text())["error"]
    assert "failed:" in Path(log_path(_expertise(project))).read_text()
    install_hooks(project, "claude-code")
    report = run("hooks", "doctor", "--agent", "claude-code", "--json")
    learning = next(c for c in json.loads(report.stdout)["agents"][0]["checks"] if c["name"] == "learning")
    assert learning["status"] == "warn" and "could not be learned" in learning["detail"]


def test_a_broken_job_file_is_set_aside_not_retried_forever(project: Path) -> None:
    from expertise_kit.learning.background import drain, queue_dir

    os.makedirs(queue_dir(_expertise(project)), exist_ok=True)
    Path(queue_dir(_expertise(project)), "junk.json").write_text("{not json")
    assert drain(_expertise(project), nice=False) == 0
    assert pending(_expertise(project)) == [] and len(failed(_expertise(project))) == 1


# -- hooks doctor ----------------------------------------------------------------------------------------


def _doctor(run: Cli, agent: str) -> tuple[int, dict[str, dict[str, str]]]:
    result = run("hooks", "doctor", "--agent", agent, "--json")
    (report,) = json.loads(result.stdout)["agents"]
    return result.exit_code, {c["name"]: c for c in report["checks"]}


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([BIN, _path_without_us()]))


def test_doctor_reports_a_settings_file_that_does_not_parse(project: Path, run: Cli, on_path: None) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{\n  "hooks": {,}\n}')
    code, checks = _doctor(run, "claude-code")
    assert code == 1 and checks["config"]["status"] == "fail" and "line 2" in checks["config"]["detail"]
    plain = run("hooks", "doctor", "--agent", "claude-code")
    assert "fail config" in plain.stdout and plain.stderr.count("\n") == 1


def test_doctor_reports_missing_hooks_and_no_agent_at_all(project: Path, run: Cli, on_path: None) -> None:
    nothing = run("hooks", "doctor")
    assert nothing.exit_code == 1 and "no agent's hooks are installed" in nothing.stderr
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {"PreToolUse": []}}')
    code, checks = _doctor(run, "claude-code")
    assert code == 1 and "no expertise_kit hooks" in checks["hooks"]["detail"]


def test_doctor_catches_timeouts_in_the_wrong_unit(project: Path, run: Cli, on_path: None) -> None:
    path = install_hooks(project, "gemini").path
    data = json.loads(path.read_text())
    data["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"] = 10  # seconds, where Gemini reads ms
    path.write_text(json.dumps(data))
    code, checks = _doctor(run, "gemini")
    assert code == 1 and checks["timeouts"]["status"] == "fail"
    assert (
        "milliseconds" in checks["timeouts"]["detail"]
        and "BeforeAgent has 10, expected 10000" in (checks["timeouts"]["detail"])
    )


def test_doctor_says_when_the_command_is_not_on_path(project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    install_hooks(project, "claude-code")
    monkeypatch.setenv("PATH", _path_without_us())
    code, checks = _doctor(run, "claude-code")
    assert code == 1 and checks["command"]["status"] == "fail" and "round-trip" not in checks


def test_doctor_runs_the_pre_hook_and_catches_a_broken_one(
    project: Path, run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_hooks(project, "claude-code")
    fake = tmp_path / "bin" / "expertise-hook"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Traceback: something broke'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", os.pathsep.join([str(fake.parent), _path_without_us()]))
    code, checks = _doctor(run, "claude-code")
    assert code == 1 and checks["round-trip"]["status"] == "fail" and "not JSON" in checks["round-trip"]["detail"]
    monkeypatch.setenv("PATH", os.pathsep.join([BIN, _path_without_us()]))
    code, checks = _doctor(run, "claude-code")
    assert checks["round-trip"]["status"] == "ok" and checks["command"]["detail"].endswith("expertise-hook")


def _codex_config(project: Path, home: Path, hashes: dict[str, str] | None) -> None:
    lines = [f'[projects."{os.path.realpath(project)}"]', 'trust_level = "trusted"']
    for key, value in (hashes or {}).items():
        lines += [f'[hooks.state."{key}"]', f'trusted_hash = "{value}"']
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def test_doctor_reads_codexs_trust(
    project: Path, run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_path: None
) -> None:
    pytest.importorskip("tomllib")
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    path = install_hooks(project, "codex").path
    _, checks = _doctor(run, "codex")
    assert checks["trust"]["status"] == "fail" and "does not exist" in checks["trust"]["detail"]
    _codex_config(project, home, None)
    _, checks = _doctor(run, "codex")
    assert "has not trusted our SessionStart, UserPromptSubmit, Stop" in checks["trust"]["detail"]
    data = json.loads(path.read_text())
    hashes = {
        f"{os.path.realpath(path)}:{snake}:0:0": codex_hook_hash(event, data["hooks"][event][0],
                                                                 data["hooks"][event][0]["hooks"][0])
        for event, snake in (("SessionStart", "session_start"), ("UserPromptSubmit", "user_prompt_submit"),
                             ("Stop", "stop"))
    }  # fmt: skip
    _codex_config(project, home, hashes)
    _, checks = _doctor(run, "codex")
    assert checks["trust"]["status"] == "ok", checks["trust"]
    stale = dict(hashes, **{next(iter(hashes)): "sha256:" + "0" * 64})  # trusted before our command changed
    _codex_config(project, home, stale)
    _, checks = _doctor(run, "codex")
    assert checks["trust"]["status"] == "fail" and "older command" in checks["trust"]["detail"]
    (home / "config.toml").write_text("[projects\n")
    _, checks = _doctor(run, "codex")
    assert "can't be read" in checks["trust"]["detail"]


def test_doctor_reads_geminis_folder_trust(
    project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch, on_path: None
) -> None:
    install_hooks(project, "gemini")
    monkeypatch.delenv("GEMINI_CLI_TRUST_WORKSPACE", raising=False)
    _, checks = _doctor(run, "gemini")
    assert checks["trust"]["status"] == "fail"
    folders = Path(os.environ["HOME"]) / ".gemini" / "trustedFolders.json"
    folders.parent.mkdir(exist_ok=True)
    folders.write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    code, checks = _doctor(run, "gemini")
    assert checks["trust"]["status"] == "ok"
    assert checks["timeouts"]["status"] == "ok" and checks["round-trip"]["status"] == "ok"


def test_doctor_says_cursor_cannot_learn(project: Path, run: Cli, on_path: None) -> None:
    install_hooks(project, "cursor")
    _, checks = _doctor(run, "cursor")
    assert checks["learning"]["status"] == "warn" and "no tool results" in checks["learning"]["detail"]
    assert checks["round-trip"]["status"] == "ok"


def test_a_job_that_fails_is_retried_by_the_next_learner_and_set_aside_after_three(
    project: Path, tmp_path: Path
) -> None:
    from expertise_kit.learning.background import MAX_ATTEMPTS, drain

    unreadable = tmp_path / "t.jsonl"
    unreadable.write_text("{}\n")  # no agent's transcript: learning it fails
    enqueue(_expertise(project), "claude-code", {"session_id": "e5e5-1"}, str(unreadable))
    for attempt in range(1, MAX_ATTEMPTS):
        assert drain(_expertise(project), nice=False) == 0
        (job,) = pending(_expertise(project))  # one try per learner, then left for the next
        assert json.loads(Path(job).read_text())["attempts"] == attempt
    drain(_expertise(project), nice=False)
    assert pending(_expertise(project)) == [] and len(failed(_expertise(project))) == 1
    log = Path(log_path(_expertise(project))).read_text()
    assert log.count("failed:") == MAX_ATTEMPTS and "can't tell which agent wrote" in log


def test_a_fifo_for_a_transcript_is_refused_without_opening_it(project: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    done = _hook("post", "claude-code", {"cwd": str(project), "transcript_path": str(fifo)}, project)
    assert (done.returncode, done.stdout) == (0, "") and "not a regular file" in done.stderr
    assert pending(_expertise(project)) == []


def test_a_transcript_made_a_fifo_after_it_was_queued_is_set_aside_and_the_queue_goes_on(
    project: Path, tmp_path: Path
) -> None:
    """The post hook refuses a FIFO, but the path may become one before the learner gets to it: read, it
    would block the learner, and with it every later session, for ever."""
    from expertise_kit.learning.background import drain

    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text("{}\n")
    enqueue(_expertise(project), "claude-code", {"session_id": "f6f6-1"}, str(swapped))
    swapped.unlink()
    os.mkfifo(swapped)  # nobody will ever write to it
    good = shop_session().write(tmp_path / "good.jsonl")
    enqueue(_expertise(project), "claude-code", {"session_id": "f6f6-2"}, str(good))
    head = git(project, "rev-parse", "HEAD")
    assert drain(_expertise(project), nice=False) == 1  # returned: the good session learned, the FIFO not read
    (aside,) = failed(_expertise(project))
    assert "not a regular file" in json.loads(Path(aside).read_text())["error"]
    assert pending(_expertise(project)) == [] and git(project, "rev-parse", "HEAD") != head


def test_doctor_says_whether_this_clone_has_the_merge_driver(project: Path, run: Cli, on_path: None) -> None:
    """Git config does not travel with a clone: `init` registers the driver; doctor says when it is not."""
    install_hooks(project, "claude-code")

    def driver() -> dict[str, str]:
        checks = json.loads(run("hooks", "doctor", "--agent", "claude-code", "--json").stdout)["project"]
        return dict(next(c for c in checks if c["name"] == "merge-driver"))

    assert driver()["status"] == "ok"  # `init` registered it
    git(project, "config", "--unset", "merge.expertise.driver")
    assert driver()["status"] == "warn" and "run `expertise init` once here" in driver()["detail"]
    gone = "/gone/venv/bin/python -I -m expertise_kit merge-driver %O %A %B %P"
    git(project, "config", "merge.expertise.driver", gone)
    result = run("hooks", "doctor", "--agent", "claude-code", "--json")
    assert result.exit_code == 1 and json.loads(result.stdout)["project"][0]["status"] == "fail"
    assert run("init").exit_code == 0 and driver()["status"] == "ok"  # init on the clone mends it


def test_doctor_says_what_the_shared_layer_holds(project: Path, run: Cli, on_path: None) -> None:
    install_hooks(project, "claude-code")

    def shared() -> dict[str, str]:
        checks = json.loads(run("hooks", "doctor", "--agent", "claude-code", "--json").stdout)["project"]
        return dict(next(c for c in checks if c["name"] == "shared-layer"))

    assert shared()["status"] == "ok" and "not synced with any remote" in shared()["detail"]
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"x", cwd=project, capture_output=True,
                          check=True).stdout.decode().strip()  # fmt: skip
    git(project, "update-ref", "refs/expertise/shared", blob)
    assert shared()["status"] == "fail" and "git update-ref -d" in shared()["detail"]
    assert run("hooks", "doctor", "--agent", "claude-code").exit_code == 1
    git(project, "update-ref", "-d", "refs/expertise/shared")
    assert shared()["status"] == "ok" and "nothing published" in shared()["detail"]


def test_a_job_taken_while_the_queue_is_listed_is_not_an_error(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A learner finishes a job between the listing of the queue and the look at its time: `pending` (which
    `wait_idle` and the learner call) leaves it out instead of raising FileNotFoundError."""
    import expertise_kit.learning.background as background

    transcript = tmp_path / "s.jsonl"
    transcript.write_text("{}\n")
    first = enqueue(_expertise(project), "claude-code", {"session_id": "f6f6-1"}, str(transcript))
    second = enqueue(_expertise(project), "claude-code", {"session_id": "f6f6-2"}, str(transcript))
    listed = list(os.scandir(os.path.dirname(first)))
    os.remove(first)  # taken by a learner after the listing
    monkeypatch.setattr(background.os, "scandir", lambda directory: iter(listed))
    assert pending(_expertise(project)) == [second]
