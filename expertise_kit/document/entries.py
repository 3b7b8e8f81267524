"""A domain file's entries as plain Python objects, read without pydantic where that is sure.

A list item may be a plain string or a mapping. A plain string is hand-written; a mapping says where it
came from with ``source`` (``manual`` unless it says ``learned``, or ``agent`` when the agent wrote it
itself at a session's end, docs/reflect.md) and, when learned, carries its provenance: the sessions it
was seen in, when it was first and last seen, how often it recurred, and how often agents found it
helpful or harmful.

The rules are the schema's (``schema``, pydantic). Data that ``plainentry`` vouches for, which is all
our writers write and most of what people write, becomes these objects directly; anything else is
read by the schema, which coerces it or names the field at fault. Either way the objects are the same:
a property test holds them to the schema's own reading. Importing pydantic and building the models
costs about a quarter of a second, the largest part of ``expertise learn`` after reading the transcript.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

from expertise_kit.document.ids import entry_id, error_signature, normalise_path, normalise_text
from expertise_kit.document.plainentry import moment, valid_domain_data, valid_item
from expertise_kit.vocab import FAILURES, FILES, SESSION_SOURCES, section, section_names

__all__ = [
    "Provenance",
    "TextEntry",
    "FileEntry",
    "FailureEntry",
    "DomainData",
    "Item",
    "domain_data",
    "parse_item",
    "item_id",
    "item_text",
    "is_learned",
    "item_value",
    "item_last_seen",
    "item_record",
    "SCHEMA_FILE_NAME",
    "json_schema",
]

SCHEMA_FILE_NAME = "expertise.schema.json"

_MOMENTS = ("first_seen", "last_seen", "last_feedback")


class Provenance:
    """Fields in the schema's order, then the keys it does not know (kept, written back, never refused)."""

    FIELDS: dict[str, Any] = {
        "source": "manual",
        "sessions": list,
        "first_seen": None,
        "last_seen": None,
        "recurrence": 1,
        "helpful": 0,
        "harmful": 0,
        "ended_well": 0,
        "stale": False,
        "last_feedback": None,
    }

    source: str
    sessions: list[str | int]
    first_seen: datetime | None
    last_seen: datetime | None
    recurrence: int
    helpful: int
    harmful: int
    ended_well: int
    stale: bool
    last_feedback: datetime | None

    def __init__(self, /, **values: Any) -> None:
        """From values already valid and in their final types (``parse_item`` makes sure of that)."""
        for key, default in self.FIELDS.items():
            value = values.pop(key, default)
            setattr(self, key, [] if value is list else value)
        self.extra: dict[str, Any] = values

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={getattr(self, key)!r}" for key in self.FIELDS)
        return f"{type(self).__name__}({shown}, extra={self.extra!r})"

    def as_json(self) -> dict[str, Any]:
        """Every field (times as ISO text, UTC as ``Z``), then the unknown keys: the schema's JSON dump."""
        record = {key: getattr(self, key) for key in self.FIELDS}
        for key in _MOMENTS:
            if record[key] is not None:
                record[key] = json_moment(record[key])
        record["sessions"] = list(record["sessions"])
        record.update({key: _jsonable(value) for key, value in self.extra.items()})
        return record


class TextEntry(Provenance):
    FIELDS = {**Provenance.FIELDS, "text": ""}
    text: str


class FileEntry(Provenance):
    FIELDS = {**Provenance.FIELDS, "path": ""}
    path: str


class FailureEntry(Provenance):
    FIELDS = {**Provenance.FIELDS, "issue": "", "error": "", "solution": None}
    issue: str
    error: str
    solution: str | None


Item = str | TextEntry | FileEntry | FailureEntry

_CLASSES: dict[str, type[TextEntry] | type[FileEntry] | type[FailureEntry]] = {FILES: FileEntry, FAILURES: FailureEntry}


def json_moment(value: datetime) -> str:
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _jsonable(value: Any) -> Any:
    """A key the schema does not know, as its JSON dump gives it: times and dates as ISO text, a
    non-finite number (`.inf`, `.nan`) as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime):
        return json_moment(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value


def _plain_item(kind: str, raw: Any) -> Item:
    """``raw``, which ``valid_item`` vouched for, in the types the schema gives."""
    if type(raw) is str:
        return raw
    values = dict(raw)
    values["sessions"] = list(values.get("sessions") or [])
    for key in _MOMENTS:
        if values.get(key) is not None:
            values[key] = moment(values[key])
    if kind == FAILURES:
        for key in ("issue", "error"):
            if values.get(key) is None:
                values[key] = ""
    return _CLASSES.get(kind, TextEntry)(**values)


def _from_schema(kind: str, model: Any) -> Item:
    """An item of a section of ``kind`` the schema read (a string or one of its models), as the plain object."""
    return model if isinstance(model, str) else _CLASSES.get(kind, TextEntry)(**model.model_dump())


def parse_item(section_name: str, raw: Any) -> Item:
    """Validate one raw list item of ``section_name``; raises pydantic's ValidationError (a ValueError)."""
    kind = section(section_name).kind
    if valid_item(section_name, raw):
        return _plain_item(kind, raw)
    return item_by_schema(section_name, raw)


