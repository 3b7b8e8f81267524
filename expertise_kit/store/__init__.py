"""The store: reading and changing domain files safely.

Every change runs read → modify → write inside the write lock, so concurrent writers never lose each
other's updates; the write is atomic; a file that fails to parse or validate is refused, never
overwritten.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from expertise_kit.config import Config, load_config
from expertise_kit.document.atomic import ensure_writable, remove_stale_temps, write_atomic, write_lock
from expertise_kit.document.cap import CapResult, PrunedEntry, count_lines, fit_to_cap
from expertise_kit.document.entries import (
    DomainFile,
    FailureEntry,
    FileItem,
    Item,
    TextItem,
    is_learned,
    item_id,
    item_text,
)
from expertise_kit.document.ids import normalise_path
from expertise_kit.document.names import ENTRY_SECTIONS, validate_domain_name
from expertise_kit.document.schema_errors import raise_first_error
from expertise_kit.document.splice import Append, Edit, Replace, apply_edits, expected_plain
from expertise_kit.document.yamlio import LoadedYaml, load_yaml_file
from expertise_kit.errors import UserError
from expertise_kit.project import Project
from expertise_kit.versioning.busy import busy_reason
from expertise_kit.versioning.commit import CommitOutcome, Revision, commit_revision, pending_revisions

__all__ = ["Store", "DomainDoc", "WriteResult", "MAX_TEXT_CHARS", "manual_item", "parse_item", "describe_entry"]

MAX_TEXT_CHARS = 10_000  # the feedback-loop seed's per-payload cap

_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    "core_files": TypeAdapter(FileItem),
    "learned_from_failures": TypeAdapter(FailureEntry),
    **{
        name: TypeAdapter(TextItem)
        for name in ("patterns", "best_practices", "effective_patterns", "successful_techniques")
    },
}


def parse_item(section: str, raw: Any) -> Item:
    return _ADAPTERS[section].validate_python(raw)  # type: ignore[no-any-return]


@dataclass
class DomainDoc:
    name: str
    path: Path
    loaded: LoadedYaml
    model: DomainFile

    def entries(self) -> Iterator[tuple[str, int, Item]]:
        for section in ENTRY_SECTIONS:
            for index, item in enumerate(getattr(self.model, section)):
                yield section, index, item

    def find(self, entry: str) -> tuple[str, int, Item] | None:
        for section, index, item in self.entries():
            if item_id(section, item) == entry:
                return section, index, item
        return None

    @property
    def entry_count(self) -> int:
        return sum(1 for _ in self.entries())

    @property
    def line_count(self) -> int:
        return count_lines(self.loaded.text)


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


def describe_entry(entry_id: str, section: str, text: str) -> str:
    """One line of a commit body: `<id> <section>: <text>`, cut to stay readable."""
    flat = " ".join(text.split())
    return f"{entry_id} {section}: {flat[:100]}{'...' if len(flat) > 100 else ''}"


class Store:
    def __init__(self, project: Project, config: Config | None = None) -> None:
        self.project = project
        self.config = config if config is not None else load_config(project.expertise_dir)

    # -- reading ---------------------------------------------------------------------------------

    def path_for(self, domain: str) -> Path:
        validate_domain_name(domain)
        if domain not in self.config.domains:
            raise UserError(
                f"unknown domain {domain!r}",
                hint=f"use one of {', '.join(self.config.domain_names)}, or add it to .expertise/config.yaml",
            )
        path = self.project.expertise_dir / f"{domain}.yaml"
        if path.is_symlink():
            target = Path(os.path.realpath(path))
            home = Path(os.path.realpath(self.project.expertise_dir))
            if not target.is_relative_to(home):
                raise UserError(
                    f"is a symlink to {target}, outside .expertise/",
                    path=path,
                    hint="replace the link with a regular file",
                )
            return target
        return path

    def load(self, domain: str) -> DomainDoc:
        path = self.path_for(domain)
        loaded = load_yaml_file(path)
        try:
            model = DomainFile.model_validate(loaded.plain)
        except ValidationError as exc:
            raise_first_error(exc, loaded)
        if model.domain != domain:
            raise UserError(
                f"says `domain: {model.domain}` but is the file for {domain!r}",
                path=path,
                line=(loaded.tree.lc.key("domain")[0] + 1),
                hint=f"set `domain: {domain}`",
            )
        return DomainDoc(domain, path, loaded, model)

    # -- writing ---------------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the write lock; on the way in, tidy after dead writers and restore lost deferred entries."""
        ensure_writable(self.project.expertise_dir)
        with write_lock(self.project.lock_path):
            remove_stale_temps(self.project.expertise_dir)
            self._restore_deferred_entries()
            yield

    def _restore_deferred_entries(self) -> None:
        """Put back entries of deferred revisions that vanished from disk before they were committed.

        `git rebase --abort` and `git checkout -- .` discard uncommitted changes, including a learning
        written while the rebase was going on. Only done when a commit can be made now, since that commit
        is what ends the deferral.
        """
        git = self.project.git
        if git is None:
            return
        pending = pending_revisions(self.project)
        if not pending or busy_reason(git, index_wait=0) is not None:
            return
        wanted: dict[str, list[tuple[str, Any]]] = {}
        for revision in pending:
            for entry in revision.entries:
                wanted.setdefault(entry["domain"], []).append((entry["section"], entry["item"]))
        for domain, items in wanted.items():
            try:
                doc = self.load(domain)
            except UserError:
                continue  # a broken or removed file is the user's to fix; the record stays
            present = {item_id(section, item) for section, _, item in doc.entries()}
            missing = [(s, raw) for s, raw in items if item_id(s, parse_item(s, raw)) not in present]
            if missing:
                edits: list[Edit] = [Append(section, raw) for section, raw in missing]
                write_atomic(doc.path, apply_edits(doc.loaded, edits).encode("utf-8"))
                self.refresh_cache({domain: expected_plain(doc.loaded, edits)})

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

        The change is committed (or deferred) as one revision, inside the lock.
        """
        with self.locked():
            doc = self.load(domain)
            result = WriteResult(domain, doc.path)
            seen = {item_id(section, item) for section, _, item in doc.entries()}
            edits: list[Edit] = []
            described: dict[str, str] = {}
            for section, raw in items:
                parsed = parse_item(section, raw)
                new_id = item_id(section, parsed)
                if new_id in seen:
                    result.duplicates.append(new_id)
                    continue
                seen.add(new_id)
                edits.append(Append(section, raw))
                described[new_id] = describe_entry(new_id, section, item_text(parsed))
            if not edits:
                result.lines = doc.line_count
                return result
            capped = fit_to_cap(doc.loaded, doc.model, edits, self.config.line_cap, parse_item)
            pruned_ids = {p.id for p in capped.pruned}
            result.added = [entry for entry in described if entry not in pruned_ids]
            count = len(result.added)
            kept = {entry for entry in result.added}
            revision = Revision(
                entries=[
                    {"domain": domain, "section": e.section, "item": e.item}
                    for e in edits
                    if isinstance(e, Append) and item_id(e.section, parse_item(e.section, e.item)) in kept
                ],
                domains=[domain],
                change=change,
                subject=subject or f"expertise({domain}): add {count} entr{'y' if count == 1 else 'ies'} by hand",
                paths=[],
                sessions=sessions or [],
                added=[described[entry] for entry in result.added],
                removed=[
                    describe_entry(p.id, p.section, p.text) + " (pruned: line cap)"
                    for p in capped.pruned
                    if p.id not in described
                ],
            )
            self._save(doc, capped, result, revision)
            return result

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
        transcript twice changes nothing. Hand-written entries are never rewritten.
        """
        with self.locked() if not dry_run else nullcontext():
            doc = self.load(domain)
            merge = MergeResult(domain, doc.path)
            existing = {item_id(section, item): (section, index, item) for section, index, item in doc.entries()}
            appended: dict[str, tuple[str, dict[str, Any]]] = {}
            replaced: dict[tuple[str, int], dict[str, Any]] = {}
            for section, raw in items:
                entry = item_id(section, parse_item(section, raw))
                text = item_text(parse_item(section, raw))
                if entry in appended:
                    appended[entry] = (section, combine_sightings(appended[entry][1], raw))
                    continue
                if entry not in existing:
                    appended[entry] = (section, raw)
                    continue
                old_section, index, item = existing[entry]
                if not is_learned(item):
                    merge.rejected.append(
                        {"id": entry, "section": section, "text": text, "reason": "already known (hand-written)"}
                    )
                    continue
                old_raw = replaced.get((old_section, index)) or doc.loaded.plain[old_section][index]
                updated = _merged(old_raw, raw)
                if updated is None:
                    merge.rejected.append(
                        {"id": entry, "section": section, "text": text, "reason": "already learned from this session"}
                    )
                    continue
                replaced[(old_section, index)] = updated
            edits: list[Edit] = [Replace(sec, index, raw) for (sec, index), raw in replaced.items()]
            edits += [Append(section, raw) for section, raw in appended.values()]
            for entry, (section, raw) in appended.items():
                merge.added.append({"id": entry, "section": section, "text": item_text(parse_item(section, raw))})
            for (sec, _index), raw in replaced.items():
                item = parse_item(sec, raw)
                merge.updated.append(
                    {
                        "id": item_id(sec, item),
                        "section": sec,
                        "text": item_text(item),
                        "recurrence": raw.get("recurrence"),
                    }
                )
            if not edits:
                merge.lines = doc.line_count
                return merge
            capped = fit_to_cap(doc.loaded, doc.model, edits, self.config.line_cap, parse_item)
            merge.pruned, merge.lines, merge.over_by = capped.pruned, capped.lines, capped.over_by
            if dry_run:
                return merge
            kept = {p.id for p in capped.pruned}
            added_lines = [describe_entry(a["id"], a["section"], a["text"]) for a in merge.added if a["id"] not in kept]
            count = len(added_lines)
            parts = [f"learn {count} entr{'y' if count == 1 else 'ies'}"] if count else []
            if merge.updated:
                parts.append(f"update {len(merge.updated)}")
            source = f"session {sessions[0][:8]}" if len(sessions) == 1 else f"{len(sessions)} sessions"
            revision = Revision(
                domains=[domain],
                change="learned",
                subject=f"expertise({domain}): {' and '.join(parts) or 'prune'} from {source}",
                paths=[],
                sessions=sessions,
                added=added_lines,
                removed=[describe_entry(p.id, p.section, p.text) + " (pruned: line cap)" for p in capped.pruned],
                notes=[f"~ {describe_entry(u['id'], u['section'], u['text'])} (seen again)" for u in merge.updated][
                    :20
                ],
                entries=[
                    {"domain": domain, "section": section, "item": raw}
                    for entry, (section, raw) in appended.items()
                    if entry not in kept
                ],
            )
            result = WriteResult(domain, doc.path)
            self._save(doc, capped, result, revision)
            merge.commit = result.commit
            return merge

    def _save(self, doc: DomainDoc, capped: CapResult, result: WriteResult, revision: Revision) -> None:
        """Write the file and commit it as one revision. Call inside the lock."""
        result.pruned = capped.pruned
        result.lines = capped.lines
        result.over_by = capped.over_by
        if capped.text == doc.loaded.text:
            return
        write_atomic(doc.path, capped.text.encode("utf-8"))
        result.changed = True
        revision.paths = [self.relative(doc.path)]
        result.commit = commit_revision(self.project, revision)
        self.refresh_cache({doc.name: expected_plain(doc.loaded, capped.edits)})

    def refresh_cache(self, changed: dict[str, dict[str, Any]] | None = None) -> None:
        """Keep the pre-task hook's cache in step with a write. Never fails the write itself."""
        from expertise_kit.store.cachebuild import rebuild_cache, update_cache

        try:
            if changed is None:
                rebuild_cache(self)
            else:
                update_cache(self, changed)
        except Exception:  # noqa: BLE001 - a stale cache is detected and rebuilt by the hook
            pass

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.project.root).as_posix()


