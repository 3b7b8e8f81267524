"""Entries as plain data, without the pydantic model: for ``entries`` and the merge driver's quick path.

``valid_domain_data`` says whether plain data (as ``quickmerge.strict_plain`` reads a file) is a domain
file the model (``schema.DomainFile``) accepts, by the model's own rules, and answers False for anything
it is not sure of (a bool where a count goes, a number written as text, a time in another format), so the
caller takes the full reading, which names the problem. Where it answers True, ``text_of``, ``id_of``,
``is_learned_raw``, ``value_of`` and ``last_seen_of`` give what ``entries.item_text``, ``item_id``,
``is_learned``, ``item_value`` and ``item_last_seen`` give for the parsed item. Standard library only.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from functools import lru_cache

from expertise_kit.document.ids import entry_id, error_signature, normalise_path, normalise_text
from expertise_kit.document.prune import Facts
from expertise_kit.vocab import FAILURES, FILES, SESSION_SOURCES, section, section_names

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "valid_domain_data",
    "valid_item",
    "moment",
    "text_of",
    "id_of",
    "is_learned_raw",
    "value_of",
    "last_seen_of",
    "describe",
]

_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}:\d{2})?")
_COUNTS = {"recurrence": 1, "helpful": 0, "harmful": 0, "ended_well": 0}  # the least each may be
_MOMENTS = ("first_seen", "last_seen", "last_feedback")
_BASE_KEYS = ("domain", "overview", "last_validated")


def _int(value: Any) -> bool:
    return type(value) is int


def moment(value: Any) -> datetime | None:
    """The time a text in the one format we write stands for (UTC if it names no zone), or a ``datetime``
    (data a writer remembered, read by ruamel); None otherwise."""
    if type(value) is datetime:
        return _checked(value)
    return _moment_of(value) if type(value) is str else None


@lru_cache(maxsize=4096)  # the versions a merge reads repeat most times, and entries share them
def _moment_of(text: str) -> datetime | None:
    if not _MOMENT.fullmatch(text):
        return None
    try:
        return _checked(datetime.fromisoformat(text))
    except ValueError:  # 2026-02-30
        return None


def _checked(value: datetime) -> datetime | None:
    try:
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        value.astimezone(timezone.utc)  # past year 9999 once in UTC: the model refuses it
    except (ValueError, OverflowError):
        return None
    return value


def _own_key(key: Any) -> bool:
    """A key the model keeps as an unknown one without a second look (not one of pydantic's own names)."""
    return type(key) is str and not key.startswith(("_", "model_"))


def _provenance_ok(raw: dict[str, Any]) -> bool:
    for key, value in raw.items():
        if not _own_key(key):
            return False
        if key == "source":
            if type(value) is not str or value not in (*SESSION_SOURCES, "manual"):
                return False
        elif key == "sessions":
            if value is not None and (
                type(value) is not list or not all(type(s) is str or _int(s) for s in value)
            ):
                return False
        elif key in _COUNTS:
            if not _int(value) or value < _COUNTS[key]:
                return False
        elif key in _MOMENTS:
            if value is not None and moment(value) is None:
                return False
        elif key == "stale" and type(value) is not bool:
            return False
    return True


def valid_item(section_name: str, raw: Any) -> bool:
    """Whether the model surely accepts ``raw`` as an item of ``section_name``."""
    kind = section(section_name).kind
    if type(raw) is str:
        return kind != FAILURES and raw != ""
    if type(raw) is not dict or not _provenance_ok(raw):
        return False
    if kind == FAILURES:
        return all(raw.get(key) is None or type(raw[key]) is str for key in ("issue", "error", "solution"))
    value = raw.get("path" if kind == FILES else "text")
    return type(value) is str and value != ""


def valid_domain_data(plain: Any, domain: str, checked: dict[tuple[str, int], Any] | None = None) -> bool:
    """Whether ``plain`` is surely a valid file of ``domain`` (False: not sure, or not valid). ``checked``:
    items found valid before, by section and identity (holding them, so no other object takes their id):
    versions of a file read with one ``plainread`` memo share their unchanged entries."""
    if type(plain) is not dict or plain.get("domain") != domain or type(domain) is not str or not domain:
        return False
    if not all(_own_key(key) for key in plain):
        return False
    overview = plain.get("overview")
    if overview is not None and type(overview) is not str:
        return False
    validated = plain.get("last_validated")
    if validated is not None and moment(validated) is None:
        return False
    for name in section_names():
        items = plain.get(name)
        if items is None:
            continue
        if type(items) is not list:
            return False
        for raw in items:
            if checked is not None and (name, id(raw)) in checked:
                continue
            if not valid_item(name, raw):
                return False
            if checked is not None:
                checked[(name, id(raw))] = raw
    return True


def text_of(section_name: str, raw: Any) -> str:
    """``entries.item_text`` of a valid raw item."""
    if type(raw) is str:
        return raw
    kind = section(section_name).kind
    if kind == FILES:
        return str(raw["path"])
    if kind != FAILURES:
        return str(raw["text"])
    head = raw.get("issue") or raw.get("error") or ""
    solution = raw.get("solution")
    return head if not solution else f"{head} -> {solution}"


def id_of(section_name: str, raw: Any) -> str:
    """``entries.item_id`` of a valid raw item."""
    kind = section(section_name).kind
    if kind == FAILURES:
        return _id_of(kind, raw.get("error") or "", raw.get("issue") or "")
    return _id_of(kind, text_of(section_name, raw), "")


@lru_cache(maxsize=4096)  # a merge asks for each entry's id in each version, and again when pruning
def _id_of(kind: str, text: str, issue: str) -> str:
    if kind == FILES:
        return entry_id("file", normalise_path(text))
    if kind == FAILURES:
        return entry_id("failure", error_signature(text) if text.strip() else normalise_text(issue))
    return entry_id("text", normalise_text(text))


def is_learned_raw(raw: Any) -> bool:
    return type(raw) is dict and raw.get("source") in SESSION_SOURCES


def value_of(raw: Any) -> int:
    """``entries.item_value``: recurrences plus net feedback."""
    if type(raw) is not dict:
        return 1
    count = {key: raw.get(key, least) for key, least in _COUNTS.items()}
    return int(count["recurrence"] + count["helpful"] - count["harmful"] + count["ended_well"] // 10)


def last_seen_of(raw: Any) -> datetime | None:
    """``entries.item_last_seen``: when it was last (or first) seen."""
    if type(raw) is not dict:
        return None
    return moment(raw.get("last_seen")) or moment(raw.get("first_seen"))


def describe(section_name: str, raw: Any) -> Facts:
    """What pruning reads of a valid raw item (``cap`` reads the same of the parsed one)."""
    learned, value, seen = is_learned_raw(raw), value_of(raw), last_seen_of(raw)
    return Facts(learned, value, seen, text_of(section_name, raw), id_of(section_name, raw))
