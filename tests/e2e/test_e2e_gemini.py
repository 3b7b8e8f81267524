"""End to end with the real Gemini CLI, headless, against a scripted Gemini API on 127.0.0.1.

`expertise init --agent gemini` writes `.gemini/settings.json` into a temp git repo; `gemini -p` runs two
sessions in which the (fake) model runs a failing shell command, then its fix, and ends its turn. The
tests check that our session-start context reached the model's request, that the failure was learned with
its fix (by the detached learner the SessionEnd hook starts) in one commit touching only `.expertise/`,
that the user's staged change survived, that the second session raised the failure's recurrence, and that
a third session, whose hooks have a note to make, shows the user none of it. The sessions run once, in a
module fixture; each step is a test of its own. The hooks run `expertise-hook` from PATH: this
interpreter's.

Gemini CLI reads a project's `.gemini/settings.json` (our hooks) only in a trusted folder. Headless, an
untrusted folder is a fatal error (exit 55) unless `--skip-trust` is given, and that flag trusts the
folder too late for the project settings, which were read before it: the session runs without our hooks.
The test trusts the folder the way a CI job would, with `GEMINI_CLI_TRUST_WORKSPACE=true` (a user does it
once, in the first interactive run, which writes `~/.gemini/trustedFolders.json`).

The CLI is installed with npm into a cache (``$EXPERTISE_E2E_CACHE/npm/gemini-cli-<version>``, by default
under ``~/.cache/expertise-e2e``), at the pinned version below. Without node and npm, or when the install
fails (no registry), the tests are skipped, never failed. No traffic leaves 127.0.0.1: the model is the fake
server (`GOOGLE_GEMINI_BASE_URL`), and auto-update, usage statistics and telemetry are off in the temp
HOME's `~/.gemini/settings.json`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_gemini import FakeGemini, _is_agent_turn, _results_since_prompt
from npm_env import CACHE, NPM_TIMEOUT, REAL_HOME, SESSION_TIMEOUT
from ruamel.yaml import YAML

from expertise_kit.learning.background import wait_idle

GEMINI_PACKAGE = "@google/gemini-cli"
GEMINI_VERSION = "0.61.0"
MODEL = "gemini-2.5-flash"

FAILING = 'python3 -c "import nosuchmodule_xyz"'  # fails: the module lives in vendor/
FIX = 'PYTHONPATH=vendor python3 -c "import nosuchmodule_xyz"'
SEEDED = "Vendor optional imports through requirements-extra.txt before importing them (marker heron-quartz-23)."
STAGED = "Staged by the user, not to be committed by anyone else.\n"
IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.test",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.test",
}


# -- the CLI ----------------------------------------------------------------------------------------


def _prefix() -> Path:
    return CACHE / f"gemini-cli-{GEMINI_VERSION}"


def _entry() -> Path:
    return _prefix() / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"


def _installed_version() -> str | None:
    manifest = _prefix() / "node_modules" / "@google" / "gemini-cli" / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def _install() -> Path:
    """The pinned CLI's entry script, installed once into the cache; skips when that can't be done."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are needed to run Gemini CLI")
    if _installed_version() != GEMINI_VERSION or not _entry().is_file():
        _prefix().mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(_prefix()), "--no-audit", "--no-fund",
                 f"{GEMINI_PACKAGE}@{GEMINI_VERSION}"],
                capture_output=True, text=True, timeout=NPM_TIMEOUT, env={**os.environ, "HOME": REAL_HOME},
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"npm install {GEMINI_PACKAGE}@{GEMINI_VERSION} did not finish: {exc}")
        if done.returncode != 0 or not _entry().is_file():
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            pytest.skip(f"npm install {GEMINI_PACKAGE}@{GEMINI_VERSION} failed (no registry?): {tail}")
    return _entry()


# -- the project and the sessions -------------------------------------------------------------------


