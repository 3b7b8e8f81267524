"""Undoing one revision, entry by entry, as a new revision.

A line-level ``git revert`` clashes whenever a later entry was appended next to the reverted one, and
with zero context it can delete the wrong one of many identical ``source: learned`` lines. Working on
entries instead, a revert removes what the revision added, restores what it removed and puts back what
it changed, and refuses only when one of those entries has itself changed since.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from expertise_kit.document.splice import Append, DeleteKey, Edit, Remove, Replace, SetKey
from expertise_kit.errors import UserError
from expertise_kit.store import Store, describe_entry
from expertise_kit.versioning.commit import CommitOutcome
from expertise_kit.versioning.entrydiff import FileDiff, entry_map
from expertise_kit.versioning.git import open_repo
from expertise_kit.versioning.revspec import resolve, revision_diffs

__all__ = ["RevertResult", "revert_revision"]


@dataclass
class RevertResult:
    sha: str
    subject: str
    files: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    commit: CommitOutcome | None = None


def _clash(short: str, path: str, what: str) -> UserError:
    return UserError(
        f"cannot revert {short}: {what} changed since",
        path=path,
        hint="nothing was changed; edit the file by hand, or revert the later revision first",
    )


def _inverse_edits(short: str, diff: FileDiff, current: dict[str, Any]) -> tuple[list[Edit], list[str], list[str]]:
    now = entry_map(current)
    positions: dict[tuple[str, str], int] = {}
    seen_in: dict[str, int] = {}
    for section, entry in now:
        positions[(section, entry)] = seen_in.get(section, 0)
        seen_in[section] = positions[(section, entry)] + 1
    edits: list[Edit] = []
    added: list[str] = []
    removed: list[str] = []
    for change in diff.changes:
        key = (change.section, change.id)
        present = now.get(key)
        if change.kind == "added":
            if key not in now:
                continue  # already gone
            if present != change.after:
                raise _clash(short, diff.path, f"entry {change.id}")
            edits.append(Remove(change.section, positions[key]))
            removed.append(describe_entry(change.id, change.section, change.text))
        elif change.kind == "removed":
            if key in now:
                if present == change.before:
                    continue  # already back
                raise _clash(short, diff.path, f"entry {change.id}")
            edits.append(Append(change.section, change.before))
            added.append(describe_entry(change.id, change.section, change.text))
        else:
            if present == change.before:
                continue
            if present != change.after:
                raise _clash(short, diff.path, f"entry {change.id}")
            edits.append(Replace(change.section, positions[key], change.before))
    for name, (before, after) in diff.keys.items():
        value = current.get(name)
        if value == before:
            continue
        if value != after:
            raise _clash(short, diff.path, f"key `{name}`")
        edits.append(
            DeleteKey(name) if before is None and name not in ("overview", "last_validated") else SetKey(name, before)
        )
    return edits, added, removed


def revert_revision(store: Store, rev: str) -> RevertResult:
    project = store.project
    if project.git is None:
        raise UserError("not a git repository, so there is nothing to revert", hint="run `git init`")
    with store.transaction("reverted") as tx, open_repo(project.git.toplevel) as repo:
        target = resolve(project, repo, rev)
        short = target.sha[:12]
        diffs = revision_diffs(project, repo, target.parent, target.sha)
        if not diffs:
            raise UserError(f"revision {short} changed no domain file", hint="see `expertise history`")
        result = RevertResult(target.sha, target.subject)
        domains: list[str] = []
        for diff in diffs:
            domain = (project.git.toplevel / diff.path).stem
            if diff.created:
                raise UserError(
                    f"cannot revert {short}: it created this file",
                    path=diff.path,
                    hint="delete the file by hand if you mean to",
                )
            if diff.deleted:
                raise UserError(
                    f"cannot revert {short}: it deleted this file", path=diff.path, hint="restore it with git"
                )
            doc = tx.load(domain)
            edits, added, removed = _inverse_edits(short, diff, doc.loaded.plain)
            if not edits:
                continue
            # Planned only: a clash found in a later file raises before anything is written.
            tx.edit(doc, edits)
            domains.append(domain)
            result.files.append(diff.path)
            result.added += added
            result.removed += removed
        if not domains:
            raise UserError(f"revision {short} is already undone", hint="nothing to do")
        tx.added += result.added
        tx.removed += result.removed
        tx.reverts = target.sha
        result.commit = tx.commit(f'expertise({",".join(domains)}): revert {target.sha[:7]} "{target.subject}"')
        return result
