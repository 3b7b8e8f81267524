"""``expertise feedback``: a person or an agent says whether an entry helped. One revision per verdict,
the note kept in the commit; ranking weighs the counters (a posterior over helpful and harmful)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expertise_kit import clock
from expertise_kit.document.entries import item_id, item_text
from expertise_kit.document.splice import Replace
from expertise_kit.errors import UserError
from expertise_kit.store import Store, describe_entry
from expertise_kit.versioning.commit import CommitOutcome
from expertise_kit.vocab import FAILURES, FILES, section

__all__ = ["FeedbackResult", "record_feedback", "VERDICTS"]

VERDICTS = ("helpful", "harmful")
MAX_NOTE_CHARS = 500


@dataclass
class FeedbackResult:
    domain: str
    entry: str
    section: str
    text: str
    verdict: str
    count: int
    commit: CommitOutcome | None


def _find(store: Store, prefix: str) -> tuple[str, str, int, Any]:
    """(domain, section, index, item) of the one entry whose id starts with ``prefix``, in any domain."""
    wanted = prefix.strip().lower()
    if len(wanted) < 4 or any(ch not in "0123456789abcdef" for ch in wanted):
        raise UserError(f"{prefix!r} is not an entry id", hint="give 4+ characters of an id from `expertise show`")
    found = []
    for domain in store.config.domain_names:
        try:
            doc = store.load(domain)
        except UserError:
            continue  # a broken file is reported by the commands that read it; the id may be elsewhere
        found += [(domain, s, i, item) for s, i, item in doc.entries() if item_id(s, item).startswith(wanted)]
    if not found:
        raise UserError(f"no entry {prefix!r} in any domain", hint="see the ids with `expertise show DOMAIN`")
    if len(found) > 1:
        raise UserError(f"{prefix!r} matches {len(found)} entries", hint="give more of the id")
    return found[0]


def _counted(raw: Any, section_name: str, verdict: str) -> dict[str, Any]:
    """The raw item with its counter raised; a hand-written plain string becomes a mapping that says so."""
    if isinstance(raw, str):
        key = {FILES: "path", FAILURES: "issue"}.get(section(section_name).kind, "text")
        raw = {key: raw}
    updated = dict(raw)
    updated[verdict] = int(updated.get(verdict) or 0) + 1
    # When: the same verdict given on two branches must leave two different files, or git takes the one
    # file for both and never asks the merge driver, which adds each side's verdicts up.
    updated["last_feedback"] = clock.iso(clock.now())
    return updated


def record_feedback(store: Store, prefix: str, verdict: str, note: str | None = None) -> FeedbackResult:
    if verdict not in VERDICTS:
        raise UserError(f"unknown verdict {verdict!r}", hint="use --helpful or --harmful")
    cleaned = " ".join((note or "").split())
    if len(cleaned) > MAX_NOTE_CHARS:
        raise UserError(f"the note is {len(cleaned)} characters, over {MAX_NOTE_CHARS}", hint="shorten it")
    with store.transaction("feedback") as tx:
        domain, section_name, index, item = _find(store, prefix)
        doc = tx.load(domain)
        raw = doc.loaded.plain[section_name][index]
        updated = _counted(raw, section_name, verdict)
        tx.edit(doc, [Replace(section_name, index, updated)])
        entry = item_id(section_name, item)
        tx.notes.append(f"{verdict}: {describe_entry(entry, section_name, item_text(item))}")
        if cleaned:
            tx.notes.append(f"Note: {cleaned}")
        outcome = tx.commit(f"expertise({domain}): {verdict} feedback on {entry}")
    return FeedbackResult(domain, entry, section_name, item_text(item), verdict, updated[verdict], outcome)