def _env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment: this HOME, no system git config, our git identity."""
    return {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")]),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "LANG": "C.UTF-8",
        **IDENTITY,
        **extra,
    }


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@dataclass
class Sessions:
    root: Path
    home: Path
    settings: dict[str, Any]
    staged_before: str
    commits_before: list[str]
    first_requests: list[dict[str, Any]]
    first: subprocess.CompletedProcess[str]
    commits_after_first: list[str]
    entry_after_first: dict[str, Any] | None
    second: subprocess.CompletedProcess[str] | None = None
    entry_after_second: dict[str, Any] | None = None
    staged_after: str = ""
    third: subprocess.CompletedProcess[str] | None = None


def _git(root: Path, home: Path, *args: str) -> str:
    return _run(["git", *args], root, _env(home)).stdout


def _failure_entry(root: Path) -> dict[str, Any] | None:
    """The learned entry for the failing import, whichever domain it was filed under."""
    yaml = YAML(typ="safe")
    for path in sorted((root / ".expertise").glob("*.yaml")):
        if path.name == "config.yaml":
            continue
        for entry in (yaml.load(path.read_text()) or {}).get("learned_from_failures") or []:
            if "nosuchmodule_xyz" in json.dumps(entry, default=str):
                return dict(entry)
    return None


def _gemini(entry: Path, root: Path, home: Path, server: FakeGemini, prompt: str) -> subprocess.CompletedProcess[str]:
    env = _env(
        home,
        GEMINI_API_KEY="dummy",
        GOOGLE_GEMINI_BASE_URL=server.url,
        GEMINI_CLI_TRUST_WORKSPACE="true",
        GEMINI_TELEMETRY_ENABLED="false",
        NO_BROWSER="true",
        NO_COLOR="1",
    )
    node = shutil.which("node") or "node"
    args = [node, str(entry), "-p", prompt, "-m", MODEL, "--approval-mode", "yolo", "--output-format", "text"]
    return _run(args, root, env, timeout=SESSION_TIMEOUT)


def _script() -> FakeGemini:
    return FakeGemini(
        [
            ("run_shell_command", {"command": FAILING, "description": "check the import"}),
            ("run_shell_command", {"command": FIX, "description": "import it from vendor/"}),
        ]
    )


def _learned(root: Path, home: Path) -> list[str]:
    """The commits once the session's detached learner is done."""
    assert wait_idle(str(root / ".expertise"), timeout=120), "the background learner did not finish"
    return _git(root, home, "rev-list", "HEAD").split()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Sessions:
    entry = _install()
    base = tmp_path_factory.mktemp("gemini-e2e")
    home, root = base / "home", base / "repo"
    (home / ".gemini").mkdir(parents=True)
    # API-key auth: the gateway auth a base URL alone implies fails validation headless (0.61.0 says
    # "Invalid auth method selected"). No auto-update, usage statistics or telemetry.
    (home / ".gemini" / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
            }
        )
    )
    root.mkdir()
    _git(root, home, "init", "-q", "-b", "main")
    _git(root, home, "config", "commit.gpgsign", "false")
    (root / "README.md").write_text("# demo\n")
    (root / "vendor").mkdir()
    (root / "vendor" / "nosuchmodule_xyz.py").write_text("VALUE = 1\n")
    _git(root, home, "add", "README.md", "vendor")
    _git(root, home, "commit", "-q", "-m", "initial")
    expertise = [sys.executable, "-m", "expertise_kit", "-C", str(root)]
    _run([*expertise, "init", "--agent", "gemini"], root, _env(home))
    _run([*expertise, "add", "general", "best_practices", SEEDED], root, _env(home))
    (root / "notes.txt").write_text(STAGED)
    _git(root, home, "add", "notes.txt")

    settings = json.loads((root / ".gemini" / "settings.json").read_text())
    staged_before = _git(root, home, "diff", "--cached")
    commits_before = _git(root, home, "rev-list", "HEAD").split()
    with _script() as server:
        first = _gemini(entry, root, home, server, "Check that the package imports cleanly")
        requests = server.agent_requests()
    found = Sessions(
        root=root,
        home=home,
        settings=settings,
        staged_before=staged_before,
        commits_before=commits_before,
        first_requests=requests,
        first=first,
        commits_after_first=_learned(root, home),
        entry_after_first=_failure_entry(root),
    )
    if found.entry_after_first is not None:  # a second session only means something after a first lesson
        with _script() as server:
            found.second = _gemini(entry, root, home, server, "Run the import check again")
        _learned(root, home)
        found.entry_after_second = _failure_entry(root)
    found.staged_after = _git(root, home, "diff", "--cached")
    # A third session whose hooks have something to say on stderr: a domain file that doesn't parse.
    (root / ".expertise" / "frontend.yaml").write_text("domain: frontend\npatterns: [\n")
    with _script() as server:
        found.third = _gemini(entry, root, home, server, "Zzz qqq")  # nothing relevant: no context to print
    _learned(root, home)
    return found


# -- the steps ----------------------------------------------------------------------------------------


