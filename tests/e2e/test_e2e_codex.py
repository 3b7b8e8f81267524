"""End to end with the real OpenAI Codex CLI, headless, against a scripted Responses API on 127.0.0.1.

`expertise init --agent codex` writes `.codex/hooks.json` into a temp git repo; `codex exec` runs a
session in which the (fake) model runs a failing shell command and then ends its turn. The test checks
that our pre-task context reached the model's request, that the failure was learned in one commit
touching only `.expertise/`, that the user's staged change survived, and that a second session raises the
failure's recurrence.

Codex runs project hooks only when two things were granted once, by the user, in their own Codex config
(`$CODEX_HOME/config.toml`): trust in the project (`[projects."<root>"] trust_level = "trusted"`, what
the first-run "trust this folder?" prompt or `codex exec --trust` writes), and trust in each hook
(`[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash = "sha256:..."`, what the
TUI's "Hooks need review -> Trust all and continue" writes). The test gives the second the way the TUI
does, through `codex app-server` (`hooks/list`, then `config/batchWrite`), so no hash is computed here.
Without it, `codex exec` skips the hooks without a word; one test shows that.

The CLI is installed with npm into a cache (``$EXPERTISE_E2E_CACHE/npm``, by default
``~/.cache/expertise-e2e/npm``), at the pinned version below. Without node and npm, or when the install
fails (no registry), the tests are skipped, never failed. No traffic leaves 127.0.0.1: the model provider
is the fake server, and the features that reach the internet at startup (plugin and app sync, update
checks, analytics) are switched off in the temp config.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_codex import FakeResponses, _is_context
from npm_env import CACHE, NPM_TIMEOUT, REAL_HOME, SESSION_TIMEOUT

from expertise_kit.learning.background import wait_idle

CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.171.0"
RPC_TIMEOUT = 60

FAILING = 'python3 -c "import nosuchmodule_xyz"'  # fails: the module lives in vendor/
FIX = 'PYTHONPATH=vendor python3 -c "import nosuchmodule_xyz"'
SCRIPT = (FAILING, FIX)
SEEDED = "Vendor optional imports through requirements-extra.txt before importing them (marker otter-lantern-17)."
STAGED = "Staged by the user, not to be committed by anyone else.\n"
OUR_EVENTS = {"sessionStart": 10, "userPromptSubmit": 10, "stop": 30}  # as hooks/list names them: timeout in s


# -- the CLI ----------------------------------------------------------------------------------------


def _launcher() -> Path:
    return CACHE / "node_modules" / "@openai" / "codex" / "bin" / "codex.js"


def _installed_version() -> str | None:
    try:
        return str(json.loads((_launcher().parents[1] / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


@pytest.fixture(scope="module")
def codex() -> list[str]:
    """The argv that runs the pinned Codex CLI: its npm launcher, which starts the platform's native
    binary (shipped in the optional dependency ``@openai/codex-<os>-<arch>``)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are needed to install the Codex CLI")
    if _installed_version() != CODEX_VERSION:
        CACHE.mkdir(parents=True, exist_ok=True)
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--loglevel=error",
                 f"{CODEX_PACKAGE}@{CODEX_VERSION}"],
                capture_output=True, text=True, timeout=NPM_TIMEOUT, env={**os.environ, "HOME": REAL_HOME},
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm install {CODEX_PACKAGE}@{CODEX_VERSION} took over {NPM_TIMEOUT} s")
        if done.returncode != 0 or _installed_version() != CODEX_VERSION:
            pytest.skip(f"npm install {CODEX_PACKAGE}@{CODEX_VERSION} failed (no registry?): {done.stderr[-300:]}")
    argv = [node, str(_launcher())]
    try:
        version = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.skip("codex --version did not answer")
    if CODEX_VERSION not in version.stdout:
        pytest.skip(f"the Codex CLI does not run here: {(version.stderr or version.stdout)[-300:]}")
    return argv


