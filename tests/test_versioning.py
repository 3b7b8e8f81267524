"""Every write is one commit of .expertise/ paths only, and the user's git state is left alone."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import IDENTITY, Cli, diverging_branches, git, snapshot


def _user_state(repo: Path) -> dict[str, object]:
    files = {k: v for k, v in snapshot(repo).items() if not k.startswith(".expertise/")}
    return {
        "status": git(repo, "status", "--porcelain=v1", "-uall"),
        "staged": git(repo, "diff", "--cached", "--binary"),
        "unstaged": git(repo, "diff", "--binary"),
        "files": files,
    }


def _dirty_the_user_tree(repo: Path) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('v1')\n")
    (repo / "notes.txt").write_text("tracked\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "user work")
    (repo / "src" / "app.py").write_text("print('v2 staged')\n")
    git(repo, "add", "src/app.py")
    (repo / "src" / "app.py").write_text("print('v3 unstaged on top of staged')\n")
    (repo / "notes.txt").write_text("tracked, edited, not staged\n")
    (repo / "staged_new.txt").write_text("brand new, staged\n")
    git(repo, "add", "staged_new.txt")
    (repo / "untracked.log").write_text("untracked\n")
    (repo / "README.md").unlink()  # a staged-nothing deletion


def test_each_write_is_one_commit_of_expertise_paths_only(project: Path, run: Cli) -> None:
    before = int(git(project, "rev-list", "--count", "HEAD"))
    result = run("add", "database", "patterns", "Use UUID keys")
    assert result.exit_code == 0, result.output
    assert "committed " in result.stdout
    assert int(git(project, "rev-list", "--count", "HEAD")) == before + 1
    assert git(project, "show", "--name-only", "--format=", "HEAD").split() == [".expertise/database.yaml"]
    message = git(project, "log", "-1", "--format=%B")
    assert message.startswith("expertise(database): add 1 entry by hand\n")
    trailers = git(project, "log", "-1", "--format=%(trailers:only,unfold)").strip().splitlines()
    assert "Expertise-Domain: database" in trailers
    assert "Expertise-Change: manual" in trailers
    assert any(t.startswith("Expertise-Added: ") for t in trailers)
    people = git(project, "log", "-1", "--format=%an|%ae|%cn|%ce").strip()
    name, email = IDENTITY["GIT_COMMITTER_NAME"], IDENTITY["GIT_COMMITTER_EMAIL"]
    assert people == f"expertise_kit (on behalf of {name})|{email}|{name}|{email}"
    assert git(project, "status", "--porcelain", "--", ".expertise") == ""


def test_init_commits_its_files(project: Path) -> None:
    files = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert ".expertise/config.yaml" in files and ".expertise/general.yaml" in files
    assert git(project, "log", "-1", "--format=%s") == "expertise: set up .expertise/ with 7 domains\n"
    assert git(project, "status", "--porcelain") == ""


def test_user_staged_unstaged_and_untracked_work_is_untouched(project: Path, run: Cli) -> None:
    _dirty_the_user_tree(project)
    before = _user_state(project)
    for text in ("first", "second"):
        assert run("add", "api", "patterns", text).exit_code == 0
    after = _user_state(project)
    assert after == before
    assert git(project, "show", "--name-only", "--format=", "HEAD").split() == [".expertise/api.yaml"]
    assert "staged_new.txt" not in git(project, "show", "--name-only", "--format=", "HEAD")


def test_a_pre_commit_hook_signing_and_editor_cannot_block_or_hang(project: Path) -> None:
    hook = project / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nsleep 600\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    (project / ".git" / "hooks" / "commit-msg").write_text("#!/bin/sh\nexit 1\n")
    (project / ".git" / "hooks" / "commit-msg").chmod(0o755)
    git(project, "config", "commit.gpgsign", "true")
    git(project, "config", "gpg.program", "/nonexistent/gpg")
    git(project, "config", "core.editor", "vim")
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", "-C", str(project), "add", "testing", "patterns", "No hangs"],
        capture_output=True,
        text=True,
        timeout=120,  # a hang would fail here instead of stalling the suite
        stdin=None,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "committed" in done.stdout
    assert git(project, "log", "-1", "--format=%s").startswith("expertise(testing)")


def _enter(state: str, repo: Path) -> None:
    if state == "index_lock":
        (repo / ".git" / "index.lock").write_text("")
    elif state == "merge":
        diverging_branches(repo)
        git(repo, "merge", "other", check=False)
    elif state == "rebase":
        diverging_branches(repo)
        git(repo, "rebase", "other", check=False)
    elif state == "cherry_pick":
        diverging_branches(repo)
        git(repo, "cherry-pick", "other", check=False)
    elif state == "revert":
        diverging_branches(repo)
        (repo / "c.txt").write_text("ours again\n")
        git(repo, "commit", "-q", "-am", "ours again")
        git(repo, "revert", "--no-edit", "HEAD~1", check=False)
    elif state == "bisect":
        git(repo, "bisect", "start")
    elif state == "detached":
        git(repo, "checkout", "-q", "--detach")


def _leave(state: str, repo: Path) -> None:
    if state == "index_lock":
        (repo / ".git" / "index.lock").unlink()
    elif state in ("merge", "cherry_pick", "revert"):
        git(repo, state.replace("_", "-"), "--abort")
    elif state == "rebase":
        git(repo, "rebase", "--abort")
    elif state == "bisect":
        git(repo, "bisect", "reset")
    elif state == "detached":
        git(repo, "checkout", "-q", "main")


STATES = ["index_lock", "merge", "rebase", "cherry_pick", "revert", "bisect", "detached"]
REASONS = {
    "index_lock": "index.lock is held by another git process",
    "merge": "a merge is in progress",
    "rebase": "a rebase is in progress",
    "cherry_pick": "a cherry-pick is in progress",
    "revert": "a revert is in progress",
    "bisect": "a bisect is in progress",
    "detached": "HEAD is detached",
}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("catch_up", ["next_write", "sync"])
def test_busy_repo_defers_the_commit_and_catches_up(project: Path, run: Cli, state: str, catch_up: str) -> None:
    _enter(state, project)
    head = git(project, "rev-parse", "HEAD")
    result = run("add", "security", "patterns", "Rotate keys yearly")
    assert result.exit_code == 0, result.output
    assert "note: commit deferred: " in result.stderr
    assert REASONS[state] in result.stderr
    # git refuses to go on over a changed file its next step touches: the way out is said, and works (below)
    advised = "if git then refuses to go on, `git checkout -- .expertise/security.yaml` first" in result.stderr
    assert advised == (state in ("rebase", "cherry_pick", "revert"))
    assert "Rotate keys yearly" in (project / ".expertise" / "security.yaml").read_text()
    assert git(project, "rev-parse", "HEAD") == head
    rows = json.loads(run("history", "security", "--json").stdout)
    assert rows[0]["deferred"] is True and rows[0]["commit"] is None
    _leave(state, project)
    if catch_up == "sync":
        synced = run("history", "--sync")
        assert synced.exit_code == 0, synced.output
        assert "committed" in synced.stdout
        assert git(project, "log", "-1", "--format=%s").strip() == "expertise: commit 1 deferred revision"
    else:
        again = run("add", "security", "patterns", "Pin dependencies")
        assert "(with 1 deferred revision)" in again.stdout
        body = git(project, "log", "-1", "--format=%B")
        assert "Also commits 1 deferred revision:" in body
    committed = git(project, "show", "HEAD:.expertise/security.yaml")
    assert "Rotate keys yearly" in committed  # restored first if the abort wiped it
    assert git(project, "status", "--porcelain", "--", ".expertise") == ""
    assert not json.loads(run("history", "security", "--json").stdout)[0]["deferred"]


def test_sync_while_still_busy_is_a_clear_error(project: Path, run: Cli) -> None:
    _enter("merge", project)
    run("add", "api", "patterns", "x")
    result = run("history", "--sync")
    assert result.exit_code == 1
    assert "still deferred: a merge is in progress" in result.stderr


def test_unborn_branch_defers_until_the_first_commit(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    cli = Cli(repo)
    result = cli("init")
    assert result.exit_code == 0
    assert "commit deferred: the current branch has no commits yet" in result.stderr
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""  # nothing staged behind the user's back
    (repo / "app.py").write_text("x = 1\n")
    git(repo, "add", "app.py")
    git(repo, "commit", "-q", "-m", "first")
    assert cli("history", "--sync").exit_code == 0
    assert ".expertise/database.yaml" in git(repo, "show", "--name-only", "--format=", "HEAD")


def test_no_git_repo_writes_and_says_so(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    result = cli("init")
    assert result.exit_code == 0
    assert "not a git repository" in result.stderr and "git init" in result.stderr
    added = cli("add", "general", "patterns", "Works without git")
    assert added.exit_code == 0
    assert "Works without git" in (tmp_path / ".expertise" / "general.yaml").read_text()
    rows = json.loads(cli("history", "--json").stdout)
    assert [row["deferred"] for row in rows] == [True, True]
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "x").write_text("x")
    git(tmp_path, "add", "x")
    git(tmp_path, "commit", "-q", "-m", "first")
    assert cli("history", "--sync").exit_code == 0
    assert "Works without git" in git(tmp_path, "show", "HEAD:.expertise/general.yaml")
    assert git(tmp_path, "status", "--porcelain", "--", ".expertise") == ""


def test_no_identity_defers_with_the_reason(project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(key)
    git(project, "config", "--unset", "user.name")
    git(project, "config", "--unset", "user.email")
    result = run("add", "api", "patterns", "x")
    assert result.exit_code == 0
    assert "no user identity" in result.stderr
    assert "x" in (project / ".expertise" / "api.yaml").read_text()


def test_identity_comes_from_git_config_the_nearest_level_winning(
    project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(key)
    git(project, "config", "--global", "user.name", "Global Gale")
    git(project, "config", "--global", "user.email", "gale@example.test")
    git(project, "config", "user.name", "Local Lee")  # the repository's own beats the global one
    git(project, "config", "--unset", "user.email")  # and the global email fills the gap
    assert run("add", "api", "patterns", "Identity from config").exit_code == 0
    author = git(project, "log", "-1", "--format=%an|%ae", "--", ".expertise/api.yaml").strip()
    assert author == "expertise_kit (on behalf of Local Lee)|gale@example.test"

    # Read anew for every revision: a long-running process (`expertise mcp`, `serve`) sees a config change.
    git(project, "config", "user.name", "Later Lou")
    assert run("add", "api", "patterns", "Identity read again").exit_code == 0
    author = git(project, "log", "-1", "--format=%an", "--", ".expertise/api.yaml").strip()
    assert author == "expertise_kit (on behalf of Later Lou)"


def test_a_config_git_cannot_read_is_named_not_taken_for_a_missing_identity(
    project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    with open(project / ".git" / "config", "a") as handle:
        handle.write("[broken\n")
    result = run("add", "api", "patterns", "Lesson with a broken config")
    assert result.exit_code == 0 and "bad config line" in result.stderr and "no user identity" not in result.stderr


def test_a_git_dir_in_the_environment_does_not_send_the_commit_elsewhere(
    project: Path, run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "commit", "-q", "--allow-empty", "-m", "the other repository's own")
    # As git sets it for an alias run in a linked worktree, or as vcsh exports it.
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    assert run("add", "api", "patterns", "Lesson for this project").exit_code == 0
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert git(other, "log", "--format=%s") == "the other repository's own\n"
    assert "add 1 entry" in git(project, "log", "-1", "--format=%s")
    assert git(project, "status", "--porcelain", "--", ".expertise") == ""


def test_no_git_executable_is_one_line_with_a_hint(project: Path, run: Cli, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    added = run("add", "api", "patterns", "Written while git is away")
    assert added.exit_code == 0 and "git is not available" in added.stderr  # written, the revision waits
    synced = run("history", "--sync")
    assert synced.exit_code == 1 and "git is not available" in synced.stderr and "PATH" in synced.stderr
    assert "Traceback" not in synced.output
