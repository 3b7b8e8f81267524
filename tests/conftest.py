"""Shared fixtures: real git repos in temp dirs with a pinned identity, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from expertise_kit.cli import cli

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRANSCRIPTS = SHARED / "fixtures" / "transcripts"

IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.test",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.test",
}


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's git config, hooks or identity; every test sees the same one."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", IDENTITY["GIT_COMMITTER_NAME"])
    git(root, "config", "user.email", IDENTITY["GIT_COMMITTER_EMAIL"])
    git(root, "config", "commit.gpgsign", "false")
    (root / "README.md").write_text("# demo\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial")
    return root


def diverging_branches(repo: Path) -> None:
    """`main` and `other` change the same line of c.txt: a merge, rebase or pick of one onto the other stops."""
    (repo / "c.txt").write_text("base\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "c.txt").write_text("theirs\n")
    git(repo, "commit", "-q", "-am", "theirs")
    git(repo, "checkout", "-q", "main")
    (repo / "c.txt").write_text("ours\n")
    git(repo, "commit", "-q", "-am", "ours")


@dataclass
class Cli:
    cwd: Path

    def __call__(self, *args: str, input: str | None = None) -> Result:
        runner = CliRunner()
        return runner.invoke(cli, ["-C", str(self.cwd), *args], input=input, catch_exceptions=False)


@pytest.fixture
def run(repo: Path) -> Cli:
    return Cli(repo)


@pytest.fixture
def worktrees(repo: Path) -> tuple[Path, Path]:
    """`init` on main, then two worktrees on branches of their own (the shared layer's tests)."""
    Cli(repo)("init")
    a, b = repo.parent / "wt-a", repo.parent / "wt-b"
    git(repo, "worktree", "add", "-q", str(a), "-b", "branch-a")
    git(repo, "worktree", "add", "-q", str(b), "-b", "branch-b")
    return a, b


@pytest.fixture
def clones(tmp_path: Path, repo: Path) -> list[Path]:
    """Three clones of a bare remote, each with `init` done; the first is ``repo``, which pushed main."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    Cli(repo)("init")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    made = [repo]
    for name in ("c2", "c3"):
        git(tmp_path, "clone", "-q", str(remote), name)
        made.append(tmp_path / name)
        Cli(tmp_path / name)("init")
    return made


@pytest.fixture
def project(repo: Path, run: Cli) -> Iterator[Path]:
    """A repo with `expertise init` done."""
    result = run("init")
    assert result.exit_code == 0, result.output
    yield repo


def clone_with_driver(remote: Path, where: Path) -> Path:
    """A clone of ``remote`` at ``where`` with the identity pinned and `expertise init` run, which registers
    the merge driver (git config does not travel with a clone)."""
    git(where.parent, "clone", "-q", str(remote), where.name)
    git(where, "config", "user.name", IDENTITY["GIT_COMMITTER_NAME"])
    git(where, "config", "user.email", IDENTITY["GIT_COMMITTER_EMAIL"])
    result = Cli(where)("init")
    assert result.exit_code == 0, result.output
    return where


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` by relative path, for byte-for-byte before/after checks."""
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(directory).parts
    }


def make_writable(path: Path) -> None:
    os.chmod(path, 0o755)


def settle(root: Path) -> None:
    """What the hook's detached rebuild does after a hand edit, a pull or a checkout, done now: the first
    prompt after such a change reads the last good cache, the next ones the rebuilt one."""
    from expertise_kit.config import load_config
    from expertise_kit.project import find_project
    from expertise_kit.store.cachebuild import rebuild_cache

    project = find_project(root)
    rebuild_cache(project, load_config(project.expertise_dir))
