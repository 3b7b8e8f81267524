"""Every git call goes through here: GitPython's command wrapper, with settings that never hang.

Automated commits must not wait on a signing prompt, an editor, a credential prompt or the user's own
hooks, so every command runs with stdin closed, a kill timeout, ``commit.gpgsign=false`` and hooks
pointed at an empty path. Failures raise ``GitError`` carrying the command, stdout and stderr.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from expertise_kit.errors import ExpertiseError, UserError

if TYPE_CHECKING:
    from git import Repo

__all__ = ["GitError", "GitResult", "open_repo", "run_git", "SAFE_CONFIG", "GIT_TIMEOUT_SECONDS"]

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


class GitError(ExpertiseError):
    def __init__(self, argv: Sequence[str], status: int, stdout: str, stderr: str) -> None:
        self.argv = list(argv)
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
        first = (stderr.strip().splitlines() or stdout.strip().splitlines() or ["no output"])[0]
        super().__init__(f"`git {' '.join(argv)}` exited {status}: {first}")


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
    try:
        from git import Repo
    except ImportError:  # GitPython will not load without a working git executable
        raise UserError("git is not available", hint="install git or put it on PATH") from None

    repo = Repo(path)
    try:
        yield repo
    finally:
        repo.close()


def run_git(
    repo: Repo,
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    check: bool = True,
) -> GitResult:
    argv = ["git", *SAFE_CONFIG, *args]
    status, stdout, stderr = repo.git.execute(
        argv,
        with_extended_output=True,
        with_exceptions=False,
        env=_environment(env),
        kill_after_timeout=GIT_TIMEOUT_SECONDS,
        strip_newline_in_stdout=False,
        istream=subprocess.DEVNULL,
    )
    result = GitResult(int(status), str(stdout), str(stderr))
    if check and result.status != 0:
        raise GitError(args, result.status, result.stdout, result.stderr)
    return result
