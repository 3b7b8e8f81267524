"""``expertise watch``: keep the expertise true while you work.

A watchdog observer collects file events; a debounce loop turns each quiet-after-a-burst batch into at
most one revision per domain:

- a hand edit to ``.expertise/<domain>.yaml`` is validated: valid, it is committed as a manual
  revision authored by you; invalid, one line says why and the file is left exactly as written;
- a code file moved or deleted updates ``core_files`` as ``validate`` would;
- a ``git checkout`` (HEAD moved during the batch) changes nothing: the files come back on the way back.

It ignores ``.git/``, caches and temp files, and stops cleanly on Ctrl-C or SIGTERM. It holds no
GitPython repository between operations, so it leaves no ``git cat-file`` children behind.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expertise_kit.document.entries import item_text
from expertise_kit.document.ids import normalise_path
from expertise_kit.errors import UserError
from expertise_kit.project import Project
from expertise_kit.store import Store
from expertise_kit.upkeep.validate import validate_domains
from expertise_kit.versioning.busy import head_sha
from expertise_kit.versioning.commit import pending_revisions
from expertise_kit.versioning.git import open_repo
from expertise_kit.versioning.log import read_file_at

__all__ = ["Watcher", "run_watch", "IGNORED_PARTS"]

IGNORED_PARTS = {
    ".git", ".cache", "__pycache__", "node_modules", ".venv", "venv", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".hypothesis", ".tox", ".next", "dist", "build",
}  # fmt: skip
_IGNORED_SUFFIXES = (".tmp", ".swp", ".swx", "~", ".pyc", ".lock")


@dataclass
class _Batch:
    expertise: set[str] = field(default_factory=set)  # domain file names touched
    moved: list[tuple[str, str]] = field(default_factory=list)  # code moves (relative paths)
    deleted: list[str] = field(default_factory=list)
    first: float = 0.0
    last: float = 0.0
    head: str | None = None  # HEAD when the batch began
    count: int = 0


class Watcher:
    def __init__(
        self, project: Project, *, debounce: float = 0.4, max_wait: float = 2.0, say: Callable[[str], None] = print
    ) -> None:
        self.project = project
        self.root = project.root
        self.expertise_dir = project.expertise_dir
        self.debounce = debounce
        self.max_wait = max_wait
        self.say = say
        self.lock = threading.Lock()
        self.batch = _Batch()
        self.stop_event = threading.Event()
        self.events_seen = 0
        self.revisions = 0

    # -- collecting (watchdog's thread) ---------------------------------------------------------

    def _relative(self, path: str) -> str | None:
        try:
            relative = Path(path).resolve().relative_to(self.root.resolve())
        except ValueError:
            return None
        if any(part in IGNORED_PARTS for part in relative.parts) or relative.name.endswith(_IGNORED_SUFFIXES):
            return None
        return relative.as_posix()

    def _note(self, kind: str, src: str, dest: str | None) -> None:
        rel_src = self._relative(src)
        rel_dest = self._relative(dest) if dest else None
        if rel_src is None and rel_dest is None:
            return
        expertise = self.expertise_dir.name + "/"
        with self.lock:
            batch = self.batch
            if not batch.count:
                batch.first = time.monotonic()
                batch.head = self._head_ref()
            batch.count += 1
            batch.last = time.monotonic()
            self.events_seen += 1
            for rel in (rel_src, rel_dest):
                if rel and rel.startswith(expertise) and rel.endswith(".yaml") and "/" not in rel[len(expertise) :]:
                    batch.expertise.add(rel[len(expertise) : -len(".yaml")])
            if rel_src and not rel_src.startswith(expertise):
                if kind == "moved" and rel_dest and not rel_dest.startswith(expertise):
                    batch.moved.append((rel_src, rel_dest))
                elif kind == "deleted":
                    batch.deleted.append(rel_src)

    def _head_ref(self) -> str | None:
        if self.project.git is None:
            return None
        try:
            return (self.project.git.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return None

    def dispatch(self, event: Any) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return
        self._note(kind, str(event.src_path), str(getattr(event, "dest_path", "") or "") or None)

    # -- processing (main thread) ---------------------------------------------------------------

    def _take_ready(self) -> _Batch | None:
        with self.lock:
            batch = self.batch
            if not batch.count:
                return None
            quiet = time.monotonic() - batch.last >= self.debounce
            overdue = time.monotonic() - batch.first >= self.max_wait
            if not (quiet or overdue):
                return None
            self.batch = _Batch()
            return batch

    def process(self, batch: _Batch) -> None:
        store = Store(self.project)
        # A branch switch rewrites .git/HEAD; a commit on the same branch does not. An edit carried across a
        # checkout belongs to the branch it was made on: committing it on the new one would move it there.
        if batch.head is not None and self._head_ref() != batch.head:
            if batch.expertise or batch.moved or batch.deleted:
                self.say("HEAD moved (a checkout or similar): changes in this burst are not committed")
            return
        for domain in sorted(batch.expertise):
            if domain in store.config.domains:
                self._hand_edit(store, domain)
        if batch.moved or batch.deleted:
            self._code_moves(store, batch)

    def _hand_edit(self, store: Store, domain: str) -> None:
        path = self.expertise_dir / f"{domain}.yaml"
        git = self.project.git
        try:
            with store.transaction("manual", by_hand=True) as tx:
                doc = tx.load(domain)  # invalid: a UserError, and nothing else happens
                if git is None:
                    return
                relative = doc.path.resolve().relative_to(git.toplevel).as_posix()
                with open_repo(git.toplevel) as repo:
                    committed = read_file_at(repo, "HEAD", relative) if head_sha(git) else None
                mine = store.relative(doc.path)
                if committed == doc.loaded.text or any(mine in p.paths for p in pending_revisions(self.project)):
                    return  # our own write, already committed (or waiting to be)
                tx.include(doc)
                outcome = tx.commit(f"expertise({domain}): edit by hand")
                self.revisions += 1
                self.say(f"{domain}: hand edit " + _outcome(outcome))
        except UserError as exc:
            if path.exists():
                self.say(f"{domain}: not committed: {exc.one_line()}")

    def _code_moves(self, store: Store, batch: _Batch) -> None:
        """Validate, as `expertise validate` would, the domains whose core files moved or went."""
        moves = {
            normalise_path(src): normalise_path(dest)
            for src, dest in batch.moved
            if not (self.root / src).exists() and (self.root / dest).exists()
        }
        gone = {normalise_path(p) for p in batch.deleted if not (self.root / p).exists()}
        touched = set(moves) | gone
        affected = []
        for domain in store.config.domain_names:
            try:
                files = store.load(domain).model.items("core_files")
            except UserError:
                continue
            if any(normalise_path(item_text(f)) in touched for f in files):
                affected.append(domain)
        if not affected:
            return
        reports, failures = validate_domains(store, affected, moved=moves)
        for failure in failures:
            self.say(f"skipped: {failure.one_line()}")
        for report in reports:
            changed = len(report.renamed) + len(report.removed)
            if report.commit is not None and changed:
                self.revisions += 1
                self.say(f"{report.domain}: core_files updated ({changed}) " + _outcome(report.commit))

    def run(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class _Handler(FileSystemEventHandler):
            def dispatch(self, event: Any) -> None:  # noqa: D102 - every event goes to the collector
                watcher.dispatch(event)

        observer = Observer()
        observer.schedule(_Handler(), str(self.root), recursive=True)
        observer.start()
        self.say(f"watching {self.root} (Ctrl-C to stop)")
        try:
            while not self.stop_event.is_set():
                batch = self._take_ready()
                if batch is not None:
                    try:
                        self.process(batch)
                    except Exception as exc:  # noqa: BLE001 - a long-running watcher reports and goes on
                        self.say(f"error while processing changes: {exc}")
                self.stop_event.wait(0.1)
        finally:
            observer.stop()
            observer.join(timeout=5)
            self.say(f"stopped after {self.events_seen} file events and {self.revisions} revisions")


def _outcome(outcome: Any) -> str:
    return f"committed {outcome.sha[:12]}" if outcome.sha else f"deferred: {outcome.deferred}"


def run_watch(project: Project, *, debounce: float, say: Callable[[str], None]) -> Watcher:
    watcher = Watcher(project, debounce=debounce, say=say)

    def stop(signum: int, frame: object) -> None:
        watcher.stop_event.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        watcher.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return watcher
