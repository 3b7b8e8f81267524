"""Where the project and its git directories are, found from a directory's path as text, without running git.

``project.py`` wraps these searches in its ``Project`` and ``GitLocation``. The merge driver's quick path
uses them as they are: importing ``pathlib`` costs a process git starts for every merged file ~6 ms of
its start-up. The layout of ``.git`` is stable: a directory, or a file ``gitdir: <path>`` in a linked
worktree whose git dir has a ``commondir`` file pointing at the shared one.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Protocol

    class GitDirs(Protocol):
        """A repository's directories: ``project.GitLocation``, or the merge driver's own as text."""

        @property
        def toplevel(self) -> str | os.PathLike[str]: ...

        @property
        def git_dir(self) -> str | os.PathLike[str]: ...

        @property
        def common_dir(self) -> str | os.PathLike[str]: ...


__all__ = ["EXPERTISE_DIR", "git_dirs", "lock_path", "project_root", "within"]

EXPERTISE_DIR = ".expertise"


def lock_path(root: str, common_dir: str | None) -> str:
    """The write lock: in the common git dir, so every worktree of one repo queues on one lock."""
    if common_dir is not None:
        return os.path.join(common_dir, "expertise.lock")
    return os.path.join(root, EXPERTISE_DIR, ".lock")


def _upwards(path: str) -> Iterator[str]:
    """``path`` and each directory above it, up to the root."""
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def within(path: str, top: str) -> bool:
    """Whether ``path`` is ``top`` or below it (both resolved)."""
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _read_gitfile(dot_git: str) -> str | None:
    try:
        with open(dot_git, encoding="utf-8") as handle:
            content = handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not content.startswith("gitdir:"):
        return None
    target = content[len("gitdir:") :].strip()
    if os.path.isabs(target):
        return os.path.normpath(target)  # as pathlib has it: no trailing slash, no `.` parts
    return os.path.realpath(os.path.join(os.path.dirname(dot_git), target))


def git_dirs(start: str) -> tuple[str, str, str] | None:
    """The work tree's top, its git dir and the common git dir, for ``start`` (a resolved directory); None
    outside git, or when a ``.git`` file does not say where its git dir is."""
    for directory in _upwards(start):
        dot_git = os.path.join(directory, ".git")
        if os.path.isdir(dot_git):
            git_dir: str | None = dot_git
        elif os.path.isfile(dot_git):
            git_dir = _read_gitfile(dot_git)
        else:
            continue
        if git_dir is None:
            return None
        common = git_dir
        pointer = os.path.join(git_dir, "commondir")
        if os.path.isfile(pointer):
            with open(pointer, encoding="utf-8") as handle:
                common = os.path.realpath(os.path.join(git_dir, handle.read().strip()))
        return directory, git_dir, common
    return None


def project_root(here: str, toplevel: str | None) -> str | None:
    """The nearest directory at or above ``here`` (resolved) holding ``.expertise/``, not looking above the
    work tree's top; None when there is none."""
    for directory in _upwards(here):
        candidate = os.path.join(directory, EXPERTISE_DIR)
        if os.path.isdir(candidate) or os.path.islink(candidate):
            return directory
        if toplevel is not None and directory == toplevel:
            break
    return None
