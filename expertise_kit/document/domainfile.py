"""One domain file, parsed and validated: its exact text, its round-trip tree, and its entries."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from expertise_kit.document.cap import count_lines
from expertise_kit.document.entries import DomainData, Item, domain_data, item_id
from expertise_kit.document.schema_errors import raise_first_error
from expertise_kit.document.yamlio import LoadedYaml, load_yaml_file, parse_yaml_text
from expertise_kit.errors import UserError

__all__ = ["DomainDoc", "load_domain_file", "parse_domain_text"]


@dataclass
class DomainDoc:
    name: str
    path: Path
    loaded: LoadedYaml
    model: DomainData

    def entries(self) -> Iterator[tuple[str, int, Item]]:
        return self.model.entries()

    def find(self, entry: str) -> tuple[str, int, Item] | None:
        for section, index, item in self.entries():
            if item_id(section, item) == entry:
                return section, index, item
        return None

    def ids(self) -> set[str]:
        return {item_id(section, item) for section, _, item in self.entries()}

    @property
    def entry_count(self) -> int:
        return sum(1 for _ in self.entries())

    @property
    def line_count(self) -> int:
        return count_lines(self.loaded.text)


def _validated(loaded: LoadedYaml, domain: str) -> DomainDoc:
    try:
        model = domain_data(loaded.plain, domain)
    except ValueError as exc:  # pydantic's ValidationError
        raise_first_error(exc, loaded)
    if model.domain != domain:
        raise UserError(
            f"says `domain: {model.domain}` but is the file for {domain!r}",
            path=loaded.path,
            line=(loaded.tree.lc.key("domain")[0] + 1),
            hint=f"set `domain: {domain}`",
        )
    return DomainDoc(domain, loaded.path, loaded, model)


def load_domain_file(path: Path, domain: str) -> DomainDoc:
    """Read, parse and validate ``path`` as the file of ``domain``; any problem is one UserError."""
    return _validated(load_yaml_file(path), domain)


def parse_domain_text(text: str, path: Path, domain: str) -> DomainDoc:
    """The same, for text that is not (yet) on disk: a version from git, a planned write."""
    return _validated(parse_yaml_text(text, path), domain)
