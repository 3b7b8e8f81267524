"""The store: finding and reading domain files, and changing them through the one write transaction.

Every change runs inside the write lock (shared by every worktree of the repo) as one ``Transaction``:
load → edit → line cap → verify → atomic write → commit → check the commit → render cache. A file that
fails to parse or validate is refused, never overwritten. The operations above it live beside it:
``feedback.py``, ``revert.py``, ``blame.py``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from expertise_kit.config import Config, load_config
from expertise_kit.document.atomic import LOCK_TIMEOUT_SECONDS, ensure_writable, remove_stale_temps, write_lock
from expertise_kit.document.cap import PrunedEntry
from expertise_kit.document.domainfile import DomainDoc, load_domain_file
from expertise_kit.document.entries import (
    DomainData,
    FailureEntry,
    Item,
    domain_data,
    is_learned,
    item_id,
    item_text,
    parse_item,
)
from expertise_kit.document.ids import normalise_path
from expertise_kit.document.names import validate_domain_name
from expertise_kit.document.sightings import add_sighting, combine_sightings
from expertise_kit.document.splice import Append, Edit, Replace
from expertise_kit.errors import UnknownDomain, UserError
from expertise_kit.project import Project, ensure_inside
from expertise_kit.store.transaction import ChangedMeanwhile, Transaction, describe_entry, restore_pending_entries
from expertise_kit.versioning.commit import CommitOutcome
from expertise_kit.vocab import FAILURES, FILES, WORDING_FIELDS, section, section_names

__all__ = [
    "Store", "DomainDoc", "WriteResult", "MergeResult", "MAX_TEXT_CHARS", "manual_item", "describe_entry",
    "value_problem",
]  # fmt: skip

MAX_TEXT_CHARS = 10_000  # one entry's text; a paste bigger than this is not a lesson


@dataclass
class WriteResult:
    domain: str
    path: Path
    added: list[str] = field(default_factory=list)  # entry ids
    duplicates: list[str] = field(default_factory=list)
    pruned: list[PrunedEntry] = field(default_factory=list)
    lines: int = 0
    over_by: int = 0
    changed: bool = False
    commit: CommitOutcome | None = None


@dataclass
class MergeResult:
    domain: str
    path: Path
    added: list[dict[str, Any]] = field(default_factory=list)
    updated: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    pruned: list[PrunedEntry] = field(default_factory=list)
    lines: int = 0
    over_by: int = 0
    commit: CommitOutcome | None = None


_P = ParamSpec("_P")
_R = TypeVar("_R")
_REPLANS = 3  # times a write is planned again on a file an editor or git changed meanwhile


def _replanned(write: Callable[_P, _R]) -> Callable[_P, _R]:
    """``write`` done again, on the file as it is now, when the file changed between its reading and its
    writing (``ChangedMeanwhile``): a person's save or a `git pull` is kept, and so is this change."""

    @functools.wraps(write)
    def again(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        for _ in range(_REPLANS - 1):
            try:
                return write(*args, **kwargs)
            except ChangedMeanwhile:
                continue
        return write(*args, **kwargs)

    return again


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


class Store:
    def __init__(self, project: Project, config: Config | None = None, *, lock_timeout: float | None = None) -> None:
        self.project = project
        self.config = config if config is not None else load_config(project.expertise_dir)
        # How long a write waits for another writer before ``LockTimeout``; None: the CLI's minute.
        self.lock_timeout = lock_timeout

    # -- reading ---------------------------------------------------------------------------------

    def path_for(self, domain: str) -> Path:
        validate_domain_name(domain)
        if domain not in self.config.domains:
            raise UnknownDomain(
                f"unknown domain {domain!r}",
                hint=f"use one of {', '.join(self.config.domain_names)}, or add it to .expertise/config.yaml",
            )
        return self.project.domain_path(domain)

    def load(self, domain: str) -> DomainDoc:
        return load_domain_file(self.path_for(domain), domain)

    def entries_of(self, domain: str) -> DomainData:
        """``domain``'s entries, only to read: in plain Python where the file is surely valid
        (``quickmerge.valid_plain``; ruamel takes ~5 ms a small file and ~1 s one at the cap), else as
        ``load`` reads them, with its errors."""
        from expertise_kit.document.domainfile import parse_domain_text
        from expertise_kit.document.yamlio import read_text_file
        from expertise_kit.versioning.quickmerge import valid_plain

        path = self.path_for(domain)
        text = read_text_file(path)
        plain = valid_plain(text, domain)
        return domain_data(plain, domain) if plain is not None else parse_domain_text(text, path, domain).model

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.project.root.resolve()).as_posix()

    # -- writing ---------------------------------------------------------------------------------

    @contextmanager
    def locked(self, *, wait: float | None = None) -> Iterator[None]:
        """Hold the write lock; on the way in, tidy after dead writers and restore entries git discarded.

        ``wait``: give up on the lock after that many seconds and go on without it (a merge driver:
        see ``Store.transaction``).
        """
        if wait is not None:
            with ExitStack() as held:
                with suppress(UserError):  # held too long, or the lock file can't even be made
                    held.enter_context(write_lock(self.project.lock_path, timeout=wait))
                yield
            return
        ensure_writable(self.project.expertise_dir)
        timeout = LOCK_TIMEOUT_SECONDS if self.lock_timeout is None else self.lock_timeout
        with write_lock(self.project.lock_path, timeout):
            ensure_inside(self.project)  # `.expertise` swapped for a link since the project was found
            remove_stale_temps(self.project.expertise_dir)
            restore_pending_entries(self)
            yield

    @contextmanager
    def transaction(
        self,
        change: str,
        *,
        sessions: list[str] | None = None,
        by_hand: bool = False,
        commit: bool = True,
        dry_run: bool = False,
        lock_wait: float | None = None,
    ) -> Iterator[Transaction]:
        """The one way to change the files: plan edits on the yielded transaction, then ``commit`` it.

        Leaving the block without committing writes nothing. ``dry_run``: plan only, without the lock;
        ``commit`` then writes nothing. ``commit=False``: write the files but leave committing to git
        (a merge driver). ``lock_wait``: wait at most that long for the lock, then go on without it. Only
        a merge driver may: git runs it holding the index lock, and one of our writers holding our lock
        may be waiting on that index lock to commit, so waiting our usual minute would stall both; and
        what the driver writes is git's own temp file, which no other writer touches.
        """
        tx = Transaction(self, change, sessions=list(sessions or []), by_hand=by_hand, commit_changes=commit)
        if dry_run:
            tx.dry_run = True
            yield tx
            return
        if lock_wait is not None and commit:
            raise RuntimeError("only a transaction that leaves committing to git may skip the lock")
        with self.locked(wait=lock_wait):
            yield tx

    @_replanned
    def add_items(
        self,
        domain: str,
        items: list[tuple[str, Any]],
        *,
        change: str = "manual",
        sessions: list[str] | None = None,
        subject: str | None = None,
    ) -> WriteResult:
        """Append ``(section, raw item)`` pairs, skipping any whose id is already in the file.

        The change is committed (or deferred) as one revision.
        """
        with self.transaction(change, sessions=sessions) as tx:
            doc = tx.load(domain)
            result = WriteResult(domain, doc.path)
            seen = doc.ids()
            edits: list[Edit] = []
            described: dict[str, str] = {}
            for section_name, raw in items:
                parsed = parse_item(section_name, raw)
                new_id = item_id(section_name, parsed)
                if new_id in seen:
                    result.duplicates.append(new_id)
                    continue
                seen.add(new_id)
                edits.append(Append(section_name, raw))
                described[new_id] = describe_entry(new_id, section_name, item_text(parsed))
            if not edits:
                result.lines = doc.line_count
                return result
            capped = tx.edit(doc, edits, described=described)
            pruned_ids = {p.id for p in capped.pruned}
            result.added = [entry for entry in described if entry not in pruned_ids]
            result.pruned, result.lines, result.over_by = capped.pruned, capped.lines, capped.over_by
            result.changed = not tx.empty
            result.commit = tx.commit(subject or f"expertise({domain}): add {_entries(len(result.added))} by hand")
            return result

    @_replanned
    def add_agent_lesson(
        self,
        domain: str,
        section_name: str,
        raw: dict[str, Any],
        session: str,
        *,
        rewords: Callable[[str, str, Item], bool] = lambda section_name, entry_id, item: False,
    ) -> WriteResult:
        """A lesson the agent wrote for ``session`` (docs/reflect.md), as one ``agent`` revision.

        An entry with the same id is a duplicate (nothing is added), unless the learner parsed it from this
        very session: then, as for an entry of this session that ``rewords(section, id, item)`` says is the
        same lesson, the agent's wording replaces the parsed one and the entry's provenance and counts stay.
        A failure already learned (in this session or before) that the agent says, with the same error word
        for word, it fixed another way takes the agent's fix, and one more sighting if the session is new:
        the newest fix that worked is the one to try first. Hand-written entries are never rewritten.
        """
        from expertise_kit.document.splice import Remove

        with self.transaction("agent", sessions=[session]) as tx:
            doc = tx.load(domain)
            result = WriteResult(domain, doc.path)
            parsed = parse_item(section_name, raw)
            new_id = item_id(section_name, parsed)
            entries = [(s, index, item, item_id(s, item)) for s, index, item in doc.entries()]

            def parsed_here(item: Item) -> bool:
                return not isinstance(item, str) and item.source == "learned" and session in map(str, item.sessions)

            def fixed_anew(item: Item) -> bool:  # word for word the same error: not one that only looks alike
                return (
                    isinstance(item, FailureEntry) and is_learned(item) and bool(raw.get("solution"))
                    and raw.get("solution") != item.solution
                    and " ".join(str(raw.get("error") or "").split()) == " ".join(item.error.split())
                )  # fmt: skip

            same = next(((s, index, item) for s, index, item, entry in entries if entry == new_id), None)
            if same is not None and not parsed_here(same[2]):
                if not (same[0] == section_name and fixed_anew(same[2])):
                    result.duplicates.append(new_id)
                    result.lines = doc.line_count
                    return result
                old_section, index, item = same
                stored = doc.loaded.plain[old_section][index]
                worded = {k: raw[k] for k in ("issue", "solution") if raw.get(k)}
                raw = {**(add_sighting(stored, raw) or stored), **worded, "source": "agent"}
                said = describe_entry(new_id, section_name, item_text(parsed))
                tx.notes.append(f"~ {said} (fixed anew by the agent)")
                replace: list[Edit] = [Replace(old_section, index, raw)]
                return self._commit_agent_edit(tx, doc, result, replace, new_id, {}, session, keep=True)
            target = next(
                (
                    (s, index, item, entry) for s, index, item, entry in entries
                    if parsed_here(item) and (entry == new_id or rewords(s, entry, item))
                ),
                None,
            )  # fmt: skip
            edits: list[Edit] = []
            if target is not None:
                old_section, index, item, old_id = target
                if old_id != new_id:
                    said = describe_entry(old_id, old_section, item_text(item))
                    tx.removed.append(f"{said} (reworded by the agent)")
                kept = {k: v for k, v in doc.loaded.plain[old_section][index].items() if k not in WORDING_FIELDS}
                raw = {**{k: v for k, v in raw.items() if k in WORDING_FIELDS}, **kept, "source": "agent"}
                if old_section == section_name:
                    edits.append(Replace(old_section, index, raw))
                else:
                    edits += [Remove(old_section, index), Append(section_name, raw)]
            else:
                edits.append(Append(section_name, raw))
            described = {new_id: describe_entry(new_id, section_name, item_text(parsed))}
            return self._commit_agent_edit(tx, doc, result, edits, new_id, described, session)

    @staticmethod
    def _commit_agent_edit(
        tx: Transaction, doc: DomainDoc, result: WriteResult, edits: list[Edit], new_id: str,
        described: dict[str, str], session: str, *, keep: bool = False,
    ) -> WriteResult:
        """``keep``: the edit rewrites an entry that must not be lost, so if the line cap would prune it,
        nothing is written and the entry stays as it was."""
        capped = tx.edit(doc, edits, described=described)
        if keep and new_id in {p.id for p in capped.pruned}:
            result.duplicates.append(new_id)
            result.lines = doc.line_count
            return result  # leaving without commit writes nothing
        result.pruned, result.lines, result.over_by = capped.pruned, capped.lines, capped.over_by
        result.changed = not tx.empty
        if not result.changed:
            result.duplicates.append(new_id)  # written before, word for word
            return result
        result.added = [new_id] if new_id not in {p.id for p in capped.pruned} else []
        written = "rewrite 1 entry" if isinstance(edits[0], Replace) else "add 1 entry"
        result.commit = tx.commit(f"expertise({doc.name}): {written} by the agent in session {session[:8]}")
        return result

    @_replanned
    def merge_learned(
        self,
        domain: str,
        items: list[tuple[str, dict[str, Any]]],
        *,
        sessions: list[str],
        dry_run: bool = False,
    ) -> MergeResult:
        """Add new learnings and count recurrences of known ones, as one ``learned`` revision.

        A learning already recorded from the same session is not counted again, so learning from one
        transcript twice changes nothing. Hand-written entries are never rewritten. ``dry_run`` plans
        the same edits and writes nothing.
        """
        with self.transaction("learned", sessions=sessions, dry_run=dry_run) as tx:
            doc = tx.load(domain)
            merge = MergeResult(domain, doc.path)
            edits = self._sightings(doc, items, merge)
            if not edits:
                merge.lines = doc.line_count
                return merge
            described = {a["id"]: describe_entry(a["id"], a["section"], a["text"]) for a in merge.added}
            capped = tx.edit(doc, edits, described=described)
            merge.pruned, merge.lines, merge.over_by = capped.pruned, capped.lines, capped.over_by
            if dry_run:
                return merge  # leaving without commit writes nothing
            kept = len([a for a in merge.added if a["id"] not in {p.id for p in capped.pruned}])
            parts = [f"learn {_entries(kept)}"] if kept else []
            if merge.updated:
                parts.append(f"update {len(merge.updated)}")
            seen_again = [describe_entry(u["id"], u["section"], u["text"]) for u in merge.updated]
            tx.notes += [f"~ {line} (seen again)" for line in seen_again[:20]]
            source = f"session {sessions[0][:8]}" if len(sessions) == 1 else f"{len(sessions)} sessions"
            merge.commit = tx.commit(f"expertise({domain}): {' and '.join(parts) or 'prune'} from {source}")
            return merge

    @_replanned
    def merge_learned_all(
        self,
        batches: dict[str, tuple[list[tuple[str, dict[str, Any]]], list[str]]],
        *,
        dry_run: bool = False,
    ) -> dict[str, MergeResult]:
        """``merge_learned`` for several domains (domain -> (items, sessions)) as ONE ``learned`` revision:
        one lock, one commit, one shared-layer publish and one cache update for a learn that touches seven
        domains, where a revision each cost seven of everything (the commit alone ~60 ms each)."""
        sessions = list(dict.fromkeys(s for _, batch_sessions in batches.values() for s in batch_sessions))
        results: dict[str, MergeResult] = {}
        with self.transaction("learned", sessions=sessions, dry_run=dry_run) as tx:
            parts: list[str] = []
            for domain in sorted(batches):
                items, _ = batches[domain]
                doc = tx.load(domain)
                merge = results[domain] = MergeResult(domain, doc.path)
                edits = self._sightings(doc, items, merge)
                if not edits:
                    merge.lines = doc.line_count
                    continue
                described = {a["id"]: describe_entry(a["id"], a["section"], a["text"]) for a in merge.added}
                capped = tx.edit(doc, edits, described=described)
                merge.pruned, merge.lines, merge.over_by = capped.pruned, capped.lines, capped.over_by
                kept = len([a for a in merge.added if a["id"] not in {p.id for p in capped.pruned}])
                done = [f"learn {_entries(kept)}"] if kept else []
                if merge.updated:
                    done.append(f"update {len(merge.updated)}")
                parts.append(f"{domain}: {' and '.join(done) or 'prune'}")
                seen_again = [describe_entry(u["id"], u["section"], u["text"]) for u in merge.updated]
                tx.notes += [f"~ {line} (seen again)" for line in seen_again[:20]]
            if dry_run or tx.empty:
                return results  # leaving without commit writes nothing
            source = f"session {sessions[0][:8]}" if len(sessions) == 1 else f"{len(sessions)} sessions"
            touched = [domain for domain in sorted(batches) if results[domain].added or results[domain].updated]
            if len(touched) == 1:
                subject = f"expertise({touched[0]}): {parts[0].split(': ', 1)[1]} from {source}"
            else:
                subject = f"expertise({', '.join(touched) or 'learn'}): {'; '.join(parts)} from {source}"
            outcome = tx.commit(subject)
            for merge in results.values():
                if merge.added or merge.updated or merge.pruned:
                    merge.commit = outcome
            return results

    @staticmethod
    def _sightings(doc: DomainDoc, items: list[tuple[str, dict[str, Any]]], merge: MergeResult) -> list[Edit]:
        """The edits that record ``items``: new entries appended, known learned ones seen again."""
        existing = {item_id(s, item): (s, index, item) for s, index, item in doc.entries()}
        appended: dict[str, tuple[str, dict[str, Any]]] = {}
        replaced: dict[tuple[str, int], dict[str, Any]] = {}
        for section_name, raw in items:
            parsed = parse_item(section_name, raw)
            entry, text = item_id(section_name, parsed), item_text(parsed)
            if entry in appended:
                appended[entry] = (section_name, combine_sightings(appended[entry][1], raw))
                continue
            if entry not in existing:
                appended[entry] = (section_name, raw)
                continue
            old_section, index, item = existing[entry]
            if not is_learned(item):
                merge.rejected.append(
                    {"id": entry, "section": section_name, "text": text, "reason": "already known (hand-written)"}
                )
                continue
            old_raw = replaced.get((old_section, index)) or doc.loaded.plain[old_section][index]
            updated = add_sighting(old_raw, raw)
            if updated is None:
                merge.rejected.append(
                    {"id": entry, "section": section_name, "text": text, "reason": "already learned from this session"}
                )
                continue
            replaced[(old_section, index)] = updated
        for entry, (section_name, raw) in appended.items():
            merge.added.append({"id": entry, "section": section_name, "text": item_text(parse_item(section_name, raw))})
        for (section_name, _index), raw in replaced.items():
            item = parse_item(section_name, raw)
            merge.updated.append(
                {
                    "id": item_id(section_name, item),
                    "section": section_name,
                    "text": item_text(item),
                    "recurrence": raw.get("recurrence"),
                }
            )
        edits: list[Edit] = [Replace(s, index, raw) for (s, index), raw in replaced.items()]
        return edits + [Append(s, raw) for s, raw in appended.values()]




