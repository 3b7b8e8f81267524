"""The store: reading and changing domain files safely.

Every change runs read → modify → write inside the write lock, so concurrent writers never lose each
other's updates; the write is atomic; a file that fails to parse or validate is refused, never
overwritten.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .atomic import ensure_writable, remove_stale_temps, write_atomic, write_lock
from .cap import CapResult, PrunedEntry, fit_to_cap
from .config import Config, load_config
from .errors import UserError
from .ids import normalise_path
from .models import DomainFile, FailureEntry, FileItem, Item, TextItem, item_id
from .names import ENTRY_SECTIONS, validate_domain_name
from .project import Project
from .splice import Append, Edit
from .validation import raise_first_error
from .yamlio import LoadedYaml, load_yaml_file

__all__ = ["Store", "DomainDoc", "WriteResult", "MAX_TEXT_CHARS", "manual_item", "parse_item"]

MAX_TEXT_CHARS = 10_000  # the feedback-loop seed's per-payload cap

_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    "core_files": TypeAdapter(FileItem),
    "learned_from_failures": TypeAdapter(FailureEntry),
    **{
        name: TypeAdapter(TextItem)
        for name in ("patterns", "best_practices", "effective_patterns", "successful_techniques")
    },
}


def parse_item(section: str, raw: Any) -> Item:
    return _ADAPTERS[section].validate_python(raw)  # type: ignore[no-any-return]


@dataclass
class DomainDoc:
    name: str
    path: Path
    loaded: LoadedYaml
    model: DomainFile

    def entries(self) -> Iterator[tuple[str, int, Item]]:
        for section in ENTRY_SECTIONS:
            for index, item in enumerate(getattr(self.model, section)):
                yield section, index, item

    def find(self, entry: str) -> tuple[str, int, Item] | None:
        for section, index, item in self.entries():
            if item_id(section, item) == entry:
                return section, index, item
        return None

    @property
    def entry_count(self) -> int:
        return sum(1 for _ in self.entries())

    @property
    def line_count(self) -> int:
        text = self.loaded.text
        return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


@dataclass
class WriteResult:
    domain: str
    path: Path
    added: list[str] = field(default_factory=list)  # entry ids
    duplicates: list[str] = field(default_factory=list)
    pruned: list[PrunedEntry] = field(default_factory=list)
    lines: int = 0
    over_by: int = 0
    changed: bool = False


class Store:
    def __init__(self, project: Project, config: Config | None = None) -> None:
        self.project = project
        self.config = config if config is not None else load_config(project.expertise_dir)

    # -- reading ---------------------------------------------------------------------------------

    def path_for(self, domain: str) -> Path:
        validate_domain_name(domain)
        if domain not in self.config.domains:
            raise UserError(
                f"unknown domain {domain!r}",
                hint=f"use one of {', '.join(self.config.domain_names)}, or add it to .expertise/config.yaml",
            )
        path = self.project.expertise_dir / f"{domain}.yaml"
        if path.is_symlink():
            target = Path(os.path.realpath(path))
            home = Path(os.path.realpath(self.project.expertise_dir))
            if not target.is_relative_to(home):
                raise UserError(
                    f"is a symlink to {target}, outside .expertise/",
                    path=path,
                    hint="replace the link with a regular file",
                )
            return target
        return path

    def load(self, domain: str) -> DomainDoc:
        path = self.path_for(domain)
        loaded = load_yaml_file(path)
        try:
            model = DomainFile.model_validate(loaded.plain)
        except ValidationError as exc:
            raise_first_error(exc, loaded)
        if model.domain != domain:
            raise UserError(
                f"says `domain: {model.domain}` but is the file for {domain!r}",
                path=path,
                line=(loaded.tree.lc.key("domain")[0] + 1),
                hint=f"set `domain: {domain}`",
            )
        return DomainDoc(domain, path, loaded, model)

    # -- writing ---------------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[None]:
        ensure_writable(self.project.expertise_dir)
        with write_lock(self.project.lock_path):
            remove_stale_temps(self.project.expertise_dir)
            yield

    def add_items(self, domain: str, items: list[tuple[str, Any]]) -> WriteResult:
        """Append ``(section, raw item)`` pairs, skipping any whose id is already in the file."""
        with self.locked():
            doc = self.load(domain)
            result = WriteResult(domain, doc.path)
            seen = {item_id(section, item) for section, _, item in doc.entries()}
            edits: list[Edit] = []
            for section, raw in items:
                parsed = parse_item(section, raw)
                new_id = item_id(section, parsed)
                if new_id in seen:
                    result.duplicates.append(new_id)
                    continue
                seen.add(new_id)
                edits.append(Append(section, raw))
                result.added.append(new_id)
            if edits:
                capped = fit_to_cap(doc.loaded, doc.model, edits, self.config.line_cap, parse_item)
                self._commit_text(doc, capped, result)
            else:
                result.lines = doc.line_count
            return result

    def _commit_text(self, doc: DomainDoc, capped: CapResult, result: WriteResult) -> None:
        result.pruned = capped.pruned
        result.lines = capped.lines
        result.over_by = capped.over_by
        if capped.text != doc.loaded.text:
            write_atomic(doc.path, capped.text.encode("utf-8"))
            result.changed = True


def manual_item(section: str, text: str, *, error: str | None = None, solution: str | None = None) -> Any:
    """The raw YAML value for a hand-written entry, checked for size and control characters."""
    cleaned = text.strip()
    for label, value in (("text", cleaned), ("error", error or ""), ("solution", solution or "")):
        if len(value) > MAX_TEXT_CHARS:
            raise UserError(
                f"{label} is {len(value):,} characters, over the {MAX_TEXT_CHARS:,} limit", hint="shorten it"
            )
        if any(ord(ch) < 32 and ch not in "\n\t" for ch in value):
            raise UserError(f"{label} contains control characters", hint="remove them")
    if not cleaned:
        raise UserError("entry text is empty", hint="say what the entry should teach")
    if section == "core_files":
        return normalise_path(cleaned)
    if section == "learned_from_failures":
        entry: dict[str, Any] = {"issue": cleaned}
        if error:
            entry["error"] = error.strip()
        if solution:
            entry["solution"] = solution.strip()
        return entry
    if section not in ENTRY_SECTIONS:
        raise UserError(f"unknown section {section!r}", hint="use one of " + ", ".join(ENTRY_SECTIONS))
    return cleaned