def test_1_init_installs_the_hooks_in_geminis_shape(sessions: Sessions) -> None:
    hooks = sessions.settings["hooks"]
    assert set(hooks) == {"SessionStart", "BeforeAgent", "SessionEnd"}
    timeouts = {event: hooks[event][0]["hooks"][0]["timeout"] for event in hooks}
    assert timeouts == {"SessionStart": 10000, "BeforeAgent": 10000, "SessionEnd": 30000}  # milliseconds
    assert all(hooks[event][0]["hooks"][0]["type"] == "command" for event in hooks)
    assert "notes.txt" in sessions.staged_before


def test_2_the_model_ran_the_failing_command(sessions: Sessions) -> None:
    requests = sessions.first_requests
    assert len(requests) >= 2, sessions.first.stderr
    answered = json.dumps(requests[-1]["body"]["contents"])
    assert "nosuchmodule_xyz" in answered and "No module named" in answered


def test_3_our_context_reached_the_model(sessions: Sessions) -> None:
    first_request = json.dumps(sessions.first_requests[0]["body"]["contents"])
    assert SEEDED in first_request, "the seeded entry was not in the model's first request"
    assert "<hook_context>" in first_request  # how Gemini CLI wraps a hook's additionalContext


def test_4_the_failure_is_learned_in_one_commit_of_expertise_files_only(sessions: Sessions) -> None:
    """One commit records what the session taught; a feedback commit on what it was given may follow (the
    session ended well). Both touch .expertise/ only."""
    new = sessions.commits_after_first[: len(sessions.commits_after_first) - len(sessions.commits_before)]
    subjects = [_git(sessions.root, sessions.home, "log", "-1", "--format=%s", c).strip() for c in new]
    assert len([s for s in subjects if s.startswith("expertise(")]) == 1, subjects
    for commit in new:
        touched = _git(sessions.root, sessions.home, "show", "--name-only", "--format=", commit).split()
        assert touched and all(path.startswith(".expertise/") for path in touched), touched
    entry = sessions.entry_after_first
    assert entry is not None and "No module named 'nosuchmodule_xyz'" in str(entry.get("error"))
    assert "PYTHONPATH=vendor" in str(entry.get("solution")), entry


def test_5_the_users_staged_change_is_untouched(sessions: Sessions) -> None:
    assert sessions.staged_after == sessions.staged_before
    assert (sessions.root / "notes.txt").read_text() == STAGED


def test_6_a_second_session_with_the_same_failure_raises_its_recurrence(sessions: Sessions) -> None:
    assert sessions.entry_after_first is not None and sessions.entry_after_second is not None
    before = int(sessions.entry_after_first.get("recurrence", 1))
    assert int(sessions.entry_after_second.get("recurrence", 1)) == before + 1
    assert len(sessions.entry_after_second.get("sessions") or []) == 2


def test_our_hook_notes_stay_out_of_geminis_output(sessions: Sessions) -> None:
    """With nothing on stdout, Gemini CLI takes a hook's stderr as its output: exit 0 makes it a
    `systemMessage` (headless: "Hook system message: ..." on stderr; interactive: the debug drawer, and a
    visible info line for SessionStart), exit 1 a "Warning: ...", and 2 or more a `deny` that blocks the
    prompt. In the third session our pre-task hook has a note (frontend.yaml doesn't parse) and, for a
    prompt with nothing relevant, no context: it prints `{}`, and the note stays out of sight."""
    assert sessions.third is not None
    for run in (sessions.first, sessions.second, sessions.third):
        assert run is not None
        shown = [line for line in run.stderr.splitlines() if "expertise hook:" in line]
        assert not shown, shown
    # The note was there to show: the same hooks, run by hand for one session (its start is given the
    # essentials, so the prompt has nothing left to add), say it on stderr and print `{}`.
    for event in ("SessionStart", "BeforeAgent"):
        payload = {"cwd": str(sessions.root), "prompt": "Zzz qqq", "hook_event_name": event, "session_id": "by-hand"}
        if event == "SessionStart":
            del payload["prompt"]
        done = subprocess.run(
            ["sh", "-c", "expertise-hook pre --agent gemini"], input=json.dumps(payload), capture_output=True,
            text=True, env=_env(sessions.home), cwd=sessions.root, timeout=60,
        )  # fmt: skip
        assert "frontend.yaml" in done.stderr and isinstance(json.loads(done.stdout), dict)
    assert json.loads(done.stdout) == {}


