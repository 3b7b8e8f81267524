"""How two sightings of one learned entry combine: sessions as a union, recurrence counted once per
session, the later ``last_seen`` and the earlier ``first_seen``, a fix kept once one is known."""

from __future__ import annotations

from typing import Any

__all__ = ["add_sighting", "combine_sightings", "MAX_SESSIONS_KEPT"]

MAX_SESSIONS_KEPT = 20  # an entry seen in hundreds of sessions keeps the latest; recurrence keeps the count


def add_sighting(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """``old`` updated with a new sighting, keeping its key order and unknown keys; None if not new."""
    known = [str(s) for s in old.get("sessions") or []]
    fresh = [s for s in new.get("sessions") or [] if str(s) not in known]
    if not fresh:
        return None
    merged = dict(old)
    merged["sessions"] = [*(old.get("sessions") or []), *fresh][-MAX_SESSIONS_KEPT:]
    merged["recurrence"] = int(old.get("recurrence") or 1) + len(fresh)
    stamps = [str(v) for v in (old.get("last_seen"), new.get("last_seen")) if v]
    if stamps:
        merged["last_seen"] = max(stamps)
    if not old.get("solution") and new.get("solution"):
        merged["solution"] = new["solution"]
    return merged


def combine_sightings(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """One learning seen in two sessions of the same batch."""
    merged = add_sighting(first, second)
    if merged is None:
        return first
    stamps = [str(v) for v in (first.get("first_seen"), second.get("first_seen")) if v]
    if stamps:
        merged["first_seen"] = min(stamps)
    return merged
