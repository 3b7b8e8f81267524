"""Which revision, and which session, brought an entry in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expertise_kit.document.entries import Item, item_id, item_text
from expertise_kit.errors import UserError
from expertise_kit.store import Store
from expertise_kit.versioning.log import HistoryRow, read_history

__all__ = ["BlameResult", "blame_entry"]


@dataclass
class BlameResult:
    domain: str
    entry: str
    section: str
    text: str
    revision: HistoryRow | None
    entry_sessions: list[str | int]
    first_seen: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "id": self.entry,
            "section": self.section,
            "text": self.text,
            "revision": self.revision.as_json() if self.revision else None,
            "entry_sessions": self.entry_sessions,
            "first_seen": self.first_seen,
        }


def _find(store: Store, domain: str, entry: str) -> tuple[str, Item]:
    doc = store.load(domain)
    matches = (
        [(s, i) for s, _, i in doc.entries() if item_id(s, i).startswith(entry.lower())] if len(entry) >= 4 else []
    )
    if not matches:
        raise UserError(f"no entry {entry!r} in {domain}", hint=f"see the ids with `expertise show {domain}`")
    if len(matches) > 1:
        raise UserError(f"{entry!r} matches {len(matches)} entries in {domain}", hint="give more of the id")
    return matches[0]


def blame_entry(store: Store, domain: str, entry: str) -> BlameResult:
    section, item = _find(store, domain, entry)
    full = item_id(section, item)
    origin: HistoryRow | None = None
    candidate: HistoryRow | None = None
    for row in read_history(store.project, domain):
        if row.deferred:
            if row.added and full in row.added:
                origin = row
                break
            continue
        if row.added is not None and full in row.added:
            origin = row
            break
        if row.removed is not None and full in row.removed:
            origin = candidate  # it was absent before this row, so the newer one brought it back
            break
        candidate = row
    else:
        origin = origin or candidate
    sessions: list[str | int] = [] if isinstance(item, str) else list(item.sessions)
    first_seen = None if isinstance(item, str) or item.first_seen is None else item.first_seen.isoformat()
    return BlameResult(domain, full, section, item_text(item), origin, sessions, first_seen)
