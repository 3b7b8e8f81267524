"""``expertise learn``: transcripts in, reviewed learnings out, one commit per domain touched."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expertise_kit.document.entries import is_learned, item_id, parse_item
from expertise_kit.errors import UserError, bug_in
from expertise_kit.fast.classify import Rules, classify, rules_from
from expertise_kit.learning.extract import SANDBOX_SOLUTION, Extraction, Learning, extract, program_kind
from expertise_kit.learning.held import HeldFailures
from expertise_kit.learning.quality import rejection_reason
from expertise_kit.learning.reflect import asked_candidates, lesson_words, one_lesson
from expertise_kit.learning.transcripts import iter_sessions
from expertise_kit.learning.transcripts.model import MAX_TASK_CHARS, safe_session_id
from expertise_kit.store import MergeResult, Store

__all__ = ["LearnReport", "learn_from"]


@dataclass
class LearnReport:
    sessions: list[dict[str, Any]] = field(default_factory=list)
    domains: dict[str, MergeResult] = field(default_factory=dict)
    rejected: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by domain, before merging
    held: list[dict[str, Any]] = field(default_factory=list)  # failures seen once with no fix: not stored yet
    errors: list[UserError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    extractions: list[Extraction] = field(default_factory=list, repr=False)  # for the feedback step

    def as_json(self) -> dict[str, Any]:
        domains: dict[str, Any] = {}
        for name in sorted(set(self.domains) | set(self.rejected)):
            merge = self.domains.get(name)
            domains[name] = {
                "added": merge.added if merge else [],
                "updated": merge.updated if merge else [],
                "rejected": [*self.rejected.get(name, []), *(merge.rejected if merge else [])],
                "pruned": [{"id": p.id, "section": p.section, "text": p.text} for p in merge.pruned] if merge else [],
                "commit": merge.commit.sha if merge and merge.commit else None,
                "deferred": merge.commit.deferred if merge and merge.commit else None,
            }
        return {
            "dry_run": self.dry_run,
            "sessions": self.sessions,
            "domains": domains,
            "held": self.held,
            "errors": [error.one_line() for error in self.errors],
            "warnings": self.warnings,
        }


FAILURES = "learned_from_failures"
FILES = "core_files"
# Paths that say nothing of what a lesson is about: a library's own files, and git's (`.git/refs/heads/x.lock`).
_VENDORED = re.compile(
    r"(?:^|/)(?:site-packages|dist-packages|node_modules|\.?venv|vendor|\.cargo|go/pkg|\.git)/|^/usr/"
)
_PATH_IN_ERROR = re.compile(r"(?<![\w/.])(?:[\w.@-]+/)+[\w.@-]+\.\w{1,6}\b")


def _route(learning: Learning, rules: dict[str, Rules], primary: str) -> str:
    """The one domain a learning belongs to.

    A file lives where its path says, and with no path signal in ``general``: never in the session's
    domain, which would file the same path under a different domain each session. A failure of
    project-wide tooling (git, package managers, formatters, linters, the build, commit hooks) is
    ``general``; any other failure goes where the files it names live, then by its words.
    """
    if learning.kind in ("pattern", "technique"):
        return primary
    if learning.kind == "file":
        return classify("", learning.files, rules).domain
    if learning.kind in ("rule", "fact"):  # what it is about, in its own words and the paths it names
        named = [m.group(0) for m in _PATH_IN_ERROR.finditer(learning.text)]
        return classify(learning.text, named, rules).domain
    if learning.gotcha and str(learning.raw.get("solution") or "").startswith(SANDBOX_SOLUTION):
        return "general" if "general" in rules else primary  # the agent's sandbox: the setup, whatever it refused
    # What the lesson is about: the files its fix changed and the paths in its error, before the program
    # that revealed it (a `pytest` failure fixed in the models is a database lesson).
    named = [
        *learning.fix_files, *learning.files,
        *(m.group(0) for m in _PATH_IN_ERROR.finditer(str(learning.raw.get("error", "")))),
    ]  # fmt: skip
    named = [p for p in named if not _VENDORED.search(p)]  # a library's frames, git's own files
    by_place = classify("", named, rules).domain if named else "general"
    if by_place != "general":
        return by_place
    kind = program_kind(learning.program)
    if kind == "tooling" or learning.gotcha:
        return "general" if "general" in rules else primary
    if kind == "test" and "testing" in rules:
        return "testing"
    return classify(learning.text, [], rules).domain


def _known_homes(store: Store) -> tuple[dict[str, str], dict[str, int], dict[str, list[tuple[str, str]]]]:
    """Every entry id already stored, and the domain holding it (a lesson has one home); how many learned
    key files each domain holds; and the lessons agents wrote, by session: (id, wording)."""
    homes: dict[str, str] = {}
    files: dict[str, int] = {}
    by_agent: dict[str, list[tuple[str, str]]] = {}
    for domain in store.config.domains:
        try:
            data = store.entries_of(domain)
        except (UserError, OSError):
            continue  # a broken or missing file is reported by the write to it, not here
        for section_name, _, item in data.entries():
            homes.setdefault(item_id(section_name, item), domain)
            if section_name == FILES and is_learned(item):
                files[domain] = files.get(domain, 0) + 1
            if not isinstance(item, str) and item.source == "agent":
                for session in item.sessions:
                    by_agent.setdefault(str(session), []).append((item_id(section_name, item), lesson_words(item)))
    return homes, files, by_agent


def _written_by_agent(
    learning: Learning, entry: str | None, lessons: list[tuple[str, str]], shown: set[str] | None
) -> str | None:
    """The id of the lesson the session's agent wrote that says what ``learning`` says, if it wrote one:
    the agent's wording is kept, and the parsed one is not added beside it."""
    words = lesson_words(learning.raw)
    return next(
        (i for i, wording in lessons if i == entry or one_lesson(learning.section, entry or "", words, wording, shown)),
        None,
    )


