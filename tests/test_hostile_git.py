"""Git states a user can leave us in: a prepared commit message, a deleted working directory, a bare repo.

All through the real CLI in real git repos; nothing of git is mocked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import Cli, git, snapshot

from expertise_kit.cli import cli

EXPERTISE = Path(sys.executable).parent / "expertise"


def _everything(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory``, git's own included."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# -- a commit message git prepared for the user ----------------------------------------------------


def _side_branch(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "feature.txt").write_text("feature\n")
    git(repo, "add", "feature.txt")
    git(repo, "commit", "-q", "-m", "Add the feature\n\nWith a body the user wants to keep.")
    git(repo, "checkout", "-q", "main")


def _prepare(state: str, repo: Path) -> Path:
    """Leave ``repo`` with a prepared message, as the user's own git command would; return its file."""
    _side_branch(repo)
    dot_git = repo / ".git"
    if state == "squash":
        git(repo, "merge", "--squash", "side")
        message = dot_git / "SQUASH_MSG"
    else:
        git(repo, "cherry-pick", "-n", "side")
        message = dot_git / "MERGE_MSG"
        assert not (dot_git / "CHERRY_PICK_HEAD").exists()  # the state in question: no pick in progress
    assert message.is_file()
    assert not (dot_git / "MERGE_HEAD").exists()
    return message


@pytest.mark.parametrize("state", ["squash", "cherry_pick_no_commit"])
@pytest.mark.parametrize("catch_up", ["sync", "next_write"])
def test_a_prepared_commit_message_defers_our_commit(project: Path, run: Cli, state: str, catch_up: str) -> None:
    message = _prepare(state, project)
    prepared = message.read_bytes()
    head = git(project, "rev-parse", "HEAD")
    staged = git(project, "diff", "--cached", "--name-only")
    assert staged == "feature.txt\n"

    result = run("add", "security", "patterns", "Rotate keys yearly")
    assert result.exit_code == 0, result.output
    notes = result.stderr.splitlines()
    assert len(notes) == 1 and notes[0].startswith("note: commit deferred: ")
    assert message.name in notes[0] and "commit or delete it first" in notes[0]
    assert message.read_bytes() == prepared  # the user's message is still there, byte for byte
    assert git(project, "rev-parse", "HEAD") == head
    assert git(project, "diff", "--cached", "--name-only") == staged
    assert json.loads(run("history", "security", "--json").stdout)[0]["deferred"] is True

    # A second write while the message still waits defers too, and still leaves it alone.
    assert "note: commit deferred" in run("add", "security", "patterns", "Pin dependencies").stderr
    assert message.read_bytes() == prepared

    # The user commits their squash or pick with the message git prepared.
    git(project, "commit", "-q", "--no-edit")
    assert not message.exists()
    users = git(project, "log", "-1", "--format=%B")
    assert ("Squashed commit" in users) if state == "squash" else users.startswith("Add the feature")
    assert git(project, "show", "--name-only", "--format=", "HEAD") == "feature.txt\n"

    if catch_up == "sync":
        synced = run("history", "--sync")
        assert synced.exit_code == 0 and "committed" in synced.stdout, synced.output
    else:
        again = run("add", "security", "patterns", "Review access quarterly")
        assert "(with 2 deferred revisions)" in again.stdout, again.output
    committed = git(project, "show", "HEAD:.expertise/security.yaml")
    assert "Rotate keys yearly" in committed and "Pin dependencies" in committed
    assert git(project, "show", "--name-only", "--format=", "HEAD").splitlines() == [".expertise/security.yaml"]
    assert git(project, "status", "--porcelain") == ""
    assert not json.loads(run("history", "security", "--json").stdout)[0]["deferred"]


def test_learn_defers_during_a_squash_too(project: Path, run: Cli, tmp_path: Path) -> None:
    from builders import shop_session

    message = _prepare("squash", project)
    prepared = message.read_bytes()
    result = run("learn", str(shop_session().write(tmp_path / "s.jsonl")))
    assert result.exit_code == 0, result.output
    assert "SQUASH_MSG" in result.stderr
    assert message.read_bytes() == prepared


# -- a working directory deleted under the process -------------------------------------------------


