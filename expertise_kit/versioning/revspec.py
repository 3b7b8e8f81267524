"""Resolving revisions and ranges, the domain files they touched, and reading any version of those files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expertise_kit.document.yamlio import read_text_file
from expertise_kit.errors import FileMissing, UserError
from expertise_kit.project import Project
from expertise_kit.versioning.entrydiff import FileDiff, diff_versions, parse_version
from expertise_kit.versioning.git import GitError, run_git
from expertise_kit.versioning.log import domain_files_in, pathspec, read_version

__all__ = [
    "Resolved",
    "resolve",
    "has_commits",
    "parse_range",
    "changed_files",
    "revision_diffs",
    "worktree_diffs",
    "diffs_for",
]

_REVISIONS_HINT = "see `expertise history` for revisions"


@dataclass(frozen=True)
class Resolved:
    sha: str
    parent: str | None
    subject: str


def has_commits(repo: Any) -> bool:
    """False on an unborn branch: a fresh `git init`, or `git checkout --orphan`."""
    result = run_git(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], check=False)
    if result.status not in (0, 1):  # 1: no such revision; anything else is git refusing the repo
        raise GitError(["rev-parse", "HEAD"], result.status, result.stdout, result.stderr)
    return result.status == 0


def _sha(repo: Any, rev: str) -> str:
    if not rev or rev.startswith("-"):
        raise UserError(f"bad revision {rev!r}", hint="give a commit hash, branch or HEAD~N")
    result = run_git(repo, ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], check=False)
    if result.status not in (0, 1):
        raise GitError(["rev-parse", rev], result.status, result.stdout, result.stderr)
    if result.status != 0:
        if not has_commits(repo):
            raise UserError(f"unknown revision {rev!r}: nothing is committed yet", hint="commit first")
        raise UserError(f"unknown revision {rev!r}", hint=_REVISIONS_HINT)
    return result.stdout.strip()


def resolve(project: Project, repo: Any, rev: str) -> Resolved:
    if project.git is None:
        raise UserError("not a git repository, so there are no revisions", hint="run `git init`")
    if ".." in rev:
        hint = "give one commit; `expertise diff A..B` compares two"
        raise UserError(f"{rev!r} is a range, not one revision", hint=hint)
    sha = _sha(repo, rev)
    commit = repo.commit(sha)
    parent = commit.parents[0].hexsha if commit.parents else None
    return Resolved(sha, parent, str(commit.summary))


def parse_range(rev: str) -> tuple[str, str, bool] | None:
    """``A..B`` or ``A...B`` as (A, B, symmetric), either side defaulting to HEAD as in git; None if not a range."""
    if "..." in rev:
        old, _, new = rev.partition("...")
        symmetric = True
    elif ".." in rev:
        old, _, new = rev.partition("..")
        symmetric = False
    else:
        return None
    if ".." in old or new.startswith(".") or ".." in new:
        hint = "write A..B (B against A) or A...B (B against where it forked from A)"
        raise UserError(f"bad range {rev!r}", hint=hint)
    return old or "HEAD", new or "HEAD", symmetric


def _range_ends(repo: Any, rev: str, spec: tuple[str, str, bool]) -> tuple[str, str]:
    old, new, symmetric = spec
    old_sha, new_sha = _sha(repo, old), _sha(repo, new)
    if not symmetric:
        return old_sha, new_sha
    # As `git diff A...B` does: what B changed since it forked from A, i.e. merge-base(A, B)..B.
    base = run_git(repo, ["merge-base", old_sha, new_sha], check=False)
    if base.status != 0 or not base.stdout.strip():
        hint = f"compare them directly with {old}..{new}"
        raise UserError(f"{old} and {new} have no common ancestor, so {rev!r} has no base", hint=hint)
    return base.stdout.split()[0], new_sha


def changed_files(project: Project, repo: Any, old: str | None, new: str) -> list[str]:
    args = ["diff-tree", "-r", "--no-commit-id", "--name-only"]
    args += ["--root", new] if old is None else [old, new]
    listed = run_git(repo, [*args, "--", pathspec(project, None)])
    return domain_files_in(listed.stdout.split("\n"), project)


def revision_diffs(project: Project, repo: Any, old: str | None, new: str) -> list[FileDiff]:
    diffs = []
    for path in changed_files(project, repo, old, new):
        before = read_version(repo, old, path) if old else None
        after = read_version(repo, new, path)
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
        try:
            # The same reader as every command: a FIFO or a symlink loop is refused, not read or hung on.
            text: str | None = read_text_file(disk)
        except FileMissing:
            text = None
        before = read_version(repo, "HEAD", path)
        diffs.append(diff_versions(path, before, parse_version(text, path)))
    return [d for d in diffs if not d.empty]


def diffs_for(project: Project, repo: Any, rev: str | None) -> list[FileDiff] | None:
    """What ``expertise diff [REV]`` shows; None when nothing is committed yet, so there is nothing to compare."""
    if rev is None:
        return worktree_diffs(project, repo) if has_commits(repo) else None
    spec = parse_range(rev)
    if spec is not None:
        old, new = _range_ends(repo, rev, spec)
        return revision_diffs(project, repo, old, new)
    target = resolve(project, repo, rev)
    return revision_diffs(project, repo, target.parent, target.sha)
