"""The one write transaction. Every writer goes through it; nothing else writes or commits a domain file.

Inside the write lock: load → edit → line cap → verify → atomic write → commit → check that the blob
each commit holds is the bytes written → render cache. A file is never written unless the whole edit
verified, so a failure anywhere before the write changes nothing. After the commit, a path whose
committed blob is not what was written (``git stash`` ran between our write and our commit, say) is
recorded as pending, its entries are restored, and the commit is retried; a revision is reported as
committed only when HEAD holds it.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expertise_kit.document.atomic import FileChanged, write_atomic
from expertise_kit.document.cap import CapResult, fit_to_cap
from expertise_kit.document.domainfile import DomainDoc, parse_domain_text
from expertise_kit.document.entries import item_id, parse_item
from expertise_kit.document.splice import Append, Edit, Remove, expected_plain
from expertise_kit.errors import UserError
from expertise_kit.store.cachebuild import rebuild_cache, update_cache
from expertise_kit.versioning.busy import busy_reason, head_sha
from expertise_kit.versioning.commit import (
    CommitOutcome,
    Revision,
    commit_revision,
    drop_reservation,
    pending_revisions,
    record_pending,
    reserve_pending,
    sync_pending,
)
from expertise_kit.versioning.git import open_repo, run_git
from expertise_kit.versioning.objects import UNKNOWN, blob_id, committed_blob, git_motion

if TYPE_CHECKING:
    from expertise_kit.store import Store

__all__ = ["Transaction", "Planned", "ChangedMeanwhile", "describe_entry", "restore_pending_entries", "committed_holds"]

_RECOVERY_ATTEMPTS = 3


def describe_entry(entry_id: str, section: str, text: str) -> str:
    """One line of a commit body: `<id> <section>: <text>`, cut to stay readable."""
    flat = " ".join(text.split())
    return f"{entry_id} {section}: {flat[:100]}{'...' if len(flat) > 100 else ''}"


@dataclass
class Planned:
    """One file this transaction will write."""

    path: Path
    data: bytes
    domain: str | None = None  # None: not a domain file (config, schema, .gitignore)
    plain: dict[str, Any] | None = None  # the domain file's data after the write, for the render cache
    appended: list[dict[str, Any]] = field(default_factory=list)  # raw entries added, to restore if lost
    write: bool = True  # False: the file is already on disk as it should be (a hand edit to commit)
    based_on: bytes | None = None  # the file as it was read to plan the change (None: a new file)
    only_appends: bool = False  # the change only adds entries (none removed, replaced or pruned)


class ChangedMeanwhile(UserError):
    """A file the write was planned on changed on disk before it was written (an editor's save, a `git
    pull`): writing would undo that change, so nothing is written. ``Store`` plans the write again."""


def _changed(path: Path) -> ChangedMeanwhile:
    return ChangedMeanwhile(
        "changed while this write was being made (an editor's save or git): it was not overwritten",
        path=path,
        hint="run it again",
    )


@dataclass
class Transaction:
    """Collects the edits of one revision; ``commit`` writes and commits them. Open with ``Store.transaction``."""

    store: Store
    change: str
    sessions: list[str] = field(default_factory=list)
    by_hand: bool = False
    commit_changes: bool = True  # False: write only (a merge driver; git makes the commit)
    planned: dict[Path, Planned] = field(default_factory=dict)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reverts: str | None = None
    counts: dict[str, int] = field(default_factory=dict)  # extra trailers, as Revision.counts
    config_changed: bool = False
    dry_run: bool = False
    published: Any = None  # the shared layer's update (``versioning.shared.Published``), once committed
    dropped: dict[Path, dict[str, Any]] = field(default_factory=dict)  # path -> id -> lifecycle.Drop, on purpose
    learned: dict[Path, list[str]] = field(default_factory=dict)  # path -> ids of the entries this revision added

    # -- planning -------------------------------------------------------------------------------

    def load(self, domain: str) -> DomainDoc:
        return self.store.load(domain)

    def edit(self, doc: DomainDoc, edits: list[Edit], *, described: dict[str, str] | None = None) -> CapResult:
        """Plan ``edits`` to ``doc``, pruned to the line cap; ``described``: id -> commit line of new entries.

        Entries pruned by the cap are reported as removed (or, when added in this very write, not at all).
        """
        if doc.path in self.planned:
            raise RuntimeError(f"{doc.path} is edited twice in one transaction")
        capped = fit_to_cap(doc.loaded, doc.model, edits, self.store.config.line_cap)
        described = described or {}
        pruned = {p.id for p in capped.pruned}
        self.added += [line for entry, line in described.items() if entry not in pruned]
        self._note_lifecycle(doc, edits, [entry for entry in described if entry not in pruned])
        self.removed += [
            describe_entry(p.id, p.section, p.text) + " (pruned: line cap)"
            for p in capped.pruned
            if p.id not in described
        ]
        if capped.text != doc.loaded.text:
            appended = [
                {"domain": doc.name, "section": e.section, "item": e.item}
                for e in capped.edits
                if isinstance(e, Append)
            ]
            self.planned[doc.path] = Planned(
                doc.path,
                capped.text.encode("utf-8"),
                doc.name,
                expected_plain(doc.loaded, capped.edits),
                appended,
                based_on=doc.loaded.text.encode("utf-8"),
                only_appends=all(isinstance(e, Append) for e in capped.edits),
            )
        return capped

    def _note_lifecycle(self, doc: DomainDoc, edits: list[Edit], added: list[str]) -> None:
        """What the shared layer needs of this edit: the entries removed on purpose (not by the cap), which
        leave the layer whichever branch published them, and the entries added, whose origin is this branch."""
        if added:
            self.learned.setdefault(doc.path, []).extend(added)
        removed = [e for e in edits if isinstance(e, Remove)]
        if not removed:
            return

        from expertise_kit.document.entries import item_text
        from expertise_kit.versioning.lifecycle import Drop

        cause = {"reverted": "revert", "validated": "validate", "merged": "merge"}.get(self.change, self.change)
        for edit in removed:
            try:
                raw = (doc.loaded.plain.get(edit.section) or [])[edit.index]
                item = parse_item(edit.section, raw)
            except (IndexError, ValueError, AttributeError):
                continue
            self.dropped.setdefault(doc.path, {})[item_id(edit.section, item)] = Drop(cause, item_text(item))

    def create(self, path: Path, text: str, *, domain: str | None = None, plain: dict[str, Any] | None = None) -> None:
        """Plan a new file (``init``): config, schema, ignore file or a fresh domain file."""
        self.planned[path] = Planned(path, text.encode("utf-8"), domain, plain)
        if domain is None:
            self.config_changed = True

    def deliver(self, path: Path, text: str) -> None:
        """Plan ``text`` for ``path``, a file git owns (a merge driver's ``%A``), not one in ``.expertise/``.

        As with ``edit``, the text comes verified from ``fit_to_cap`` (re-parsed and compared with the
        data intended), or is git's own line merge of a file that is not a domain file, written as git
        would write it. ``commit`` writes it atomically like any planned file; it is never committed here
        (git makes the merge commit) and never fed to the render cache: it is not the file agents read.
        """
        if self.commit_changes:
            raise RuntimeError("a delivered file is git's to commit: open the transaction with commit=False")
        self.planned[path] = Planned(path, text.encode("utf-8"))

    def include(self, doc: DomainDoc) -> None:
        """Commit ``doc``'s file as it stands on disk (a hand edit that validated)."""
        data = doc.loaded.text.encode("utf-8")
        self.planned[doc.path] = Planned(doc.path, data, doc.name, doc.loaded.plain, write=False)

    @property
    def empty(self) -> bool:
        return not self.planned

    # -- committing -----------------------------------------------------------------------------

    def commit(self, subject: str) -> CommitOutcome | None:
        """Write every planned file and commit them as one revision. None when nothing changed."""
        if not self.planned or self.dry_run:
            return None
        project = self.store.project
        for planned in self.planned.values():  # all first, so a change to the second file leaves the first alone
            if planned.write and planned.based_on is not None and _read_bytes(planned.path) != planned.based_on:
                raise _changed(planned.path)
        revision = self._revision(subject) if self.commit_changes else None
        if revision is not None:
            reserve_pending(project, revision)  # on a full disk this fails, before anything is written
        self._write_files(revision)
        outcome: CommitOutcome | None = None
        if revision is not None:
            outcome = commit_revision(project, revision)
            if outcome.sha is not None or outcome.deferred is None:
                outcome = self._make_sure_committed(revision, outcome)
            self._publish(revision, outcome)
        self._refresh_cache()
        return outcome

    def _write_files(self, revision: Revision | None) -> None:
        """Write every planned file. One that can't be written (a full disk) is one line; if it was the
        first, nothing changed and the reservation is taken back, else the revision stays pending."""
        written = 0
        for planned in self.planned.values():
            if not planned.write:
                continue
            try:
                # Our lock keeps our writers apart, not a person's editor or git: a file changed since it was
                # read is not overwritten (the write is planned again on it, by `Store`). Checked at the last
                # moment before the rename, so what is left is a gap of microseconds.
                write_atomic(planned.path, planned.data, expect=planned.based_on)
            except FileChanged:
                if written == 0 and revision is not None:
                    drop_reservation(self.store.project, revision)
                raise _changed(planned.path) from None
            except UserError as exc:  # write_atomic's one line: no space, permission denied, ...
                if written == 0 and revision is not None:
                    drop_reservation(self.store.project, revision)
                hint = f"{exc.hint}; " if exc.hint else ""
                if written == 0:
                    hint += "nothing was changed"
                else:
                    hint += "the files written before it are recorded as pending (see `expertise history`)"
                raise UserError(exc.message, path=exc.path, line=exc.line, hint=hint) from None
            written += 1

    def _publish(self, revision: Revision, outcome: CommitOutcome) -> None:
        """Apply this revision to the shared layer (``versioning.shared``), so every other worktree and
        branch reads it at once. Best effort: the branch commit is the record, and what can't be
        published now is published with the next revision."""
        project = self.store.project
        if project.git is None or not self.store.config.shared_publish:
            return
        files = {
            p.path: (p.domain, p.data.decode("utf-8"))
            for p in self.planned.values()
            if p.domain is not None and p.path.parent == project.expertise_dir
        }
        if not files:
            return
        from expertise_kit.versioning.shared import changed_since_published, layer_missing, publish, shared_message

        try:
            others = {
                name: project.domain_path(name)
                for name in self.store.config.domain_names
                if project.domain_path(name) not in files
            }
            # A new layer (or one deleted to start over) gets every file of this worktree, not only this one.
            files.update(changed_since_published(project, others, everything=layer_missing(project.git)))
            self.published = publish(
                project,
                files,
                message=shared_message(project, revision, outcome.sha),
                line_cap=self.store.config.line_cap,
                plains={p.path: p.plain for p in self.planned.values() if p.plain is not None and p.path in files},
                dropped=self.dropped,
                learned=self.learned,
                retire_days=self.store.config.shared_retire_days,
            )
        except Exception:  # noqa: BLE001 - the write stands; the next revision publishes this change again
            self.published = None

    def commit_pending(self) -> CommitOutcome:
        """Commit the deferred revisions on their own (``expertise history --sync``), checked like any commit."""
        project = self.store.project
        paths = [project.root / p for r in pending_revisions(project) for p in r.paths]
        outcome = sync_pending(project)
        git = project.git
        if outcome.sha is not None and git is not None:
            for path in dict.fromkeys(paths):
                data = _read_bytes(path)
                if data is not None and not committed_holds(self.store, outcome.sha, path, data):
                    return CommitOutcome(
                        deferred=f"{self.store.relative(path)} changed while it was being committed",
                        hint="run `expertise history --sync` again",
                    )
        return outcome

    def _revision(self, subject: str) -> Revision:
        project = self.store.project
        written = {self.store.relative(p.path): _blob(project, p.data) for p in self.planned.values()}
        return Revision(
            domains=list(dict.fromkeys(p.domain for p in self.planned.values() if p.domain)),
            change=self.change,
            subject=subject,
            paths=list(written),
            sessions=self.sessions,
            added=self.added,
            removed=self.removed,
            notes=self.notes,
            reverts=self.reverts,
            entries=[entry for p in self.planned.values() for entry in p.appended],
            by_hand=self.by_hand,
            written=written,
            motion=git_motion(project.git) if project.git is not None else "",
            counts=dict(self.counts),
        )

    def _make_sure_committed(self, revision: Revision, outcome: CommitOutcome) -> CommitOutcome:
        """A commit that did not take our bytes gets them back on disk and is retried; if it still can't
        be made, the revision is recorded as pending (never reported as done)."""
        project = self.store.project
        git = project.git
        if git is None:
            return outcome
        expected = {p.path: p.data for p in self.planned.values()}
        sha = outcome.sha
        if sha is not None and _on_branch(git, sha):
            if all(committed_holds(self.store, sha, path, data) for path, data in expected.items()):
                return outcome
            # A person saved on top of our write before git read it: the commit took the file as it is now,
            # their change with ours. If ours only added entries, and they are in it, it is done; putting our
            # bytes back would undo theirs. (A removal or a replacement can't be checked so: put back below.)
            now = {path: _read_bytes(path) for path in expected}
            held = all(data is not None and committed_holds(self.store, sha, path, data) for path, data in now.items())
            appends = all(p.only_appends for p in self.planned.values())
            if held and appends and self._holds_what_was_added(sha):
                return outcome
        elif sha is None and outcome.deferred is None and self._in_head(expected):
            return outcome  # another commit took our change first (the user's `git commit -a`): it is in HEAD
        for _ in range(_RECOVERY_ATTEMPTS):
            if busy_reason(git, index_wait=2.0) is not None:
                break
            self._put_back(revision)
            retried = commit_revision(project, revision)
            if retried.deferred is not None:
                return retried  # recorded as pending by commit_revision itself
            if (
                retried.sha is not None
                and all(
                    (data := _read_bytes(path)) is not None and committed_holds(self.store, retried.sha, path, data)
                    for path in expected
                )
                and self._holds_what_was_added(retried.sha)
            ):
                return retried
        reason = "the change did not reach HEAD (a `git stash` or checkout ran while it was being committed)"
        record_pending(project, revision, reason)
        return CommitOutcome(deferred=reason, hint="the next change or `expertise history --sync` commits it")

    def _in_head(self, expected: dict[Path, bytes]) -> bool:
        """Whether every file is on disk as written and HEAD holds it so."""
        git = self.store.project.git
        head = head_sha(git) if git is not None else None
        return head is not None and all(
            _read_bytes(path) == data and committed_holds(self.store, head, path, data)
            for path, data in expected.items()
        )

    def _holds_what_was_added(self, sha: str) -> bool:
        """Whether commit ``sha`` holds every entry this revision added. The retry above commits the files
        as they are on disk, which a person may have edited on top (so not our bytes); and git itself can
        move the branch back under us (a `git stash` resetting to the HEAD it read before our commit
        landed), so a commit is only ours if our entries are in it."""
        git = self.store.project.git
        assert git is not None
        for planned in self.planned.values():
            if not planned.appended or planned.domain is None:
                continue
            relative = planned.path.resolve().relative_to(git.toplevel).as_posix()
            with open_repo(git.toplevel) as repo:
                shown = run_git(repo, ["show", f"{sha}:{relative}"], check=False)
            if shown.status != 0:
                return False
            try:
                doc = parse_domain_text(shown.stdout, planned.path, planned.domain)
            except UserError:
                return False
            present = doc.ids()
            for entry in planned.appended:
                if item_id(entry["section"], parse_item(entry["section"], entry["item"])) not in present:
                    return False
        return True

    def _put_back(self, revision: Revision) -> None:
        """Git took our change off the disk: a file reset to HEAD gets our bytes back; one changed since
        (a person's edit on top) gets our added entries back."""
        git = self.store.project.git
        assert git is not None
        head = head_sha(git)
        for planned in self.planned.values():
            current = _read_bytes(planned.path)
            if current == planned.data:
                continue
            if current is None or (head is not None and committed_holds(self.store, head, planned.path, current)):
                write_atomic(planned.path, planned.data)
        restore_pending_entries(self.store, only=revision)

    def _refresh_cache(self) -> None:
        changed = {p.domain: p.plain for p in self.planned.values() if p.domain and p.plain is not None}
        _refresh(self.store, changed, config_changed=self.config_changed)


def _on_branch(git: Any, sha: str) -> bool:
    """Whether HEAD still holds commit ``sha``: `git stash` resets the branch to the HEAD it read before
    our commit landed, which takes our commit off it."""
    from expertise_kit.versioning.shared import descends

    head = head_sha(git)
    return head is None or head == sha or descends(git, head, sha)


def _blob(project: Any, data: bytes) -> str:
    like = head_sha(project.git) if project.git is not None else None
    return blob_id(data, like or "0" * 40)


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def committed_holds(store: Store, sha: str, path: Path, data: bytes) -> bool:
    """Whether commit ``sha`` holds exactly ``data`` at ``path``."""
    git = store.project.git
    assert git is not None
    relative = path.resolve().relative_to(git.toplevel).as_posix()
    committed = committed_blob(git, sha, relative)
    if committed == UNKNOWN:
        committed = _rev_parse(store, f"{sha}:{relative}")
    if committed is None:
        return False
    if committed == blob_id(data, sha):
        return True
    # Clean filters and line-ending conversion make the blob differ from the bytes on disk by design.
    return committed == _filtered_blob(store, relative, data)


def _rev_parse(store: Store, spec: str) -> str | None:
    git = store.project.git
    assert git is not None
    with open_repo(git.toplevel) as repo:
        result = run_git(repo, ["rev-parse", "--verify", "--quiet", spec], check=False)
    return (result.stdout.strip() or None) if result.status == 0 else None


def _filtered_blob(store: Store, relative: str, data: bytes) -> str | None:
    git = store.project.git
    assert git is not None
    handle, name = tempfile.mkstemp(prefix="expertise-verify-", dir=git.git_dir)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        with open_repo(git.toplevel) as repo:
            result = run_git(repo, ["hash-object", f"--path={relative}", "--", name], check=False)
        return (result.stdout.strip() or None) if result.status == 0 else None
    finally:
        Path(name).unlink(missing_ok=True)


def restore_pending_entries(store: Store, *, only: Revision | None = None) -> None:
    """Put back entries of deferred revisions that git took off the disk before they were committed.

    ``git rebase --abort``, ``git stash`` and ``pull --autostash`` discard uncommitted changes, a learning
    written meanwhile included. Only a change git made is undone: if git's HEAD, ORIG_HEAD or stash moved
    since the revision was written, its missing entries come back; if git is where it was, whatever
    changed the file was a person, and an entry they deleted stays deleted. ``only``: restore just this
    revision, which the caller knows git took (the commit just made did not hold its bytes).
    """
    project = store.project
    git = project.git
    if git is None:
        return
    pending = [only] if only is not None else pending_revisions(project)
    if not pending or busy_reason(git, index_wait=0) is not None:
        return
    motion = git_motion(git)
    wanted: dict[str, list[tuple[str, Any]]] = {}
    for revision in pending:
        if only is None and revision.motion and revision.motion == motion:
            continue
        for entry in revision.entries:
            wanted.setdefault(entry["domain"], []).append((entry["section"], entry["item"]))
    for domain, items in wanted.items():
        try:
            doc = store.load(domain)
        except UserError:
            continue  # a broken or removed file is the user's to fix; the record stays
        present = doc.ids()
        missing = [(s, raw) for s, raw in items if item_id(s, parse_item(s, raw)) not in present]
        if not missing:
            continue
        edits: list[Edit] = [Append(section, raw) for section, raw in missing]
        capped = fit_to_cap(doc.loaded, doc.model, edits, store.config.line_cap)
        write_atomic(doc.path, capped.text.encode("utf-8"))
        _refresh(store, {domain: expected_plain(doc.loaded, capped.edits)}, config_changed=False)


def _refresh(store: Store, changed: dict[str, dict[str, Any]], *, config_changed: bool) -> None:
    """Keep the pre-task hook's cache in step. Never fails the write: a stale cache is rebuilt by the hook."""
    try:
        if config_changed:
            rebuild_cache(store.project, store.config)
        elif changed:
            update_cache(store.project, store.config, changed)
    except Exception:  # noqa: BLE001 - the hook validates the cache by file signatures and rebuilds it
        pass
