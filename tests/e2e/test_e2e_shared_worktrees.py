"""End to end with the real Claude Code CLI: a lesson learned in one git worktree reaches an agent in
another before anything is merged, through the shared layer (``refs/expertise/shared``).

One repo, `expertise init --agent claude-code` and the hooks' settings committed on ``main``, a local bare
remote, and two worktrees (``branch-a``, ``branch-b``), each with the committed hooks. The scripted model
(``fake_claude_code.FakeAnthropic``, on 127.0.0.1) is asked to push the branch and decides from what the
request tells it:

- told nothing about it, it runs ``git push``, which fails on a new branch ("has no upstream branch"),
  then the fix, ``git push --set-upstream origin HEAD``;
- told the lesson (the hooks' context in the request names ``--set-upstream``), it runs the fix at once.

Session A runs in worktree A; its detached learner commits the failure and its fix on ``branch-a`` only,
and the shared layer, a commit whose tree holds only ``.expertise/`` files, gets it too. Session B then
runs in worktree B, with nothing merged: the lesson must be in its first request, and B must push without
failing first. The same model runs both sessions, so B behaves differently from A only because of what
its hooks injected.

The sessions run once, in a module fixture; each step is a test of its own, so a failure names the step.
The last: B heeded a lesson it had from the shared layer only, and its learner credits it there, in the
shared layer, where every worktree reads it.
The CLI is installed as ``claude_cli`` says (skipped without node and npm, or a registry). No traffic
leaves 127.0.0.1: the remote is a directory, the model is the fake server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from claude_cli import IDENTITY, SESSION_TIMEOUT, cli_env, install_claude
from fake_claude_code import FakeAnthropic
from ruamel.yaml import YAML

from expertise_kit.learning.background import log_path, wait_idle

FAILING = "git push"  # a new branch has no upstream: "fatal: The current branch ... has no upstream branch."
FIX = "git push --set-upstream origin HEAD"
LESSON = "--set-upstream"  # what the model must have been told to skip the failure
ERROR = "has no upstream branch"
SEEDED = "Keep one topic per branch and rebase on main before review (marker kestrel-basalt-41)."
PROMPT_A = "Push this branch to origin so the others can see it."
PROMPT_B = "Push this branch to origin as well, please."
FINAL = "The branch is on origin now."
SHARED_REF = "refs/expertise/shared"
LEARNER_TIMEOUT = 120


# -- the model --------------------------------------------------------------------------------------


def _told(body: dict[str, Any]) -> str:
    """What the conversation tells the model, without the tools' own output: the user's words and what
    the harness and the hooks added to them (Claude Code 2.1 sends the hooks' context as ``system`` turns
    and ``<system-reminder>`` text)."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") == "tool_result":
                return  # git's own hint after a failed push is not a lesson given beforehand
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            parts.append(value)

    walk(body.get("messages") or [])
    return "\n".join(parts)


def _injected(body: dict[str, Any]) -> str:
    """What our hooks injected into this request: each block the pre-task hook renders, from its
    ``## Project expertise`` heading to the next top-level heading Claude Code puts after it."""
    return "\n".join(text.split("\n# ", 1)[0] for text in _told(body).split("## Project expertise")[1:])


def _plan(body: dict[str, Any]) -> tuple[str, ...]:
    """The model's plan for this request: straight to the fix when it was told the lesson."""
    return (FIX,) if LESSON in _told(body) else (FAILING, FIX)


def _model() -> FakeAnthropic:
    return FakeAnthropic(commands=_plan, final_text=FINAL)


# -- the project ------------------------------------------------------------------------------------


def _env(home: Path, base_url: str = "http://127.0.0.1:9") -> dict[str, str]:
    """The CLI's environment (``claude_cli.cli_env``) for every command: the temp HOME, no system git
    config, no git variables of a caller's own repo, our identity."""
    env = {key: value for key, value in cli_env(home, base_url).items() if not key.startswith("GIT_")}
    env.update(IDENTITY, GIT_CONFIG_NOSYSTEM="1")
    return env


def _git(cwd: Path, home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=_env(home), timeout=120)
    assert not check or done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done


def _out(cwd: Path, home: Path, *args: str) -> str:
    return _git(cwd, home, *args).stdout


