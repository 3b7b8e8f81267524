"""Every git call goes through here: a plain git process, with settings that never hang.

Automated commits must not wait on a signing prompt, an editor, a credential prompt or the user's own
hooks, so every command runs with stdin closed, a kill timeout, ``commit.gpgsign=false`` and hooks
pointed at an empty path. Failures raise ``GitError`` carrying the command, stdout and stderr.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expertise_kit.errors import UserError

if TYPE_CHECKING:
    from git import Repo

__all__ = [
    "GitError", "GitResult", "open_repo", "run_git", "SAFE_CONFIG", "GIT_TIMEOUT_SECONDS", "NO_SPACE_HINT",
    "NO_SPACE_MARKERS", "no_space", "short_of_space", "configured_identity", "GitMissing",
]  # fmt: skip

GIT_TIMEOUT_SECONDS = 60
# -c settings for every command we run. hooksPath=/dev/null means git finds no hooks at all: a user's
# pre-commit hook may be slow, interactive or failing, and it is not there to vet our commits.
SAFE_CONFIG: tuple[str, ...] = (
    "-c", "commit.gpgsign=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.editor=true",
    "-c", "core.quotePath=false",
    "-c", "color.ui=false",
    "-c", "log.showSignature=false",
    "-c", "i18n.logOutputEncoding=UTF-8",
)  # fmt: skip


# What git says when the disk is full: "No space left on device" (strerror), or "Out of diskspace" when
# it fails to write an object or the index.lock (which must not read as a lock held by someone).
NO_SPACE_MARKERS = ("no space left on device", "out of diskspace", "disk quota exceeded")
NO_SPACE_HINT = "the disk is full: free some space"

# Refusals whose fix is the user's, with what to do about them; the first that matches is given.
_HINTS: tuple[tuple[str, str], ...] = (
    *((marker, NO_SPACE_HINT) for marker in NO_SPACE_MARKERS),
    ("dubious ownership", "the repository belongs to another user; if you trust it, run "
     "`git config --global --add safe.directory {path}`"),
    ("not a git repository", "run it inside a git work tree, or `git init` first"),
    ("unknown revision", "see `expertise history` for revisions"),
    ("index.lock", "another git process holds the index; wait for it, or delete the lock if none is running"),
)  # fmt: skip


class GitError(UserError):
    """git refused or failed: one line with the command and git's own first line of complaint."""

    def __init__(self, argv: Sequence[str], status: int, stdout: str, stderr: str, *, cwd: Path | None = None) -> None:
        self.argv = list(argv)
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
        lines = [line.strip() for line in (stderr or stdout).splitlines() if line.strip()]
        first = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[0] if lines else "")
        text = (stderr + stdout).lower()
        hint = next((advice for marker, advice in _HINTS if marker in text), None)
        if hint is not None:
            hint = hint.replace("{path}", str(cwd) if cwd is not None else "<path>")
        cause = "no space left on device: " if any(marker in text for marker in NO_SPACE_MARKERS) else ""
        super().__init__(
            f"{cause}`git {' '.join(argv[:3])}{' ...' if len(argv) > 3 else ''}` exited {status}: "
            f"{first or 'no output'}",
            path=cwd,
            hint=hint,
        )


def short_of_space(path: Path) -> bool:
    """Whether the filesystem holding ``path`` is (nearly) full: git's own words don't always say so
    ("couldn't write '.git/refs/heads/main.lock'" when the ref lock finds no room)."""
    try:
        found = os.statvfs(path)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < 1024 * 1024


def no_space(exc: OSError) -> bool:
    """Whether ``exc`` is a full disk (or quota)."""
    import errno

    return exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


class GitResult:
    __slots__ = ("status", "stdout", "stderr")

    def __init__(self, status: int, stdout: str, stderr: str) -> None:
        self.status = status
        self.stdout = stdout
        self.stderr = stderr


def _environment(extra: dict[str, str] | None) -> dict[str, str]:
    env = {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_EDITOR": "true",
        "GIT_SEQUENCE_EDITOR": "true",
        "GIT_PAGER": "cat",
        "LC_ALL": "C",
    }
    if extra:
        env.update(extra)
    return env


