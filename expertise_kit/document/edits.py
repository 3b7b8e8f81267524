"""The edits a write makes to a domain file, and the plain data they lead to. Standard library only:
the merge driver's quick path plans and checks edits without ruamel (``splice`` applies them to text)."""

from __future__ import annotations

from expertise_kit.lightdata import dataclass

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Append", "Remove", "Replace", "SetKey", "DeleteKey", "Edit", "expected_data"]


@dataclass(frozen=True)
class Append:
    section: str
    item: Any


@dataclass(frozen=True)
class Remove:
    section: str
    index: int


@dataclass(frozen=True)
class Replace:
    section: str
    index: int
    item: Any


@dataclass(frozen=True)
class SetKey:
    """Set a top-level key to a scalar value (``overview``, ``last_validated``); adds it if missing."""

    key: str
    value: Any


@dataclass(frozen=True)
class DeleteKey:
    key: str


Edit = Append | Remove | Replace | SetKey | DeleteKey


def _copied(value: Any) -> Any:
    """A deep copy of plain data (``copy.deepcopy`` costs the merge driver its import and ten times the time)."""
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def expected_data(plain: dict[str, Any], edits: list[Edit]) -> dict[str, Any]:
    """The plain data ``plain`` holds after ``edits`` (what a splice's text is verified against)."""
    result: dict[str, Any] = _copied(plain)
    removed: dict[str, set[int]] = {}
    for edit in edits:
        if isinstance(edit, Replace):
            result[edit.section][edit.index] = _copied(edit.item)
        elif isinstance(edit, Remove):
            removed.setdefault(edit.section, set()).add(edit.index)
    for name, indexes in removed.items():
        result[name] = [item for index, item in enumerate(result[name]) if index not in indexes] or None
    for edit in edits:
        if isinstance(edit, Append):
            if not isinstance(result.get(edit.section), list):
                result[edit.section] = []
            result[edit.section].append(_copied(edit.item))
        elif isinstance(edit, SetKey):
            result[edit.key] = _copied(edit.value)
        elif isinstance(edit, DeleteKey):
            result.pop(edit.key, None)
    return result
