"""Automatic feedback after a session: what the hooks showed it, set against what it then did.

The pre-task hook keeps, per agent session, the ids of the entries it injected (``fast/session.py``).
After the session is learned, each injected entry is judged once:

- **harmful**: a failure entry whose failure happened in the session anyway, and that the session then
  fixed another way: the stored fix misled, or was not the fix.
- **not heeded**, no counter: the failure happened anyway, and the session fixed it as the entry says (or
  not at all). The lesson was right and the agent did not follow it; sinking it would hide the one warning
  that session needed. Its recurrence, counted by learning, keeps it near the top.
- **helpful** ("heeded"): a failure entry that was relevant (the session ran its program, or touched the
  file it is about), whose failure did not happen, and whose fix the session followed (it ran the fix's
  command or touched the fix's file): not failing a program run in every session is no evidence alone.
- **ended_well**, the smaller credit: any other injected entry of a session that ended well. Ranking
  weighs it a tenth of a helpful: being shown in a good session is weak evidence, and must not lift an
  entry above the untried ones that exploration needs to show.

All verdicts of one session land in one commit, with the counts in trailers. A session is credited once
per entry: a later pass over the same session (a per-turn stop event, a resumed session) judges only
entries injected since, so nothing is counted twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from expertise_kit.document.entries import FailureEntry, item_id, item_text, parse_item
from expertise_kit.document.splice import Edit, Replace
from expertise_kit.errors import UserError
from expertise_kit.fast.cache import cache_dir
from expertise_kit.learning.extract import Extraction, main_program, span_programs
from expertise_kit.learning.transcripts.shell import programs_in
from expertise_kit.store import Store
from expertise_kit.versioning.commit import CommitOutcome
from expertise_kit.vocab import FAILURES, FILES, section

__all__ = ["Credit", "credit_session", "judge"]

MAX_CREDITED = 400


@dataclass
class Credit:
    helpful: list[str] = field(default_factory=list)
    harmful: list[str] = field(default_factory=list)
    ended_well: list[str] = field(default_factory=list)
    commit: CommitOutcome | None = None
    shared: str | None = None  # the shared layer's commit of verdicts on lessons only it holds

    @property
    def total(self) -> int:
        return len(self.helpful) + len(self.harmful) + len(self.ended_well)


def _programs(text: str, first_only: bool = False) -> set[str]:
    """The programs ``text``'s code spans run (an issue names one: its first), seen through wrappers."""
    found = span_programs(text)
    return {p for p in (found[:1] if first_only else found) if p}


def _spans(text: str) -> set[str]:
    """The programs its code spans run, and its content words (five letters, to meet plurals)."""
    words = {w[:5] for w in text.lower().replace("`", " ").split() if len(w) > 3 and w.isalpha()}
    return _programs(text) | words


def agrees(session_fix: str, stored_fix: str) -> bool:
    """Whether the session fixed the failure as the entry says: a program in common in their code spans,
    or two content words."""
    ours, theirs = _spans(session_fix), _spans(stored_fix)
    return bool({p for p in ours & theirs if " " in p or not p.isalpha()}) or len(ours & theirs) >= 2


def judge(
    item: Any,
    section_name: str,
    failed: dict[str, str],
    ran: set[str],
    touched: set[str],
    ended_well: bool,
) -> str | None:
    """The verdict on one injected entry: "helpful", "harmful", "ended_well" or None (no evidence, or a
    warning not heeded). ``failed``: the session's failures, by entry id, with the fix it found ("")."""
    entry = item_id(section_name, item)
    if section(section_name).kind == FAILURES and isinstance(item, FailureEntry):
        if entry in failed:
            fix = failed[entry]
            return "harmful" if fix and item.solution and not agrees(fix, item.solution) else None
        issue = item.issue
        relevant = bool(_programs(issue, first_only=True) & ran) or any(path and path in issue for path in touched)
        # Not failing a program run in every session is the base rate, not a heeded warning: the session
        # must also have done what the fix says (run its command, touched its file).
        fixes = _programs(item.solution or "")
        followed = bool(fixes & ran) or any(path and path in (item.solution or "") for path in touched)
        if relevant and followed:
            return "helpful"
    return "ended_well" if ended_well else None


def _credited_path(store: Store, key: str) -> str:
    return os.path.join(cache_dir(str(store.project.expertise_dir)), "sessions", f"{key}.credited")


def _read_credited(path: str) -> set[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return {line.strip() for line in handle.read(1 << 16).splitlines() if line.strip()}
    except OSError:
        return set()


def _write_credited(path: str, ids: set[str]) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "w", encoding="ascii") as handle:
            handle.write("\n".join(sorted(ids)[:MAX_CREDITED]) + "\n")
        os.replace(temp, path)
    except OSError:
        pass  # a lost record only means a later pass may judge these again


