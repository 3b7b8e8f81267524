"""The project, its ``.expertise/`` directory and its git directories, found without running git
(``locate`` searches; spawning git costs milliseconds we can't spend on the pre-task hook)."""

from __future__ import annotations

import os
from pathlib import Path

from expertise_kit.errors import NotInitialised, UserError
from expertise_kit.lightdata import dataclass
from expertise_kit.locate import EXPERTISE_DIR, git_dirs, lock_path, project_root

__all__ = [
    "Project",
    "GitLocation",
    "find_git",
    "find_project",
    "project_for_init",
    "ensure_inside",
    "EXPERTISE_DIR",
]

@dataclass(frozen=True)
class GitLocation:
    toplevel: Path
    git_dir: Path  # this worktree's own git dir
    common_dir: Path  # shared by every worktree of the repo


@dataclass(frozen=True)
class Project:
    root: Path
    git: GitLocation | None

    @property
    def expertise_dir(self) -> Path:
        return self.root / EXPERTISE_DIR

    def domain_path(self, domain: str) -> Path:
        """Where ``domain``'s file is; a symlink is followed only to a file inside ``.expertise/``."""
        path = self.expertise_dir / f"{domain}.yaml"
        if path.is_symlink():
            target = Path(os.path.realpath(path))
            home = Path(os.path.realpath(self.expertise_dir))
            if not target.is_relative_to(home):
                raise UserError(
                    f"is a symlink to {target}, outside .expertise/",
                    path=path,
                    hint="replace the link with a regular file",
                )
            return target
        return path

    @property
    def lock_path(self) -> Path:
        return Path(lock_path(str(self.root), str(self.git.common_dir) if self.git is not None else None))


def find_git(start: Path) -> GitLocation | None:
    found = git_dirs(str(start.resolve()))
    if found is None:
        return None
    toplevel, git_dir, common = found
    return GitLocation(toplevel=Path(toplevel), git_dir=Path(git_dir), common_dir=Path(common))


def ensure_inside(project: Project) -> None:
    """Refuse a ``.expertise`` that is a symlink leading out of the project, or into its ``.git``.

    Files written through such a link land outside the repository (where git can't commit them, so the
    write fails after the damage is done). A link to a directory inside the work tree is fine: git sees
    the real paths. Call it before writing anything; ``find_project`` already does.
    """
    directory = project.expertise_dir
    if not os.path.islink(directory):
        return
    target = Path(os.path.realpath(directory))
    root = Path(os.path.realpath(project.root))
    if not os.path.isdir(target):
        raise UserError(
            f"is a symlink to {os.readlink(directory)}, which is not a directory",
            path=directory,
            hint="replace the link with a real directory",
        )
    if not target.is_relative_to(root):
        raise UserError(
            f"is a symlink to {target}, outside the project",
            path=directory,
            hint=f"replace the link with a real directory inside {root}",
        )
    if project.git is not None and (
        target.is_relative_to(os.path.realpath(project.git.git_dir))
        or target.is_relative_to(os.path.realpath(project.git.common_dir))
    ):
        raise UserError(
            f"is a symlink into git's own directory ({target})",
            path=directory,
            hint="replace the link with a real directory in the work tree",
        )


def _is_git_dir(directory: Path) -> bool:
    """What git takes for a git directory: a HEAD naming a ref or commit, objects and refs (or ``commondir``)."""
    try:
        head = (directory / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return False
    if not (head.startswith("ref: refs/") or (len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head))):
        return False
    return (directory / "commondir").is_file() or ((directory / "objects").is_dir() and (directory / "refs").is_dir())


def check_not_git_dir(start: Path) -> None:
    """Refuse a ``start`` inside a bare repo or a ``.git``: there is no work tree to put ``.expertise/`` in.

    Looked for level by level as git discovers a repo: a ``.git`` entry first (``start`` is in a work
    tree), then the directory itself.
    """
    here = start.resolve()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return
        if not _is_git_dir(directory):
            continue
        try:
            config = (directory / "config").read_text(encoding="utf-8", errors="replace")
        except OSError:
            config = ""
        if any("".join(line.split()).lower() == "bare=true" for line in config.splitlines()):
            raise UserError("a bare repository has no work tree", path=directory, hint="run init in a clone")
        where = directory.parent if directory.name == ".git" else "its work tree"
        raise UserError("is a git directory, not a work tree", path=directory, hint=f"run init in {where}")


def project_for_init(start: Path) -> Project:
    """``init`` puts ``.expertise/`` at the top of the git work tree, or in ``start`` outside git."""
    check_not_git_dir(start)
    git = find_git(start)
    root = git.toplevel if git is not None else start.resolve()
    project = Project(root=root, git=git)
    ensure_inside(project)
    return project


def find_project(start: Path | None = None) -> Project:
    """The nearest ``.expertise/`` at or above ``start``, not looking above the git work tree."""
    here = (start or Path(os.getcwd())).resolve()
    git = find_git(here)
    root = project_root(str(here), str(git.toplevel) if git is not None else None)
    if root is None:
        raise NotInitialised(
            f"no {EXPERTISE_DIR}/ directory in {here} or its parents",
            hint="run `expertise init` at the top of your project",
        )
    directory = Path(root)
    project = Project(root=directory, git=git if git and directory.is_relative_to(git.toplevel) else None)
    ensure_inside(project)
    return project