CENTRAL_TOUCHES = 3  # commits touching a file, among the last HISTORY_DEPTH, that make it central
CENTRAL_RANK = 30


def _central_files(store: Store) -> set[str]:
    """The files git history touches most (at least ``CENTRAL_TOUCHES`` times): key files on their first
    sighting. Others wait for a second session that edits them."""
    from expertise_kit.upkeep.discovery import touches

    ranked = touches(store).most_common(CENTRAL_RANK)
    return {path for path, count in ranked if count >= CENTRAL_TOUCHES}


def identity(learning: Learning) -> str | None:
    """The id the learning's entry would have; None if it does not validate."""
    try:
        return item_id(learning.section, parse_item(learning.section, learning.raw))
    except ValueError:
        return None  # the store's own validation reports it


def _held(entry: str, learning: Learning, domain: str) -> dict[str, Any]:
    return {"id": entry, "kind": learning.kind, "domain": domain, "text": learning.text}


def _session_record(extraction: Extraction, primary: str) -> dict[str, Any]:
    session = extraction.session
    return {
        "id": session.id,
        "format": session.format,
        "path": str(session.source),
        "files_read": [str(p) for p in session.files_read],
        "records": session.records,
        "skipped_lines": session.skipped_lines,
        "branches": session.branches,
        "tool_calls": len(session.calls),
        "failures": extraction.failures_seen,
        "modified_files": extraction.modified_files,
        "deleted_files": extraction.deleted_files,
        "ended_well": session.ended_well,
        "task": extraction.task,
        "domain": primary,
    }


def learn_from(store: Store, paths: list[Path], *, fmt: str = "auto", dry_run: bool = False) -> LearnReport:
    report = LearnReport(dry_run=dry_run)
    rules = rules_from(store.config.domains)
    by_domain: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    sessions_by_domain: dict[str, list[str]] = {}
    homes, file_counts, by_agent = _known_homes(store)
    room = {d: max(0, store.config.core_files_max - file_counts.get(d, 0)) for d in store.config.domains}
    central: set[str] | None = None
    held = HeldFailures(store.project)
    for session in iter_sessions(paths, fmt, report.errors):
        report.warnings.extend(session.warnings)
        try:
            extraction = extract(session, str(store.project.root))
        except Exception as exc:  # as for a reader's bug: the other transcripts still count
            step, lost = f"learning from session {session.id}", "nothing learned from that session"
            report.errors.append(bug_in("learner", exc, session.source, step, lost))
            continue
        report.extractions.append(extraction)
        modified = [f for learning in extraction.learnings for f in learning.files if learning.kind == "file"]
        asked = [session.task, *(p for p in session.prompts if p != session.task)][:3]
        primary = classify(" ".join(p[:MAX_TASK_CHARS] for p in asked), modified, rules).domain
        report.sessions.append(_session_record(extraction, primary))
        for rejected in extraction.rejected:
            report.rejected.setdefault(primary, []).append(
                {"kind": rejected.kind, "text": rejected.text, "reason": rejected.reason}
            )
        for learning in extraction.learnings:
            entry = identity(learning)
            domain = homes.get(entry) if entry else None
            if domain is None:
                domain = _route(learning, rules, primary)
            reason = rejection_reason(learning.kind, learning.raw)
            written = None
            if str(session.id) in by_agent:
                shown = asked_candidates(str(store.project.expertise_dir), safe_session_id(session.id))
                written = _written_by_agent(learning, entry, by_agent[str(session.id)], shown)
            if written:
                reason = f"the session's agent wrote this lesson itself ({written})"
            if reason:
                report.rejected.setdefault(domain, []).append(
                    {"kind": learning.kind, "text": learning.text, "reason": reason}
                )
                continue
            raw = learning.raw
            if learning.section == FILES and entry and entry not in homes:
                if central is None:
                    central = _central_files(store)
                if raw.get("path") not in central:
                    released = held.sight(entry, learning.section, raw)
                    if released is None:
                        report.held.append(_held(entry, learning, domain))
                        continue
                    raw = released
                if room.get(domain, 0) <= 0:
                    reason = f"the domain has its {store.config.core_files_max} key files (core_files_max)"
                    report.rejected.setdefault(domain, []).append(
                        {"kind": learning.kind, "text": learning.text, "reason": reason}
                    )
                    continue
                room[domain] = room.get(domain, 0) - 1
            elif entry and entry not in homes and (
                learning.recur_first or learning.section == FAILURES and not (learning.gotcha or learning.stuck)
            ):
                released = held.sight(entry, learning.section, raw)
                if released is None:
                    report.held.append(_held(entry, learning, domain))
                    continue
                raw = released
            if entry:
                homes.setdefault(entry, domain)  # seen again in a later session: the same home
            by_domain.setdefault(domain, []).append((learning.section, raw))
            # The readers already replace unsafe ids; checked again because this one becomes a commit trailer.
            session_id = safe_session_id(session.id)
            if session_id not in sessions_by_domain.setdefault(domain, []):
                sessions_by_domain[domain].append(session_id)
    # One revision for every domain the batch touched (one commit, not one per domain).
    batches = {domain: (by_domain[domain], sessions_by_domain[domain]) for domain in by_domain}
    report.domains.update(store.merge_learned_all(batches, dry_run=dry_run) if batches else {})
    # What is still held at the end: a failure held by one session of the batch and seen again in another is not.
    still = {h["id"]: h for h in report.held if held.holds(h["id"])}
    report.held = list(still.values())
    if not dry_run:
        # After the merges: a failure released from the hold is in the store before it leaves the file.
        with store.locked():
            held.save()
    return report