def manual_item(section: str, text: str, *, error: str | None = None, solution: str | None = None) -> Any:
    """The raw YAML value for a hand-written entry, checked for size and control characters."""
    cleaned = text.strip()
    for label, value in (("text", cleaned), ("error", error or ""), ("solution", solution or "")):
        if len(value) > MAX_TEXT_CHARS:
            raise UserError(
                f"{label} is {len(value):,} characters, over the {MAX_TEXT_CHARS:,} limit", hint="shorten it"
            )
        if any(ord(ch) < 32 and ch not in "\n\t" for ch in value):
            raise UserError(f"{label} contains control characters", hint="remove them")
    if not cleaned:
        raise UserError("entry text is empty", hint="say what the entry should teach")
    if section == "core_files":
        return normalise_path(cleaned)
    if section == "learned_from_failures":
        entry: dict[str, Any] = {"issue": cleaned}
        if error:
            entry["error"] = error.strip()
        if solution:
            entry["solution"] = solution.strip()
        return entry
    if section not in ENTRY_SECTIONS:
        raise UserError(f"unknown section {section!r}", hint="use one of " + ", ".join(ENTRY_SECTIONS))
    return cleaned


_MAX_SESSIONS_KEPT = 20  # an entry seen in hundreds of sessions keeps the latest; recurrence keeps the count


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """``old`` updated with a new sighting, keeping its key order and unknown keys; None if not new."""
    known = [str(s) for s in old.get("sessions") or []]
    fresh = [s for s in new.get("sessions") or [] if str(s) not in known]
    if not fresh:
        return None
    merged = dict(old)
    merged["sessions"] = [*(old.get("sessions") or []), *fresh][-_MAX_SESSIONS_KEPT:]
    merged["recurrence"] = int(old.get("recurrence") or 1) + len(fresh)
    stamps = [str(v) for v in (old.get("last_seen"), new.get("last_seen")) if v]
    if stamps:
        merged["last_seen"] = max(stamps)
    if not old.get("solution") and new.get("solution"):
        merged["solution"] = new["solution"]
    return merged


def combine_sightings(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """One learning seen in two sessions of the same batch."""
    merged = _merged(first, second)
    if merged is None:
        return first
    stamps = [str(v) for v in (first.get("first_seen"), second.get("first_seen")) if v]
    if stamps:
        merged["first_seen"] = min(stamps)
    return merged