def credit_session(store: Store, key: str, injected_ids: list[str], extraction: Extraction) -> Credit:
    """Judge the entries injected into one session and record the verdicts in one commit."""
    credit = Credit()
    path = _credited_path(store, key)
    done = _read_credited(path)
    pending = [i for i in dict.fromkeys(injected_ids) if i not in done]
    if not pending:
        return credit
    session = extraction.session
    failed = {
        item_id(learning.section, parse_item(learning.section, learning.raw)): str(learning.raw.get("solution") or "")
        for learning in extraction.learnings
        if learning.kind == "failure"
    }
    ran = {p for call in session.calls if call.command for p in programs_in(call.command)}
    ran |= {main_program(call.command) for call in session.calls if call.command}
    touched = {os.path.basename(p) for call in session.calls for p in call.modifies}
    touched |= {learning.raw.get("path", "") for learning in extraction.learnings if learning.kind == "file"}
    touched.discard("")
    wanted = set(pending)
    verdicts: dict[str, str] = {}
    with store.transaction("feedback", sessions=[session.id]) as tx:
        for domain in store.config.domain_names:
            if not store.path_for(domain).exists():
                continue
            try:
                doc = tx.load(domain)
            except UserError:
                continue  # a broken file is reported by the commands that read it
            edits: list[Edit] = []
            for section_name, index, item in doc.entries():
                entry = item_id(section_name, item)
                if entry not in wanted or entry in verdicts:
                    continue
                verdict = judge(item, section_name, failed, ran, touched, session.ended_well)
                if verdict is None:
                    continue
                verdicts[entry] = verdict
                getattr(credit, verdict).append(entry)
                raw = doc.loaded.plain[section_name][index]
                if isinstance(raw, str):
                    key_name = {FILES: "path", FAILURES: "issue"}.get(section(section_name).kind, "text")
                    raw = {key_name: raw}
                edits.append(Replace(section_name, index, {**raw, verdict: int(raw.get(verdict) or 0) + 1}))
                tx.notes.append(f"{verdict}: {entry} {item_text(item)[:80]}")
            if edits:
                tx.edit(doc, edits)
        if credit.total:
            tx.counts.update(
                {"Helpful": len(credit.helpful), "Harmful": len(credit.harmful), "Ended-Well": len(credit.ended_well)}
            )
            credit.commit = tx.commit(
                f"expertise: feedback from session {session.id}: {len(credit.helpful)} helpful, "
                f"{len(credit.harmful)} harmful, {len(credit.ended_well)} shown in a session that ended well"
            )
        rest = [i for i in pending if i not in verdicts]
        if rest and store.project.git is not None and store.config.shared_publish:
            _credit_shared(store, set(rest), credit, lambda item, name: judge(
                item, name, failed, ran, touched, session.ended_well
            ), session.id)  # fmt: skip
    _write_credited(path, done | set(pending))
    return credit


def _credit_shared(store: Store, wanted: set[str], credit: Credit, verdict_of: Any, session_id: str) -> None:
    """Verdicts on lessons the session was given from the shared layer only (another branch's, not merged
    here): they are recorded in the shared layer itself, where every worktree reads them."""
    from expertise_kit.document.cap import fit_to_cap
    from expertise_kit.document.domainfile import parse_domain_text
    from expertise_kit.versioning.shared import rewrite_shared

    found: dict[str, str] = {}

    def rewrite(domain: str, where: Any, text: str) -> str | None:
        try:
            doc = parse_domain_text(text, where, domain)
        except UserError:
            return None
        edits: list[Edit] = []
        for section_name, index, item in doc.entries():
            entry = item_id(section_name, item)
            if entry not in wanted:
                continue
            verdict = verdict_of(item, section_name)
            if verdict is None:
                continue
            found[entry] = verdict
            raw = doc.loaded.plain[section_name][index]
            if isinstance(raw, str):
                raw = {{FILES: "path", FAILURES: "issue"}.get(section(section_name).kind, "text"): raw}
            edits.append(Replace(section_name, index, {**raw, verdict: int(raw.get(verdict) or 0) + 1}))
        return fit_to_cap(doc.loaded, doc.model, edits, store.config.line_cap).text if edits else None

    from expertise_kit.versioning.commit import TRAILER_PREFIX, trailer_value
    from expertise_kit.versioning.shared import branch_name

    paths = {store.path_for(d): d for d in store.config.domain_names}
    git = store.project.git
    assert git is not None
    message = (
        f"expertise: feedback from session {' '.join(session_id.split())[:100]} on lessons from the shared layer\n\n"
        f"{TRAILER_PREFIX}Change: feedback\n{TRAILER_PREFIX}Session: {trailer_value(session_id)}\n"
        f"{TRAILER_PREFIX}Branch: {trailer_value(branch_name(git))}\n"
    )
    try:
        commit = rewrite_shared(store.project, paths, rewrite, message)
    except Exception:  # noqa: BLE001 - the branch's own verdicts stand; these are judged no further
        return
    if commit is None:
        return
    credit.shared = commit
    for entry, verdict in found.items():
        getattr(credit, verdict).append(entry)
