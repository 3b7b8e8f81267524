"""Planning an export (every file read and every refusal made before anything is written), writing it,
and committing exactly its files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from expertise_kit.document.atomic import write_atomic, write_lock
from expertise_kit.errors import UserError
from expertise_kit.export.content import load_learned
from expertise_kit.export.documents import cursor_rules, is_our_rule, markdown_section
from expertise_kit.export.files import decode_markdown, read_existing, resolve_target
from expertise_kit.export.markers import splice_section
from expertise_kit.export.targets import Target, target
from expertise_kit.project import Project
from expertise_kit.store import Store
from expertise_kit.versioning.commit import CommitOutcome

__all__ = ["FileChange", "ExportPlan", "plan_export", "apply_export", "export"]


@dataclass
class FileChange:
    real: Path  # what is written: symlinks followed
    shown: str  # as the user named it, relative to the project root where it can be
    old: bytes | None  # None: no file there now
    new: bytes | None  # None: the file is ours and has nothing left to hold, so it goes
    entries: int = 0

    @property
    def changed(self) -> bool:
        return self.old != self.new


@dataclass
class ExportPlan:
    target: Target
    project: Project
    changes: list[FileChange]

    @property
    def out_of_date(self) -> list[FileChange]:
        return [change for change in self.changes if change.changed]


def _shown(path: Path, project: Project) -> str:
    absolute = Path(os.path.abspath(path))
    for base in (project.root, project.git.toplevel if project.git else None):
        if base is not None and absolute.is_relative_to(base):
            return absolute.relative_to(base).as_posix()
    return str(absolute)


def _markdown(store: Store, spec: Target, path: Path) -> list[FileChange]:
    shown = _shown(path, store.project)
    real = resolve_target(path, store.project, directory=False)
    old = read_existing(real, shown)
    text = decode_markdown(old, shown) if old is not None else ""
    body, ids = markdown_section(load_learned(store), spec.budget)
    return [FileChange(real, shown, old, splice_section(text, body, shown).encode("utf-8"), len(ids))]


def _cursor(store: Store, spec: Target, directory: Path) -> list[FileChange]:
    project = store.project
    real_directory = resolve_target(directory, project, directory=True)
    config = store.config.domains
    rules = cursor_rules(
        load_learned(store),
        spec.budget,
        {name: list(rules.paths) for name, rules in config.items()},
        {name: rules.description for name, rules in config.items()},
    )
    changes = []
    for name, (text, ids) in sorted(rules.items()):
        path = directory / name
        shown = _shown(path, project)
        real = resolve_target(path, project, directory=False)
        old = read_existing(real, shown)
        if old is not None and not is_our_rule(old.decode("utf-8", "replace")):
            raise UserError(
                "is a rule file that expertise export did not write",
                path=shown,
                hint=f"rename yours so the {name.removesuffix('.mdc')} rule can be written here; it was not changed",
            )
        changes.append(FileChange(real, shown, old, text.encode("utf-8"), len(ids)))
    if real_directory.is_dir():
        # Ours that have nothing left to hold (a domain with no entries now, or one no longer configured).
        for candidate in sorted(real_directory.glob("*.mdc")):
            if candidate.name in rules or candidate.is_symlink() or not candidate.is_file():
                continue
            shown = _shown(directory / candidate.name, project)
            try:
                old = read_existing(candidate, shown)
            except UserError:
                continue  # not a file we could have written
            if old is not None and is_our_rule(old.decode("utf-8", "replace")):
                changes.append(FileChange(candidate, shown, old, None))
    return changes


def plan_export(store: Store, name: str, out: Path | None) -> ExportPlan:
    """What exporting to target ``name`` would write and remove; nothing is written."""
    spec = target(name)
    default = store.project.root / spec.default
    if spec.kind == "markdown":
        changes = _markdown(store, spec, out or default)
    else:
        changes = _cursor(store, spec, out or default)
    return ExportPlan(spec, store.project, changes)


def apply_export(plan: ExportPlan) -> None:
    for change in plan.out_of_date:
        if change.new is None:
            try:
                change.real.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise UserError(f"can't be removed: {exc.strerror}", path=change.shown) from None
            continue
        try:
            change.real.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"can't create its directory: {exc.strerror}", path=change.shown) from None
        write_atomic(change.real, change.new)


def _commit_ready(project: Project) -> None:
    from expertise_kit.versioning.busy import busy_reason

    if project.git is None:
        raise UserError("--commit needs a git repository", hint="export without --commit; nothing was written")
    reason = busy_reason(project.git)
    if reason is not None:
        raise UserError(
            f"can't commit now: {reason}", hint="finish that first, or export without --commit; nothing was written"
        )


def export(store: Store, name: str, out: Path | None, *, commit: bool) -> tuple[ExportPlan, CommitOutcome | None]:
    """Write the export of target ``name``; with ``commit``, commit exactly its files, under the write lock
    (so it queues behind the revisions of other expertise processes rather than racing their index)."""
    if not commit:
        plan = plan_export(store, name, out)
        apply_export(plan)
        return plan, None
    from expertise_kit.versioning.commit import commit_exported, ignored_by_git

    project = store.project
    _commit_ready(project)
    assert project.git is not None
    toplevel = Path(os.path.realpath(project.git.toplevel))  # resolve_target keeps every file inside it
    with write_lock(project.lock_path):
        plan = plan_export(store, name, out)
        paths = [change.real.relative_to(toplevel).as_posix() for change in plan.changes]
        ignored = ignored_by_git(project, [p for p, c in zip(paths, plan.changes, strict=True) if c.new is not None])
        if ignored:
            raise UserError(
                "is ignored by git, so --commit can't commit it",
                path=ignored[0],
                hint="un-ignore it, or export without --commit; nothing was written",
            )
        apply_export(plan)
        subject = f"expertise: export to {plan.target.label}"
        outcome = commit_exported(project, paths, subject, {"Export": plan.target.name})
    return plan, outcome