@contextmanager
def open_repo(path: Path) -> Iterator[Repo]:
    """A GitPython Repo that is always closed, so no `git cat-file` child outlives its use."""
    try:  # here, not at the top: GitPython raises on import when no git executable is on PATH
        from git import Repo
    except ImportError:  # GitPython will not load without a working git executable
        raise UserError("git is not available", hint="install git or put it on PATH") from None

    from git.exc import InvalidGitRepositoryError, NoSuchPathError

    try:
        repo = Repo(path)
    except (InvalidGitRepositoryError, NoSuchPathError):
        raise UserError("not a git repository, or git can't read it", path=path, hint="run it in a work tree") from None
    try:
        yield repo
    finally:
        repo.close()


# What pins a git process to a repository, an index or a work tree. git sets some of them for the aliases
# and hooks it runs (GIT_DIR in a linked worktree), and tools such as vcsh export them; inherited, they would
# send our commit to another repository or branch. Without them git finds the repository from ``cwd``.
_PINNING = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_IMPLICIT_WORK_TREE", "GIT_PREFIX", "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_INTERNAL_SUPER_PREFIX",
)  # fmt: skip


class GitMissing(UserError):
    """No git executable to run."""

    def __init__(self) -> None:
        super().__init__("git is not available", hint="install git or put it on PATH")


def run_git(
    where: Repo | Path,
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    check: bool = True,
    stdin: str | None = None,
) -> GitResult:
    """One git command in ``where`` (a work tree, or an open Repo's), as a plain process: GitPython takes
    longer to import than a learn takes to commit, and only reading history needs its object model.
    ``stdin`` is what git reads on its standard input (a commit message: no argument list limits it)."""
    cwd = where if isinstance(where, Path) else Path(str(where.working_dir))
    inherited = {key: value for key, value in os.environ.items() if key not in _PINNING}
    fed: dict[str, Any] = {"stdin": subprocess.DEVNULL}
    if stdin is not None:
        fed = {"input": stdin.encode("utf-8", "surrogateescape")}
    try:
        done = subprocess.run(
            ["git", *SAFE_CONFIG, *args], cwd=cwd, env={**inherited, "LANGUAGE": "C", **_environment(env)},
            capture_output=True, timeout=GIT_TIMEOUT_SECONDS, check=False, **fed,
        )  # fmt: skip
        stdout, stderr = (part.decode("utf-8", "surrogateescape") for part in (done.stdout, done.stderr))
        result = GitResult(done.returncode, stdout, stderr.removesuffix("\n"))
    except subprocess.TimeoutExpired:
        result = GitResult(-9, "", f"git was stopped after {GIT_TIMEOUT_SECONDS} s")
    except (FileNotFoundError, PermissionError):
        raise GitMissing() from None
    if check and result.status != 0:
        raise GitError(args, result.status, result.stdout, result.stderr, cwd=cwd)
    return result


_identities: dict[str, tuple[str | None, str | None]] = {}  # work tree -> user.name, user.email


def configured_identity(toplevel: Path, *, again: bool = True) -> tuple[str | None, str | None]:
    """What git's config says of ``user.name`` and ``user.email`` (None where it says nothing). ``again``
    reads it anew; without it, what this process last read for the work tree is taken: the shared layer's
    commit asks right after the branch commit of the same revision did. A config git can't read raises."""
    key = str(toplevel)
    if again or key not in _identities:
        args = ["config", "-z", "--get-regexp", r"^user\.(name|email)$"]
        listed = run_git(toplevel, args, check=False)
        if listed.status not in (0, 1):  # 1: nothing set
            raise GitError(args, listed.status, listed.stdout, listed.stderr, cwd=toplevel)
        found: dict[str, str] = {}
        for item in listed.stdout.split("\0"):  # "key\nvalue", lowest level first: the last one wins
            name, _, value = item.partition("\n")
            found[name] = value
        _identities[key] = (found.get("user.name") or None, found.get("user.email") or None)
    return _identities[key]
