"""What changed between two versions of a domain file, in entries rather than lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expertise_kit.document.entries import item_id, item_text, parse_item
from expertise_kit.document.yamlio import parse_yaml_text
from expertise_kit.vocab import section_names

__all__ = ["EntryChange", "FileDiff", "diff_versions", "entry_map", "parse_version", "summarise"]


@dataclass(frozen=True)
class EntryChange:
    kind: str  # "added", "removed" or "changed"
    section: str
    id: str
    before: Any = None
    after: Any = None

    @property
    def text(self) -> str:
        raw = self.after if self.after is not None else self.before
        try:
            return item_text(parse_item(self.section, raw))
        except ValueError:
            return str(raw)


@dataclass
class FileDiff:
    path: str
    changes: list[EntryChange] = field(default_factory=list)
    keys: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # other top-level keys: (before, after)
    created: bool = False
    deleted: bool = False

    @property
    def empty(self) -> bool:
        return not (self.changes or self.keys or self.created or self.deleted)


def parse_version(text: str | None, label: str) -> dict[str, Any] | None:
    """Plain data of one version of a file; None when it did not exist."""
    if text is None:
        return None
    return parse_yaml_text(text, Path(label)).plain


def entry_map(plain: dict[str, Any] | None) -> dict[tuple[str, str], Any]:
    """``(section, id) -> raw item``, in file order. Items that don't validate get a positional key."""
    result: dict[tuple[str, str], Any] = {}
    for section in section_names():
        items = (plain or {}).get(section)
        if not isinstance(items, list):
            continue  # `patterns: 5` in an old version: no entries to compare, and no crash
        for index, raw in enumerate(items):
            try:
                key = item_id(section, parse_item(section, raw))
            except ValueError:
                key = f"invalid-{index}"
            result[(section, key)] = raw
    return result


def diff_versions(path: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> FileDiff:
    diff = FileDiff(path, created=before is None and after is not None, deleted=after is None and before is not None)
    old, new = entry_map(before), entry_map(after)
    for (section, entry), raw in new.items():
        if (section, entry) not in old:
            diff.changes.append(EntryChange("added", section, entry, None, raw))
        elif old[(section, entry)] != raw:
            diff.changes.append(EntryChange("changed", section, entry, old[(section, entry)], raw))
    for (section, entry), raw in old.items():
        if (section, entry) not in new:
            diff.changes.append(EntryChange("removed", section, entry, raw, None))
    scalars_before = {k: v for k, v in (before or {}).items() if k not in section_names()}
    scalars_after = {k: v for k, v in (after or {}).items() if k not in section_names()}
    for key in dict.fromkeys([*scalars_before, *scalars_after]):
        if scalars_before.get(key) != scalars_after.get(key) and not (diff.created or diff.deleted):
            diff.keys[key] = (scalars_before.get(key), scalars_after.get(key))
    return diff


def _field_changes(before: Any, after: Any) -> str:
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return f"{before!r} -> {after!r}"
    parts = []
    for key in dict.fromkeys([*before, *after]):
        if before.get(key) != after.get(key):
            parts.append(f"{key}: {before.get(key)!r} -> {after.get(key)!r}")
    return "; ".join(parts)


def summarise(change: EntryChange) -> str:
    """One line for humans: ``+ id section: text`` / ``~ id section: field: a -> b``."""
    sign = {"added": "+", "removed": "-", "changed": "~"}[change.kind]
    line = f"{sign} {change.id} {change.section}: {' '.join(change.text.split())[:100]}"
    if change.kind == "changed":
        line += f"  ({_field_changes(change.before, change.after)})"
    return line