def _flat(text: str) -> str:
    from expertise_kit.fast.render import strip_controls

    return " ".join(strip_controls(text).split())


def value_problem(value: str) -> str | None:
    """What makes ``value`` no entry text, as every write checks it (and a fetched shared layer): too long,
    or control characters. None when it is fine."""
    if len(value) > MAX_TEXT_CHARS:
        return f"is {len(value):,} characters, over the {MAX_TEXT_CHARS:,} limit"
    if any((ord(ch) < 32 and ch not in "\n\t") or ord(ch) == 0x7F for ch in value):
        return "contains control characters"
    return None


def manual_item(section_name: str, text: str, *, error: str | None = None, solution: str | None = None) -> Any:
    """The raw YAML value for a hand-written entry, checked for size and control characters."""
    kind = section(section_name).kind if section_name in section_names() else None
    if kind is None:
        raise UserError(f"unknown section {section_name!r}", hint="use one of " + ", ".join(section_names()))
    cleaned = text.strip()
    for label, value in (("text", cleaned), ("error", error or ""), ("solution", solution or "")):
        problem = value_problem(value)
        if problem is not None:
            raise UserError(f"{label} {problem}", hint="shorten it" if "limit" in problem else "remove them")
    # Then stripped as every writer strips (the learner too): invisible and bidi characters such as U+202E
    # gone, and each run of whitespace, a newline included, one space.
    cleaned = _flat(cleaned)
    error = _flat(error) if error is not None else None
    solution = _flat(solution) if solution is not None else None
    if not cleaned:
        raise UserError("entry text is empty", hint="say what the entry should teach")
    if kind == FILES:
        path = normalise_path(cleaned)
        if not path.strip("./") or path.startswith("../") or path == ".." or os.path.isabs(path) or "\n" in path:
            raise UserError(
                f"{cleaned!r} is not a file in the project",
                hint="give a path relative to the project root, such as src/db/models.py",
            )
        return path
    if kind == FAILURES:
        entry: dict[str, Any] = {"issue": cleaned}
        if error:
            entry["error"] = error
        if solution:
            entry["solution"] = solution
        return entry
    return cleaned