def item_by_schema(section_name: str, raw: Any) -> Item:
    """``parse_item`` by the schema alone, whatever ``raw`` is."""
    from expertise_kit.document.schema import validate_item

    return _from_schema(section(section_name).kind, validate_item(section_name, raw))


class DomainData:
    """One validated domain file: ``domain``, ``overview``, ``last_validated``, one list per section
    (``items``), and the top-level keys the schema does not know, in ``extra``."""

    def __init__(
        self,
        domain: str,
        overview: str,
        last_validated: datetime | None,
        sections: dict[str, list[Item]],
        extra: dict[str, Any],
    ) -> None:
        self.domain, self.overview, self.last_validated = domain, overview, last_validated
        self.sections = sections
        self.extra = extra

    def items(self, section: str) -> list[Item]:
        """The entries of ``section``, in file order."""
        found: list[Item] = self.sections.get(section, [])
        return found

    def entries(self) -> Iterator[tuple[str, int, Item]]:
        """Every entry with its section and place in it, sections in the vocabulary's order."""
        for name, items in self.sections.items():
            for index, item in enumerate(items):
                yield name, index, item

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]

    def as_json(self) -> dict[str, Any]:
        """The data as JSON-ready plain values, which ``domain_data`` reads back to the same object."""
        record: dict[str, Any] = {"domain": self.domain, "overview": self.overview}
        if self.last_validated is not None:
            record["last_validated"] = json_moment(self.last_validated)
        for name, items in self.sections.items():
            record[name] = [item if isinstance(item, str) else item.as_json() for item in items]
        record.update({key: _jsonable(value) for key, value in self.extra.items()})
        return record


_BASE_KEYS = ("domain", "overview", "last_validated")


def domain_data(plain: Any, domain: str) -> DomainData:
    """``plain`` (a file's data) as a ``DomainData``; raises pydantic's ValidationError where the schema
    refuses it. A file for another domain is read whole: the caller says so, with its line."""
    if valid_domain_data(plain, domain):
        sections = {
            name: [_plain_item(section(name).kind, raw) for raw in plain.get(name) or []] for name in section_names()
        }
        validated = plain.get("last_validated")
        return DomainData(
            plain["domain"],
            plain.get("overview") or "",
            None if validated is None else moment(validated),
            sections,
            {key: value for key, value in plain.items() if key not in _BASE_KEYS and key not in sections},
        )
    return domain_data_by_schema(plain)


def domain_data_by_schema(plain: Any) -> DomainData:
    """``domain_data`` by the schema alone, whatever ``plain`` is."""
    from expertise_kit.document.schema import DomainFile

    model = DomainFile.model_validate(plain)
    return DomainData(
        model.domain,
        model.overview,
        model.last_validated,
        {name: [_from_schema(section(name).kind, item) for item in getattr(model, name)] for name in section_names()},
        dict(model.model_extra or {}),
    )


def json_schema() -> dict[str, Any]:
    from expertise_kit.document.schema import json_schema as of_schema

    return of_schema()


def item_text(item: Item) -> str:
    """The one line a human would call the entry."""
    if isinstance(item, str):
        return item
    if isinstance(item, TextEntry):
        return item.text
    if isinstance(item, FileEntry):
        return item.path
    assert isinstance(item, FailureEntry)
    head = item.issue or item.error
    return head if not item.solution else f"{head} -> {item.solution}"


def item_id(section_name: str, item: Item) -> str:
    kind = section(section_name).kind
    if kind == FILES:
        return entry_id("file", normalise_path(item_text(item)))
    if isinstance(item, FailureEntry):
        identity = error_signature(item.error) if item.error.strip() else normalise_text(item.issue)
        return entry_id("failure", identity)
    return entry_id("text", normalise_text(item_text(item)))


def is_learned(item: Item) -> bool:
    """Whether a session produced the entry, parsed from its transcript or written by its agent: such
    entries count recurrences and are pruned before hand-written ones."""
    return not isinstance(item, str) and item.source in SESSION_SOURCES


def item_value(item: Item) -> int:
    """What an entry has earned: recurrences plus net feedback. Low value is pruned first."""
    if isinstance(item, str):
        return 1
    return item.recurrence + item.helpful - item.harmful + item.ended_well // 10


def item_last_seen(item: Item) -> datetime | None:
    if isinstance(item, str):
        return None
    return item.last_seen or item.first_seen


_PLAIN_KEY = {FILES: "path", FAILURES: "issue"}


def item_record(section_name: str, item: Item) -> dict[str, Any]:
    """One entry as plain data: its id and section, then every field (plain strings become hand-written)."""
    record: dict[str, Any] = {"id": item_id(section_name, item), "section": section_name}
    if isinstance(item, str):
        record.update({_PLAIN_KEY.get(section(section_name).kind, "text"): item, "source": "manual"})
    else:
        record.update(item.as_json())
        if isinstance(item, FailureEntry) and not item.solution:
            record["solution"] = None
    return record