def _expertise(cwd: Path, home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", *args],
        cwd=cwd, capture_output=True, text=True, env=_env(home), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, f"expertise {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def _lessons(text: str) -> list[dict[str, Any]]:
    """The learned failures about the push in one domain file's text."""
    document = YAML(typ="safe").load(text) or {}
    entries = (document.get("learned_from_failures") or []) if isinstance(document, dict) else []
    return [dict(e) for e in entries if isinstance(e, dict) and ERROR in str(e.get("error") or "")]


def _lessons_at(repo: Path, home: Path, rev: str) -> dict[str, list[dict[str, Any]]]:
    """The push lessons in each domain file of a revision, by path (domains without one left out)."""
    paths = _out(repo, home, "ls-tree", "-r", "--name-only", rev, "--", ".expertise/").split()
    found = {}
    for path in paths:
        if path.endswith(".yaml") and not path.endswith("config.yaml"):
            lessons = _lessons(_out(repo, home, "show", f"{rev}:{path}"))
            if lessons:
                found[path] = lessons
    return found


def _lessons_on_disk(tree: Path) -> list[dict[str, Any]]:
    return [
        e
        for p in sorted((tree / ".expertise").glob("*.yaml"))
        if p.name != "config.yaml"
        for e in _lessons(p.read_text())
    ]


def _transcripts(home: Path) -> set[Path]:
    return set((home / ".claude" / "projects").glob("*/*.jsonl"))


def _bash_calls(transcript: Path) -> list[tuple[str, bool]]:
    """Each Bash call of a Claude Code transcript, with whether its result was an error."""
    calls: dict[str, str] = {}
    errors: dict[str, bool] = {}
    for line in transcript.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") == "Bash":
                calls[str(block.get("id"))] = str((block.get("input") or {}).get("command"))
            elif block.get("type") == "tool_result":
                errors[str(block.get("tool_use_id"))] = bool(block.get("is_error"))
    return [(command, errors.get(call_id, False)) for call_id, command in calls.items()]


@dataclass
class Run:
    """One headless session: what the model was sent, what the CLI printed, the transcript it wrote."""

    requests: list[dict[str, Any]]
    stdout: str
    transcript: Path


@dataclass
class World:
    repo: Path
    home: Path
    tree_a: Path
    tree_b: Path
    before_a: dict[str, str]  # main and branch-b before session A, and when session B started
    at_b: dict[str, str]
    a: Run
    commits_a: list[str]  # what A's learner committed on branch-a, newest first
    learn_log_a: str
    shared: str | None  # the shared ref's commit after A, if there is one
    b_lessons_on_disk: list[dict[str, Any]]  # worktree B's own files, before B's session
    b: Run
    learn_log_b: str


def _session(claude: Path, tree: Path, home: Path, prompt: str) -> Run:
    before = _transcripts(home)
    with _model() as fake:
        done = subprocess.run(
            [str(claude), "-p", prompt, "--allowedTools", "Bash"],
            cwd=tree, capture_output=True, text=True, timeout=SESSION_TIMEOUT, env=_env(home, fake.url),
        )  # fmt: skip
        requests = fake.main_requests()
    assert done.returncode == 0, f"claude exited {done.returncode} in {tree.name}:\n{done.stdout}\n{done.stderr}"
    new = _transcripts(home) - before
    assert len(new) == 1, f"expected one new transcript from the session in {tree.name}, got {sorted(new)}"
    return Run(requests=requests, stdout=done.stdout, transcript=new.pop())


def _learned(tree: Path) -> str:
    """Wait for the worktree's detached learner; its log."""
    assert wait_idle(str(tree / ".expertise"), timeout=LEARNER_TIMEOUT), f"the learner in {tree.name} did not finish"
    try:
        return Path(log_path(str(tree / ".expertise"))).read_text()
    except OSError:
        return ""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    claude = install_claude()
    base = tmp_path_factory.mktemp("shared-worktrees")
    home, repo, remote = base / "home", base / "project", base / "remote.git"
    tree_a, tree_b = base / "tree-a", base / "tree-b"
    home.mkdir()
    repo.mkdir()
    _git(base, home, "init", "-q", "--bare", str(remote))
    _git(repo, home, "init", "-q", "-b", "main")
    _git(repo, home, "config", "commit.gpgsign", "false")
    (repo / "README.md").write_text("# demo\n")
    _git(repo, home, "add", "README.md")
    _git(repo, home, "commit", "-q", "-m", "initial")
    assert "installed claude-code hooks in .claude/settings.json" in _expertise(
        repo, home, "init", "--agent", "claude-code"
    )
    _expertise(repo, home, "add", "general", "best_practices", SEEDED)  # shows the hooks work in each worktree
    _git(repo, home, "add", ".claude/settings.json")
    _git(repo, home, "commit", "-q", "-m", "Share the agent hooks")
    _git(repo, home, "remote", "add", "origin", str(remote))
    _git(repo, home, "push", "-q", "--set-upstream", "origin", "main")
    try:
        _git(repo, home, "worktree", "add", "-q", str(tree_a), "-b", "branch-a")
        _git(repo, home, "worktree", "add", "-q", str(tree_b), "-b", "branch-b")
        # Claude Code asks for its one-time folder trust only interactively, never under `claude -p`:
        # there is nothing to do per worktree.
        before_a = {branch: _out(repo, home, "rev-parse", branch).strip() for branch in ("main", "branch-b")}
        head_a = _out(tree_a, home, "rev-parse", "HEAD").strip()

        a = _session(claude, tree_a, home, PROMPT_A)
        learn_log_a = _learned(tree_a)
        commits_a = _out(tree_a, home, "rev-list", f"{head_a}..HEAD").split()
        shared = _git(repo, home, "rev-parse", "--verify", "-q", f"{SHARED_REF}^{{commit}}", check=False)
        b_lessons_on_disk = _lessons_on_disk(tree_b)
        at_b = {branch: _out(repo, home, "rev-parse", branch).strip() for branch in ("main", "branch-b")}

        b = _session(claude, tree_b, home, PROMPT_B)
        learn_log_b = _learned(tree_b)
        yield World(
            repo=repo, home=home, tree_a=tree_a, tree_b=tree_b, before_a=before_a,
            at_b=at_b, a=a, commits_a=commits_a, learn_log_a=learn_log_a,
            shared=shared.stdout.strip() if shared.returncode == 0 else None,
            b_lessons_on_disk=b_lessons_on_disk, b=b, learn_log_b=learn_log_b,
        )  # fmt: skip
    finally:
        for tree in (tree_a, tree_b):
            if tree.exists():  # no learner may be writing into a worktree being removed
                wait_idle(str(tree / ".expertise"), timeout=LEARNER_TIMEOUT)
            _git(repo, home, "worktree", "remove", "--force", str(tree), check=False)
        _git(repo, home, "worktree", "prune", check=False)


# -- the steps --------------------------------------------------------------------------------------


def test_1_the_hooks_run_in_both_worktrees(world: World) -> None:
    """Both worktrees have the committed settings, and each session's first request has our context."""
    for tree in (world.tree_a, world.tree_b):
        settings = json.loads((tree / ".claude" / "settings.json").read_text())
        assert {"SessionStart", "UserPromptSubmit", "SessionEnd"} <= set(settings["hooks"]), tree.name
    for name, run in (("A", world.a), ("B", world.b)):
        assert run.requests, f"session {name} sent the model nothing"
        assert SEEDED in _injected(run.requests[0]), (
            f"session {name}: the pre-task hook's context is not in the request"
        )


def test_2_session_a_failed_then_fixed(world: World) -> None:
    """Told nothing, the model ran the failing push, got git's error, then pushed with the fix."""
    calls = _bash_calls(world.a.transcript)
    assert calls == [(FAILING, True), (FIX, False)], calls
    results = json.dumps(world.a.requests[-1]["messages"])
    assert ERROR in results and '"is_error": true' in results
    assert FINAL in world.a.stdout
    heads = _out(world.repo, world.home, "ls-remote", "--heads", "origin").split()
    assert "refs/heads/branch-a" in heads, heads


def test_3_the_lesson_is_committed_on_branch_a_only(world: World) -> None:
    """A's learner made a learn commit on branch-a with the failure and its fix, touching .expertise/ only;
    branch-b and main did not move and do not have it."""
    subjects = {c: _out(world.tree_a, world.home, "log", "-1", "--format=%s", c).strip() for c in world.commits_a}
    learn = [c for c, subject in subjects.items() if subject.startswith("expertise(")]
    assert len(learn) == 1, f"{subjects}\nlearn.log:\n{world.learn_log_a}"
    for commit in world.commits_a:
        touched = _out(world.tree_a, world.home, "show", "--name-only", "--format=", commit).split()
        assert touched and all(path.startswith(".expertise/") for path in touched), touched
    lessons = _lessons_at(world.repo, world.home, "branch-a")
    assert len(lessons) == 1 and len(next(iter(lessons.values()))) == 1, lessons
    (lesson,) = next(iter(lessons.values()))
    assert LESSON in str(lesson.get("solution") or ""), lesson
    assert _lessons_at(world.repo, world.home, learn[0]) == lessons  # the learn commit brought it
    # Nothing merged: when session B started, main and branch-b were where they were before A, and neither
    # had the lesson; nor did they get it later (B's own learner may add feedback commits to branch-b).
    assert world.at_b == world.before_a, "A's learning moved main or branch-b"
    for branch in ("main", "branch-b"):
        assert _lessons_at(world.repo, world.home, world.at_b[branch]) == {}, branch
        ancestor = _git(world.repo, world.home, "merge-base", "--is-ancestor", learn[0], branch, check=False)
        assert ancestor.returncode == 1, f"{branch} has A's learn commit"
    assert world.b_lessons_on_disk == [], "worktree B's own files had the lesson before its session"


def test_4_the_shared_layer_holds_the_lesson(world: World) -> None:
    """After A's learning, refs/expertise/shared is a commit of .expertise/ files only, with the lesson."""
    assert world.shared is not None, f"{SHARED_REF} does not exist after session A was learned"
    paths = _out(world.repo, world.home, "ls-tree", "-r", "--name-only", world.shared).split()
    assert paths and all(path.startswith(".expertise/") for path in paths), paths
    branch_a = _lessons_at(world.repo, world.home, "branch-a")
    shared = _lessons_at(world.repo, world.home, world.shared)
    assert shared.keys() == branch_a.keys(), (shared, branch_a)
    for path, lessons in branch_a.items():
        assert [e.get("solution") for e in shared[path]] == [e.get("solution") for e in lessons], shared


def test_5_session_b_is_told_the_lesson_before_anything_is_merged(world: World) -> None:
    """B's hooks injected the union of B's files and the shared layer: A's fix is in B's first request."""
    lessons = [e for found in _lessons_at(world.repo, world.home, "branch-a").values() for e in found]
    assert lessons, "branch-a has no lesson to look for"
    solution = str(lessons[0].get("solution") or "")
    injected = _injected(world.b.requests[0])
    # The hook renders learned text as a JSON string: look for the fix as written or as JSON escaped it.
    assert solution in injected or json.dumps(solution)[1:-1] in injected, (
        f"A's fix {solution!r} is not in what session B's hooks injected into its first request (the shared "
        f"layer did not reach it); they injected:\n{injected}"
    )


def test_6_session_b_did_not_repeat_the_failure(world: World) -> None:
    """Told the lesson, B's model pushed with the fix at once: no failing call, `git push` never run bare."""
    calls = _bash_calls(world.b.transcript)
    assert calls == [(FIX, False)], f"session B ran {calls}"
    assert not any('"is_error": true' in json.dumps(r["messages"]) for r in world.b.requests)
    assert FINAL in world.b.stdout
    heads = _out(world.repo, world.home, "ls-remote", "--heads", "origin").split()
    assert "refs/heads/branch-b" in heads, heads
    assert "failed:" not in world.learn_log_b, f"B's learner failed:\n{world.learn_log_b}"


def test_7_session_b_credits_the_shared_lesson_it_heeded(world: World) -> None:
    """B was given A's lesson by the shared layer, ran its program and followed its fix without failing: a
    heeded warning, which counts helpful (with the lesson merged into B's own files, it does)."""
    assert "feedback: 1 helpful" in world.learn_log_b, world.learn_log_b
    shared = _out(world.repo, world.home, "log", "-1", "--format=%B", "refs/expertise/shared")
    assert "on lessons from the shared layer" in shared and "Expertise-Branch: branch-b" in shared, shared
    domains = ("database", "api", "frontend", "testing", "security", "deployment", "general")
    files = [_out(world.repo, world.home, "show", f"refs/expertise/shared:.expertise/{d}.yaml") for d in domains]
    assert any("helpful: 1" in text for text in files)
