"""The domain file schema (pydantic v2): what ``expertise schema`` prints, and the full reading of a file or
an item that ``plainentry`` can't vouch for, whose errors name the field at fault.

A list item may be a plain string or a mapping. A plain string is hand-written; a mapping says where it
came from with ``source`` (``manual`` unless it says ``learned``, or ``agent`` when the agent wrote it
itself at a session's end, docs/reflect.md) and, when learned, carries its
provenance: the sessions it was seen in, when it was first and last seen, how often it recurred, and
how often agents found it helpful or harmful.

Importing pydantic and building these models costs a quarter of a second, more than anything else
``expertise learn`` does besides reading the transcript; so the entries everyone else handles are the
plain objects of ``entries``, and this module is imported only when a file needs it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    create_model,
)

from expertise_kit.vocab import FAILURES, FILES, SECTIONS, TEXT, section

__all__ = ["DomainFile", "DomainBase", "TextEntry", "FileEntry", "FailureEntry", "validate_item", "json_schema"]

Source = Literal["learned", "manual", "agent"]
SessionId = str | int
NonEmpty = Annotated[str, Field(min_length=1)]


def _none_is_empty(value: Any) -> Any:
    # `patterns:` with nothing under it is YAML null; a human means "no patterns yet".
    return [] if value is None else value


def _none_is_blank(value: Any) -> Any:
    return "" if value is None else value


class _Open(BaseModel):
    # Unknown keys are the user's business: keep them, round-trip them, never reject them.
    model_config = ConfigDict(extra="allow", populate_by_name=True)


def _as_utc(value: datetime | None) -> datetime | None:
    # A hand-written `2026-11-02` has no zone; read it as UTC so it sorts against learned timestamps.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    if value is not None:
        try:
            # 9999-12-31T23:59-05:00 is a valid datetime whose UTC moment is past year 9999: comparing it
            # with another (pruning, ranking) would raise OverflowError far from the file.
            value.astimezone(timezone.utc)
        except OverflowError:
            raise ValueError("is out of range once converted to UTC") from None
    return value


Moment = Annotated[datetime | None, AfterValidator(_as_utc)]


class Provenance(_Open):
    source: Source = Field(
        "manual", description="'learned' when parsed from an agent session; 'agent' when the agent wrote it itself."
    )
    sessions: Annotated[
        list[SessionId], BeforeValidator(_none_is_empty, json_schema_input_type=list[SessionId] | None)
    ] = Field(default_factory=list, description="Sessions the entry was seen in, oldest first.")
    first_seen: Moment = None
    last_seen: Moment = None
    recurrence: int = Field(1, ge=1, description="How many times it was seen.")
    helpful: int = Field(0, ge=0, description="Feedback: times an agent found it helpful.")
    harmful: int = Field(0, ge=0, description="Feedback: times an agent found it harmful.")
    ended_well: int = Field(
        0, ge=0, description="Sessions it was shown in that ended well: a smaller credit, a tenth of a helpful."
    )
    stale: bool = Field(False, description="Set by validate when it mentions code that is gone.")
    last_feedback: Moment = Field(None, description="When `expertise feedback` last gave it a verdict.")


class TextEntry(Provenance):
    text: NonEmpty


class FileEntry(Provenance):
    path: NonEmpty


class FailureEntry(Provenance):
    issue: Annotated[str, BeforeValidator(_none_is_blank)] = Field("", description="What was being done.")
    error: Annotated[str, BeforeValidator(_none_is_blank)] = Field("", description="What went wrong.")
    solution: str | None = Field(None, description="What fixed it, when known.")


def _item_shape(value: Any) -> str:
    # A tagged union gives one precise error ("text: Field required") instead of one per member.
    return "mapping" if isinstance(value, (dict, BaseModel)) else "string"


TextItem = Annotated[
    Annotated[NonEmpty, Tag("string")] | Annotated[TextEntry, Tag("mapping")],
    Discriminator(_item_shape),
]
FileItem = Annotated[
    Annotated[NonEmpty, Tag("string")] | Annotated[FileEntry, Tag("mapping")],
    Discriminator(_item_shape),
]


# Lists may be written as YAML null (`patterns:` with nothing under it); the schema says so too.
TextList = Annotated[list[TextItem], BeforeValidator(_none_is_empty, json_schema_input_type=list[TextItem] | None)]
FileList = Annotated[list[FileItem], BeforeValidator(_none_is_empty, json_schema_input_type=list[FileItem] | None)]
FailureList = Annotated[
    list[FailureEntry], BeforeValidator(_none_is_empty, json_schema_input_type=list[FailureEntry] | None)
]


class DomainBase(_Open):
    """The keys every domain file has besides its sections."""

    model_config = ConfigDict(extra="allow", title="expertise_kit domain file")

    domain: NonEmpty
    overview: Annotated[str, BeforeValidator(_none_is_blank)] = ""
    last_validated: Moment = None


_LIST_TYPES: dict[str, Any] = {FILES: FileList, TEXT: TextList, FAILURES: FailureList}
_ITEM_TYPES: dict[str, Any] = {FILES: FileItem, TEXT: TextItem, FAILURES: FailureEntry}


def _domain_model() -> type[DomainBase]:
    """One ``.expertise/<domain>.yaml`` file: the base keys plus one list per row of ``vocab.SECTIONS``."""
    fields: dict[str, Any] = {
        s.name: (_LIST_TYPES[s.kind], Field(default_factory=list, description=f"{s.kind} entries"))
        for s in SECTIONS
    }
    return create_model("DomainFile", __base__=DomainBase, **fields)


DomainFile = _domain_model()

_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def validate_item(section_name: str, raw: Any) -> Any:
    """One raw list item of ``section_name``, validated: a string or one of the models above. Raises
    pydantic's ValidationError (a ValueError)."""
    kind = section(section_name).kind
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(_ITEM_TYPES[kind])
    return adapter.validate_python(raw)


def json_schema() -> dict[str, Any]:
    schema = DomainFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