def test_hooks_doctor_sees_this_gemini(sessions: Sessions) -> None:
    """`hooks doctor` with the real CLI on PATH: its version, the timeouts in ms, the trust given by the
    environment, a live round trip."""
    bin_dir = _prefix() / "node_modules" / ".bin"  # npm's `gemini`
    env = _env(sessions.home, GEMINI_CLI_TRUST_WORKSPACE="true")
    env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
    (sessions.root / ".expertise" / "frontend.yaml").write_text("domain: frontend\n")  # mended
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", "hooks", "doctor", "--agent", "gemini", "--json"],
        cwd=sessions.root, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    (report,) = json.loads(done.stdout)["agents"]
    checks = {c["name"]: c for c in report["checks"]}
    assert report["version"] and GEMINI_VERSION in report["version"], report
    for name in ("config", "hooks", "timeouts", "command", "trust", "round-trip"):
        assert checks[name]["status"] == "ok", checks[name]
    assert done.returncode == 0, done.stderr


# -- reflection (docs/reflect.md): Gemini CLI's AfterAgent can send the agent back -------------------

ASKED = "expertise_kit asks (at most"  # the first words of our reason
LESSON = "Import nosuchmodule_xyz with PYTHONPATH=vendor: the module lives in vendor/, not site-packages"
FORM = r"\n(\S+) add DOMAIN SECTION \"LESSON\" --session ([\w.-]+)"  # the command our reason gives


class _Obedient(FakeGemini):
    """The scripted model, and when our reason arrives (a user turn of its own), the lesson it asks for."""

    def _answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        asked = None
        for turn in reversed(body.get("contents") or []):
            parts = [p for p in turn.get("parts") or [] if isinstance(p, dict)]
            if turn.get("role") != "user" or any("functionResponse" in p for p in parts):
                continue
            asked = next((f for p in parts if ASKED in str(p.get("text")) and (f := re.search(FORM, p["text"]))), None)
            break
        if asked is None or not _is_agent_turn(body):
            return super()._answer(body)
        if _results_since_prompt(body):
            return [{"text": "Recorded."}]
        add = f'{asked[1]} add general best_practices "{LESSON}" --session {asked[2]}'
        return [{"functionCall": {"name": "run_shell_command", "args": {"command": add, "description": "record"}}}]


def test_gemini_reflects_once_only_with_reflect(tmp_path: Path) -> None:
    entry = _install()
    home, root = tmp_path / "home", tmp_path / "repo"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
    }))  # fmt: skip
    root.mkdir()
    _git(root, home, "init", "-q", "-b", "main")
    (root / "vendor").mkdir()
    (root / "vendor" / "nosuchmodule_xyz.py").write_text("VALUE = 1\n")
    _git(root, home, "add", "vendor")
    _git(root, home, "commit", "-q", "-m", "initial")
    expertise = [sys.executable, "-m", "expertise_kit", "-C", str(root)]
    _run([*expertise, "init", "--agent", "gemini"], root, _env(home))
    (root / "notes.txt").write_text(STAGED)
    _git(root, home, "add", "notes.txt")
    staged_before = _git(root, home, "diff", "--cached")
    calls = [
        ("run_shell_command", {"command": FAILING, "description": "check the import"}),
        ("run_shell_command", {"command": FIX, "description": "import it from vendor/"}),
    ]
    with _Obedient(calls) as server:
        _gemini(entry, root, home, server, "Check that the package imports cleanly")
        assert not any(ASKED in json.dumps(r["body"]) for r in server.agent_requests())  # never without it
    _learned(root, home)
    out = _run([*expertise, "hooks", "install", "--agent", "gemini", "--reflect"], root, _env(home)).stdout
    assert "reflect: failures" in out
    with _Obedient(calls) as server:
        _gemini(entry, root, home, server, "Run the import check again")
        bodies = [r["body"] for r in server.agent_requests()]
    _learned(root, home)
    told = [
        p for turn in bodies[-1]["contents"] if turn.get("role") == "user"
        for p in turn.get("parts") or [] if ASKED in str(p.get("text"))
    ]  # fmt: skip
    assert len(told) == 1, f"asked {len(told)} times"
    agent = [
        e for section in ("best_practices",)
        for e in (YAML(typ="safe").load((root / ".expertise" / "general.yaml").read_text()) or {}).get(section) or []
        if isinstance(e, dict) and e.get("source") == "agent"
    ]  # fmt: skip
    assert [e["text"] for e in agent] == [LESSON]
    (session,) = agent[0]["sessions"]
    messages = _git(root, home, "log", "--format=%B%x00").split("\0")
    assert len([m for m in messages if "Expertise-Change: agent" in m and f"Expertise-Session: {session}" in m]) == 1
    assert _git(root, home, "diff", "--cached") == staged_before
    stored = "".join(p.read_text() for p in (root / ".expertise").glob("*.yaml"))
    assert ASKED not in stored and "--session" not in stored  # our reason and the agent's answer teach nothing