def _from_deleted_cwd(parent: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the installed `expertise` from a directory removed just before exec, as a shell would."""
    assert EXPERTISE.is_file(), f"no {EXPERTISE}: install the package into this venv"
    (parent / "gone").mkdir()
    script = 'cd gone && rmdir ../gone && exec "$@"'
    return subprocess.run(
        ["sh", "-c", script, "sh", str(EXPERTISE), *args],
        cwd=parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args",
    [("list",), ("init",), ("show", "testing"), ("hooks", "install", "--agent", "codex"), ("-C", ".", "list")],
)
def test_a_deleted_working_directory_is_one_line(project: Path, args: tuple[str, ...]) -> None:
    before = snapshot(project)
    done = _from_deleted_cwd(project, *args)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "expertise: error: the current directory no longer exists; cd to your project"
    ], done.stderr
    assert snapshot(project) == before


def test_a_deleted_working_directory_with_C_and_a_relative_path(project: Path, tmp_path: Path) -> None:
    # -C names the project, so the command starts; the relative transcript path is what needs the cwd.
    before = snapshot(project)
    done = _from_deleted_cwd(project, "-C", str(project), "learn", "session.jsonl")
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["expertise: error: the current directory no longer exists; cd to your project"]
    assert snapshot(project) == before
    listed = _from_deleted_cwd(project, "-C", str(project), "list")  # an absolute -C still works
    assert listed.returncode == 0 and "testing" in listed.stdout, listed.stderr


# -- init where there is no work tree --------------------------------------------------------------


@pytest.fixture
def bare(tmp_path: Path, repo: Path) -> Path:
    path = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(path))
    return path


def _init_in(directory: Path, monkeypatch: pytest.MonkeyPatch, *, with_c: bool) -> tuple[int, str, str]:
    runner = CliRunner()
    if with_c:
        result = runner.invoke(cli, ["-C", str(directory), "init"], catch_exceptions=False)
    else:
        monkeypatch.chdir(directory)
        result = runner.invoke(cli, ["init"], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("where", [".", "refs", "objects/info"])
@pytest.mark.parametrize("with_c", [True, False])
def test_init_refuses_a_bare_repository(
    bare: Path, monkeypatch: pytest.MonkeyPatch, where: str, with_c: bool
) -> None:
    before = _everything(bare)
    code, out, err = _init_in(bare / where, monkeypatch, with_c=with_c)
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"expertise: error: {bare.resolve()}: a bare repository has no work tree; run init in a clone"
    ]
    assert _everything(bare) == before
    assert not (bare / ".expertise").exists()


@pytest.mark.parametrize("where", [".git", ".git/refs/heads", ".git/hooks"])
@pytest.mark.parametrize("with_c", [True, False])
def test_init_refuses_a_dot_git_directory(
    repo: Path, monkeypatch: pytest.MonkeyPatch, where: str, with_c: bool
) -> None:
    before = _everything(repo)
    code, out, err = _init_in(repo / where, monkeypatch, with_c=with_c)
    assert code == 1 and out == ""
    dot_git = (repo / ".git").resolve()
    assert err.splitlines() == [
        f"expertise: error: {dot_git}: is a git directory, not a work tree; run init in {repo.resolve()}"
    ]
    assert _everything(repo) == before


def test_init_refuses_a_linked_worktrees_git_directory(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    inner = repo / ".git" / "worktrees" / "linked"
    before = _everything(repo)
    result = Cli(inner)("init")
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1 and "is a git directory, not a work tree" in result.stderr
    assert _everything(repo) == before
    # The linked worktree itself is a work tree, and init works there.
    assert Cli(tmp_path / "linked")("init").exit_code == 0
    assert (tmp_path / "linked" / ".expertise" / "config.yaml").is_file()


def test_init_still_works_in_a_repo_subdirectory_and_outside_git(repo: Path, tmp_path: Path) -> None:
    # Controls: directories that merely look like git's (a `refs` dir of the user's own) are not refused.
    sub = repo / "src" / "refs"
    sub.mkdir(parents=True)
    (sub / "HEAD").write_text("not git\n")
    (sub / "objects").mkdir()
    (sub / "refs").mkdir()
    assert Cli(sub)("init").exit_code == 0 and (repo / ".expertise").is_dir()
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "HEAD").write_text("ref: refs/heads/main\n")  # without objects/ and refs/: not a git dir
    assert Cli(plain)("init").exit_code == 0 and (plain / ".expertise").is_dir()


def test_the_way_out_of_a_rebase_a_write_stopped_is_said_and_keeps_the_entry(project: Path, run: Cli) -> None:
    """A write while a rebase is stopped leaves the domain file changed, and `git rebase --continue` then
    refuses when the next commit it replays touches that file. The note says how to go on; done so, the
    entry comes back and is committed."""
    (project / "f.txt").write_text("base\n")
    git(project, "add", "f.txt")
    git(project, "commit", "-qm", "base")
    git(project, "checkout", "-qb", "feature")
    (project / "f.txt").write_text("feature\n")
    git(project, "commit", "-qam", "feature: edit f")
    assert run("add", "api", "patterns", "Learned on feature").exit_code == 0
    git(project, "checkout", "-q", "main")
    (project / "f.txt").write_text("main\n")
    git(project, "commit", "-qam", "main: edit f")
    git(project, "checkout", "-q", "feature")
    git(project, "rebase", "main", check=False)
    result = run("add", "api", "patterns", "Written while the rebase is stopped")
    assert "`git checkout -- .expertise/api.yaml` first" in result.stderr
    (project / "f.txt").write_text("resolved\n")
    git(project, "add", "f.txt")
    env = {**os.environ, "GIT_EDITOR": "true"}
    refused = subprocess.run(["git", "rebase", "--continue"], cwd=project, capture_output=True, env=env)
    assert refused.returncode != 0  # what the note is for
    git(project, "checkout", "--", ".expertise/api.yaml")
    assert subprocess.run(["git", "rebase", "--continue"], cwd=project, capture_output=True, env=env).returncode == 0
    assert run("history", "--sync").exit_code == 0
    committed = git(project, "show", "HEAD:.expertise/api.yaml")
    assert "Learned on feature" in committed and "Written while the rebase is stopped" in committed
    assert git(project, "status", "--porcelain") == ""
