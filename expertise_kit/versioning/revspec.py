"""Resolving revisions and the domain files they touched, and reading any version of those files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expertise_kit.errors import UserError
from expertise_kit.project import Project
from expertise_kit.versioning.entrydiff import FileDiff, diff_versions, parse_version
from expertise_kit.versioning.git import run_git
from expertise_kit.versioning.log import domain_files_in, pathspec, read_file_at

__all__ = ["Resolved", "resolve", "changed_files", "revision_diffs", "worktree_diffs"]


@dataclass(frozen=True)
class Resolved:
    sha: str
    parent: str | None
    subject: str


def resolve(project: Project, repo: Any, rev: str) -> Resolved:
    if project.git is None:
        raise UserError("not a git repository, so there are no revisions", hint="run `git init`")
    if rev.startswith("-"):
        raise UserError(f"bad revision {rev!r}", hint="give a commit hash, branch or HEAD~N")
    result = run_git(repo, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], check=False)
    if result.status != 0:
        raise UserError(f"unknown revision {rev!r}", hint="see `expertise history` for revisions")
    sha = result.stdout.strip()
    commit = repo.commit(sha)
    parent = commit.parents[0].hexsha if commit.parents else None
    return Resolved(sha, parent, str(commit.summary))


def changed_files(project: Project, repo: Any, old: str | None, new: str) -> list[str]:
    args = ["diff-tree", "-r", "--no-commit-id", "--name-only"]
    args += ["--root", new] if old is None else [old, new]
    listed = run_git(repo, [*args, "--", pathspec(project, None)])
    return domain_files_in(listed.stdout.split("\n"), project)


def revision_diffs(project: Project, repo: Any, old: str | None, new: str) -> list[FileDiff]:
    diffs = []
    for path in changed_files(project, repo, old, new):
        before = parse_version(read_file_at(repo, old, path) if old else None, f"{(old or '')[:12]}:{path}")
        after = parse_version(read_file_at(repo, new, path), f"{new[:12]}:{path}")
        diffs.append(diff_versions(path, before, after))
    return [d for d in diffs if not d.empty]


def worktree_diffs(project: Project, repo: Any) -> list[FileDiff]:
    """Uncommitted changes: the files on disk against HEAD (hand edits, deferred revisions)."""
    assert project.git is not None
    spec = pathspec(project, None)
    tracked = run_git(repo, ["diff", "--name-only", "HEAD", "--", spec], check=False).stdout.split("\n")
    untracked = run_git(repo, ["ls-files", "--others", "--exclude-standard", "--", spec]).stdout.split("\n")
    diffs = []
    for path in domain_files_in([*tracked, *untracked], project):
        disk = project.git.toplevel / path
        text = disk.read_text(encoding="utf-8") if disk.exists() else None
        before = parse_version(read_file_at(repo, "HEAD", path), f"HEAD:{path}")
        diffs.append(diff_versions(path, before, parse_version(text, path)))
    return [d for d in diffs if not d.empty]
