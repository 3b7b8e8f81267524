"""How two sightings of one learned entry combine: sessions as a union, recurrence counted once per
session, the later ``last_seen`` and the earlier ``first_seen``, a fix kept once one is known.

``merge_sightings`` is the three-way form a merge of two branches needs: each side's changes since the
common base are added once, and a session both sides learned from is counted once, not twice.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["add_sighting", "combine_sightings", "merge_sightings", "PROVENANCE_KEYS", "MAX_SESSIONS_KEPT", "UNRESOLVED"]

UNRESOLVED = " tries in one session"  # how the learner ends the issue of a failure a session never got past
MAX_SESSIONS_KEPT = 20  # an entry seen in hundreds of sessions keeps the latest; recurrence keeps the count

# Keys whose values both sides of a merge may change independently and that combine without a conflict.
PROVENANCE_KEYS = frozenset(
    {"sessions", "recurrence", "first_seen", "last_seen", "helpful", "harmful", "ended_well", "last_feedback"}
)


def _fixed(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``old`` with the fix ``new`` brings; a failure said to be unresolved takes the new sighting's words."""
    merged = {**old, "solution": new["solution"]}
    if str(old.get("issue") or "").endswith(UNRESOLVED) and new.get("issue"):
        merged["issue"] = new["issue"]
    return merged


def add_sighting(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """``old`` updated with a new sighting, keeping its key order and unknown keys; None if not new.

    A sighting from a session ``old`` already counts changes nothing but a missing fix."""
    known = [str(s) for s in old.get("sessions") or []]
    fresh = [s for s in new.get("sessions") or [] if str(s) not in known]
    if not fresh:
        # The same session again, grown since (an agent whose end event fires every turn, a resumed
        # session): not one more sighting, but the fix it found since is kept.
        if new.get("sessions") and not old.get("solution") and new.get("solution"):
            return _fixed(old, new)
        return None
    merged = dict(old)
    merged["sessions"] = [*(old.get("sessions") or []), *fresh][-MAX_SESSIONS_KEPT:]
    merged["recurrence"] = int(old.get("recurrence") or 1) + len(fresh)
    stamps = [str(v) for v in (old.get("last_seen"), new.get("last_seen")) if v]
    if stamps:
        merged["last_seen"] = max(stamps)
    if not old.get("solution") and new.get("solution"):
        merged = _fixed(merged, new)
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


def _count(entry: dict[str, Any] | None, key: str, default: int) -> int:
    if entry is None:
        return 0
    value = entry.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _session_keys(entry: dict[str, Any] | None) -> list[str]:
    return [str(s) for s in (entry or {}).get("sessions") or []]


def _stamp(values: list[Any], pick: Any) -> Any:
    """The earliest or latest of ``values`` by their text (ISO timestamps sort as text), keeping its type."""
    present = [v for v in values if v is not None and v != ""]
    return pick(present, key=str) if present else None


def merge_sightings(
    base: dict[str, Any] | None, ours: dict[str, Any], theirs: dict[str, Any]
) -> dict[str, Any]:
    """The provenance of one entry both sides saw again since ``base`` (None: both added it).

    Sessions are a union, ours first. Recurrence and feedback take each side's increase over the base
    (both sides' when both made the same change), less one for each session both sides added: a session
    learned in two clones is counted once. The later ``last_seen`` and ``last_feedback`` stand.
    """
    base_sessions = set(_session_keys(base))
    ours_new = set(_session_keys(ours)) - base_sessions
    theirs_new = set(_session_keys(theirs)) - base_sessions
    common = len(ours_new & theirs_new)
    merged: dict[str, Any] = {}
    known = set(_session_keys(ours))
    sessions = [*(ours.get("sessions") or []), *(s for s in theirs.get("sessions") or [] if str(s) not in known)]
    if sessions or "sessions" in ours or "sessions" in theirs:
        merged["sessions"] = sessions[-MAX_SESSIONS_KEPT:]
    a, b = _count(ours, "recurrence", 1), _count(theirs, "recurrence", 1)
    recurrence = max(a + b - _count(base, "recurrence", 1) - common, a, b, 1)
    if "recurrence" in ours or "recurrence" in theirs or recurrence > 1:
        merged["recurrence"] = recurrence
    for key in ("helpful", "harmful", "ended_well"):
        if key in ours or key in theirs:
            # Feedback carries no session of its own yet: each side's increase is counted once.
            a, b = _count(ours, key, 0), _count(theirs, key, 0)
            merged[key] = max(a + b - _count(base, key, 0), a, b, 0)
    first = _stamp([ours.get("first_seen"), theirs.get("first_seen")], min)
    if first is not None:
        merged["first_seen"] = first
    for key in ("last_seen", "last_feedback"):
        last = _stamp([ours.get(key), theirs.get(key)], max)
        if last is not None:
            merged[key] = last
    return merged