# -- a world of our own: HOME, CODEX_HOME, a repo ---------------------------------------------------


class World:
    def __init__(self, root: Path, repo: Path, codex: list[str]) -> None:
        self.repo = repo.resolve()
        self.codex = codex
        self.home = root / "home"
        self.codex_home = root / "codex-home"
        self.home.mkdir()
        self.codex_home.mkdir()
        self.installed = True  # whether `expertise-hook` is on the PATH Codex runs hooks with

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_", "RUST_LOG"))}
        ours = str(Path(sys.executable).parent)
        rest = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p != ours]
        env.update(
            PATH=os.pathsep.join([ours, *rest] if self.installed else rest),
            HOME=str(self.home),
            CODEX_HOME=str(self.codex_home),
            FAKE_MODEL_API_KEY="not-a-real-key",  # the provider's env_key: sent only to 127.0.0.1
            NO_COLOR="1",
        )
        return env

    def configure(self, base_url: str, trust_project: bool = True) -> None:
        """The user's Codex config: the fake provider, no approvals, and nothing that phones home.
        Keeps any hook trust written before (the ``[hooks.state]`` tables) across sessions."""
        path = self.codex_home / "config.toml"
        kept = ""
        if path.exists():
            text = path.read_text()
            kept = text[text.index("[hooks.state") :] if "[hooks.state" in text else ""
        project = f'[projects."{self.repo}"]\ntrust_level = "trusted"\n\n' if trust_project else ""
        path.write_text(
            'model = "fake-model"\n'
            'model_provider = "fake"\n'
            'approval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\n'
            "check_for_update_on_startup = false\n\n"
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{base_url}"\n'
            'wire_api = "responses"\n'
            'env_key = "FAKE_MODEL_API_KEY"\n\n'
            "[features]\n"
            "plugins = false\n"
            "remote_plugin = false\n"
            "apps = false\n"
            "in_app_updates = false\n\n"
            "[analytics]\nenabled = false\n\n"
            "[feedback]\nenabled = false\n\n" + project + kept
        )

    def session(self, fake: FakeResponses, prompt: str, *extra: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*self.codex, "exec", *extra, prompt],
            cwd=self.repo, env=self.env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=SESSION_TIMEOUT,
        )  # fmt: skip
        assert done.returncode == 0, f"codex exec failed ({done.returncode}):\n{done.stderr[-3000:]}"
        assert not fake.errors, fake.errors
        return done

    # -- the user's one-time trust, given as the TUI gives it ----------------------------------------

    def hooks_list(self) -> list[dict[str, Any]]:
        with AppServer(self) as server:
            return server.hooks()

    def trust_hooks(self) -> list[dict[str, Any]]:
        """What "Hooks need review -> Trust all and continue" does: every new or changed hook's current
        hash is written as trusted, under its key, into the user's config.toml."""
        with AppServer(self) as server:
            pending = [h for h in server.hooks() if h["trustStatus"] in ("untrusted", "modified")]
            value = {h["key"]: {"trusted_hash": h["currentHash"]} for h in pending}
            server.call(
                "config/batchWrite", {"edits": [{"keyPath": "hooks.state", "value": value, "mergeStrategy": "upsert"}]}
            )
            return server.hooks()


class AppServer:
    """`codex app-server` over stdio: newline-delimited JSON-RPC, as the TUI and IDE extensions use it."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.next_id = 0
        self.buffer = b""

    def __enter__(self) -> AppServer:
        self.process = subprocess.Popen(
            [*self.world.codex, "app-server"],
            cwd=self.world.repo, env=self.world.env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.call("initialize", {"clientInfo": {"name": "expertise-e2e", "version": "0"}})
        self._send({"method": "initialized"})
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=RPC_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def hooks(self) -> list[dict[str, Any]]:
        result = self.call("hooks/list", {"cwds": [str(self.world.repo)]})
        (entry,) = [e for e in result["data"] if Path(e["cwd"]) == self.world.repo]
        assert not entry["errors"], entry["errors"]
        return list(entry["hooks"])

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + RPC_TIMEOUT
        while True:
            message = self._read(deadline)
            if message.get("id") == self.next_id:
                assert "error" not in message, f"{method}: {message['error']}"
                return message["result"]

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def _read(self, deadline: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError("codex app-server did not answer")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError("codex app-server exited")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))


# -- the project ------------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def _expertise(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", "-C", str(repo), *args], capture_output=True, text=True
    )
    assert done.returncode == 0, f"expertise {' '.join(args)}: {done.stderr}"
    return done.stdout


def _commits(repo: Path) -> list[str]:
    return _git(repo, "rev-list", "HEAD").split()


def _learned_since(repo: Path, head: list[str]) -> list[str]:
    """The commits the detached learner made since ``head``, once it is done; each touches .expertise/ only."""
    assert wait_idle(str(repo / ".expertise"), timeout=120), "the background learner did not finish"
    commits = _commits(repo)
    new = commits[: len(commits) - len(head)]
    assert commits[len(new) :] == head
    for commit in new:
        paths = _git(repo, "show", "--name-only", "--format=", commit).split()
        assert paths and all(p.startswith(".expertise/") for p in paths), paths
    return new


def _learn_commits(repo: Path, commits: list[str]) -> list[str]:
    """The commits that record what a session taught (``expertise(<domain>): learn ... / update ...``), not
    the feedback on what it was given (``expertise: feedback ...``)."""
    return [c for c in commits if _git(repo, "log", "-1", "--format=%s", c).startswith("expertise(")]


def _doctor(world: World) -> dict[str, dict[str, Any]]:
    bin_dir = CACHE / "node_modules" / ".bin"  # where npm put `codex`
    env = dict(world.env(), PATH=os.pathsep.join([str(bin_dir), world.env()["PATH"]]))
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", "hooks", "doctor", "--agent", "codex", "--json"],
        cwd=world.repo, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    (report,) = json.loads(done.stdout)["agents"]
    return {"version": {"detail": report["version"]}, **{c["name"]: c for c in report["checks"]}}


def _failure_entries(repo: Path) -> list[dict[str, Any]]:
    found = []
    for row in json.loads(_expertise(repo, "list", "--json")):
        shown = json.loads(_expertise(repo, "show", row["domain"], "--json"))
        found += [e for e in shown["entries"] if "nosuchmodule_xyz" in str(e.get("error"))]
    return found


def _staged(repo: Path) -> str:
    return _git(repo, "diff", "--cached")


@pytest.fixture
def world(tmp_path: Path, repo: Path, codex: list[str]) -> World:
    """The suite's `repo` (README.md committed), plus one staged user change that no one else may
    commit, with `expertise init --agent codex` run in it."""
    (repo / "vendor").mkdir()
    (repo / "vendor" / "nosuchmodule_xyz.py").write_text("VALUE = 1\n")
    _git(repo, "add", "vendor")
    _git(repo, "commit", "-q", "-m", "vendor the optional module")
    (repo / "NOTES.md").write_text(STAGED)
    _git(repo, "add", "NOTES.md")
    out = _expertise(repo, "init", "--agent", "codex")
    assert "installed codex hooks in .codex/hooks.json" in out
    return World(tmp_path, repo, codex)


def _ours(hooks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {h["eventName"]: h for h in hooks if "expertise-hook" in (h.get("command") or "")}


# -- the tests --------------------------------------------------------------------------------------


def test_codex_session_learns_a_failure_in_one_commit(world: World) -> None:
    repo = world.repo
    # 1. The hooks are installed where Codex reads them, and Codex reads their timeouts in seconds.
    staged_before = _staged(repo)
    assert "NOTES.md" in staged_before
    _expertise(repo, "add", "general", "best_practices", SEEDED)
    world.configure("http://127.0.0.1:9/v1")
    listed = _ours(world.hooks_list())
    assert {event: h["timeoutSec"] for event, h in listed.items()} == OUR_EVENTS
    assert {h["trustStatus"] for h in listed.values()} == {"untrusted"}
    doctor = _doctor(world)
    assert doctor["trust"]["status"] == "fail" and "has not trusted our" in doctor["trust"]["detail"], doctor
    # The user's one-time step: trust the hooks (the TUI's "Trust all and continue").
    trusted = _ours(world.trust_hooks())
    assert {h["trustStatus"] for h in trusted.values()} == {"trusted"}
    # `hooks doctor` reads that trust, each hook's hash computed as Codex computes it, and the version.
    doctor = _doctor(world)
    assert doctor["trust"]["status"] == "ok", doctor["trust"]
    assert CODEX_VERSION in doctor["version"]["detail"], doctor["version"]
    assert all(doctor[n]["status"] == "ok" for n in ("config", "hooks", "timeouts", "command", "round-trip"))

    # 2. The model runs a failing command, then its fix, then ends its turn.
    head = _commits(repo)
    with FakeResponses(SCRIPT) as fake:
        world.configure(fake.base_url)
        done = world.session(fake, "Check that the optional dependency imports cleanly.")
        requests = fake.model_requests()
    assert "hook: SessionStart Completed" in done.stderr and "hook: Stop Completed" in done.stderr, done.stderr
    assert len(requests) == 3, [r.get("input") for r in requests]
    assert "nosuchmodule_xyz" in json.dumps(requests[1]["input"])  # the command's output went back

    # 3. Our pre-task context reached the model, as a developer message of its own.
    context = [
        item for item in requests[0]["input"]
        if item.get("role") == "developer" and SEEDED in json.dumps(item)
    ]  # fmt: skip
    assert context, "the seeded expertise line is not in the model's first request"

    # 4. The failure was learned with its fix, in one commit touching only .expertise/ (a feedback commit
    # for the injected line, .expertise/ only too, may follow: the session ended well).
    new = _learned_since(repo, head)
    assert len(_learn_commits(repo, new)) == 1, _git(repo, "log", "--oneline", "-5")
    (entry,) = _failure_entries(repo)
    assert entry["recurrence"] == 1 and "PYTHONPATH=vendor" in (entry["solution"] or ""), entry

    # 5. The user's staged change is still staged, unchanged.
    assert _staged(repo) == staged_before

    # 6. A second session with the same failure raises its recurrence (still .expertise/ commits only).
    head = _commits(repo)
    with FakeResponses(SCRIPT) as fake:
        world.configure(fake.base_url)
        world.session(fake, "Check again that the optional dependency imports cleanly.")
        second = fake.model_requests()
    assert len(second) == 3
    assert len(_learn_commits(repo, _learned_since(repo, head))) == 1
    (entry,) = _failure_entries(repo)
    assert entry["recurrence"] == 2
    assert len(entry["sessions"]) == 2
    assert _staged(repo) == staged_before


def test_codex_skips_untrusted_project_hooks_without_a_word(world: World) -> None:
    """Before the user's one-time trust, `codex exec` runs no project hook and says nothing about it:
    no context, no learning, no warning."""
    _expertise(world.repo, "add", "general", "best_practices", SEEDED)
    head = _commits(world.repo)
    with FakeResponses(SCRIPT) as fake:
        world.configure(fake.base_url)
        done = world.session(fake, "Check that the optional dependency imports cleanly.")
        requests = fake.model_requests()
    assert len(requests) == 3
    assert SEEDED not in json.dumps(requests)
    assert "hook:" not in done.stderr and "review" not in done.stderr.lower(), done.stderr
    assert wait_idle(str(world.repo / ".expertise"), timeout=60) and _commits(world.repo) == head
    # `--dangerously-bypass-hook-trust` runs them for one invocation: meant for automation only.
    with FakeResponses(SCRIPT) as fake:
        world.configure(fake.base_url)
        world.session(fake, "Check that the optional dependency imports cleanly.", "--dangerously-bypass-hook-trust")
        assert SEEDED in json.dumps(fake.model_requests()[0])


def test_codex_carries_on_when_the_hook_program_is_missing(world: World) -> None:
    """A teammate without expertise_kit (no `expertise-hook` on PATH) who trusted the committed hooks:
    each runs, does nothing and exits 0 ("Completed", not "Failed"), and the session goes on as if there
    were none: no context, no learning."""
    _expertise(world.repo, "add", "general", "best_practices", SEEDED)
    world.installed = False
    world.configure("http://127.0.0.1:9/v1")
    trusted = _ours(world.trust_hooks())
    assert {h["trustStatus"] for h in trusted.values()} == {"trusted"}
    head = _commits(world.repo)
    with FakeResponses(SCRIPT) as fake:
        world.configure(fake.base_url)
        done = world.session(fake, "Check that the optional dependency imports cleanly.")
        assert len(fake.model_requests()) == 3
        assert SEEDED not in json.dumps(fake.model_requests())
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert f"hook: {event} Completed" in done.stderr, done.stderr
    assert "Failed" not in done.stderr
    assert wait_idle(str(world.repo / ".expertise"), timeout=60) and _commits(world.repo) == head


def test_codex_uninstall_keeps_the_users_other_hooks_trusted(world: World) -> None:
    """Codex keys hook trust by position (`<hooks.json>:<event>:<group index>:<handler index>`), so
    removing a group shifts every later group of that event onto a key whose trusted hash is someone
    else's: the user's hook turns "modified" and silently stops running until reviewed again."""
    hooks_json = world.repo / ".codex" / "hooks.json"
    settings = json.loads(hooks_json.read_text())
    theirs = {"type": "command", "command": "echo team-session-start", "timeout": 5}
    settings["hooks"]["SessionStart"].append({"hooks": [theirs]})  # the user's, after ours
    hooks_json.write_text(json.dumps(settings, indent=2) + "\n")
    world.configure("http://127.0.0.1:9/v1")
    before = [h for h in world.trust_hooks() if h["command"] == theirs["command"]]
    assert [h["trustStatus"] for h in before] == ["trusted"]

    _expertise(world.repo, "hooks", "uninstall")
    after = [h for h in world.hooks_list() if h["command"] == theirs["command"]]
    assert [h["trustStatus"] for h in after] == ["trusted"], after  # still at index 1: still runs
    assert json.loads(hooks_json.read_text())["hooks"] == {"SessionStart": [{"hooks": []}, {"hooks": [theirs]}]}
    assert not _ours(world.hooks_list())


def test_codex_stop_fires_every_turn_and_a_session_is_counted_once(world: World) -> None:
    """`Stop` ends every turn, not the session: resuming the session for a second turn runs the post
    hook again on the same, longer transcript. The failure seen again in the same session is not a
    recurrence, and nothing new is committed."""
    world.configure("http://127.0.0.1:9/v1")
    world.trust_hooks()
    start = _commits(world.repo)
    with FakeResponses(SCRIPT) as fake:
        world.configure(fake.base_url)
        world.session(fake, "Check that the optional dependency imports cleanly.")
    _learned_since(world.repo, start)
    (entry,) = _failure_entries(world.repo)
    assert entry["recurrence"] == 1
    head = _commits(world.repo)
    with FakeResponses(SCRIPT) as fake:
        world.configure(fake.base_url)
        done = world.session(fake, "Try the import once more.", "resume", "--last")
        assert len(fake.model_requests()) == 3
    assert "hook: SessionStart Completed" in done.stderr  # its payload says "source": "resume"
    assert "hook: Stop Completed" in done.stderr
    new = _learned_since(world.repo, head)
    (entry,) = _failure_entries(world.repo)
    assert entry["recurrence"] == 1 and len(entry["sessions"]) == 1  # learned again, counted once
    assert not _learn_commits(world.repo, new), [_git(world.repo, "log", "-1", "--format=%s", c) for c in new]


# -- reflection (docs/reflect.md) ---------------------------------------------------------------------

ASKED = "expertise_kit asks (at most"  # the first words of our reason
LESSON = "Import nosuchmodule_xyz with PYTHONPATH=vendor: the module lives in vendor/, not site-packages"


def _obedient(body: dict[str, Any]) -> tuple[str, ...]:
    """A model that does what the reflection asks: one `expertise add` with the session it was given.
    Its reason may come as a user message (a new turn: only the add is left) or within the turn."""
    items = body.get("input") or []
    told = [i for i, item in enumerate(items) if ASKED in json.dumps(item)]
    if not told:
        return SCRIPT
    told_text = json.loads(json.dumps(items[told[0]]))["content"][0]["text"]
    form = re.search(r"\n(\S+) add DOMAIN SECTION \"LESSON\" --session ([\w.-]+)", told_text)
    assert form, "the reason gives no command to run"
    add = f'{form[1]} add general best_practices "{LESSON}" --session {form[2]}'
    # Codex 0.169 sends it as a user message wrapped in `<hook_prompt ...>`, which the fake counts as context.
    starts_a_turn = items[told[0]].get("role") == "user" and not _is_context(items[told[0]])
    return (add,) if starts_a_turn else (*SCRIPT, add)


def test_codex_reflects_once_only_with_reflect(world: World) -> None:
    repo = world.repo
    staged_before = _staged(repo)
    world.configure("http://127.0.0.1:9/v1")
    world.trust_hooks()
    with FakeResponses(_obedient) as fake:
        world.configure(fake.base_url)
        world.session(fake, "Check that the optional dependency imports cleanly.")
        assert not any(ASKED in json.dumps(body) for body in fake.model_requests())  # never without --reflect
    assert wait_idle(str(repo / ".expertise"), timeout=120)

    out = _expertise(repo, "hooks", "install", "--agent", "codex", "--reflect")
    assert "reflect: failures" in out
    assert {h["trustStatus"] for h in _ours(world.trust_hooks()).values()} == {"trusted"}
    head = _commits(repo)
    with FakeResponses(_obedient) as fake:
        world.configure(fake.base_url)
        done = world.session(fake, "Check again that the optional dependency imports cleanly.")
        bodies = fake.model_requests()
    asked = [b for b in bodies if ASKED in json.dumps(b.get("input"))]
    assert asked, f"the reflection never reached the model: {done.stderr[-2000:]}"
    last = [item for item in bodies[-1]["input"] if ASKED in json.dumps(item)]
    assert len(last) == 1, last  # asked once, though Codex's Stop fired again after the agent's answer
    assert "nosuchmodule_xyz" in json.dumps(last[0])  # the failure is a candidate
    _learned_since(repo, head)

    agent = [
        e for row in json.loads(_expertise(repo, "list", "--json"))
        for e in json.loads(_expertise(repo, "show", row["domain"], "--json"))["entries"] if e.get("source") == "agent"
    ]  # fmt: skip
    (entry,) = agent
    found = re.search(r"--session ([\w.-]+)", json.dumps(last[0]))
    assert found
    session = found[1]
    # Codex may learn the turn before the agent answers: then the parsed failure it saw again (first learned
    # in the first session) became this entry, in the agent's words, keeping both sessions.
    assert entry["text"] == LESSON and entry["sessions"][-1] == session
    by_agent = [
        c for c in _commits(repo)
        if f"Expertise-Session: {session}" in (m := _git(repo, "log", "-1", "--format=%B", c))
        and "Expertise-Change: agent" in m
    ]  # fmt: skip
    assert len(by_agent) == 1
    assert _staged(repo) == staged_before  # the user's staged work is untouched
    stored = "".join(p.read_text() for p in (repo / ".expertise").glob("*.yaml"))
    assert ASKED not in stored and "--session" not in stored  # our reason and the agent's answer teach nothing
