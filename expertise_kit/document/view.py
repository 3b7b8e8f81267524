"""A read-only view of a domain file (its entries, line count and where each top-level key starts),
remembered by the SHA-256 of its text.

Parsing is the dear part of reading a file: ruamel's pure-Python parser takes about 0.9 s for a file
at the 1,000-line cap, and no reader that only counts or lists entries needs the round-trip tree. So
the validated entries are kept as JSON beside the render cache, under the digest of the exact text
they came from; the same text always parses to the same entries, so a hit costs a hash, a JSON load
and a plain check of the entries, and any edit, by us or by hand, is a miss that
parses the file again with every refusal of ``load_domain_file``. A file that can't be read is never
remembered. Writers keep using ``DomainDoc``; a view can't be written back.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expertise_kit import __version__
from expertise_kit.document.atomic import write_atomic
from expertise_kit.document.domainfile import parse_domain_text
from expertise_kit.document.entries import DomainData, Item, domain_data
from expertise_kit.document.yamlio import read_text_file
from expertise_kit.errors import UserError
from expertise_kit.fast.cache import read_regular

__all__ = ["DomainView", "read_view", "VIEW_VERSION"]

VIEW_VERSION = 2  # bump when what is kept changes; the package version is part of the key as well
_MAX_VIEW_BYTES = 8 << 20


@dataclass
class DomainView:
    name: str
    path: Path
    model: DomainData
    line_count: int
    key_lines: dict[str, int]  # top-level key -> its 0-based line, in file order

    def entries(self) -> Iterator[tuple[str, int, Item]]:
        return self.model.entries()

    @property
    def entry_count(self) -> int:
        return sum(1 for _ in self.entries())


def _key(text: str) -> str:
    return f"{VIEW_VERSION}:{__version__}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


def _remembered(place: str, key: str, domain: str, path: Path) -> DomainView | None:
    raw = read_regular(place, _MAX_VIEW_BYTES + 1)
    if not raw or len(raw) > _MAX_VIEW_BYTES:
        return None
    try:
        data: Any = orjson.loads(raw)
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        model = domain_data(data["model"], domain)
        keys = {str(k): int(v) for k, v in data["keys"].items()}
        return DomainView(domain, path, model, int(data["lines"]), keys)
    except Exception:  # a torn or foreign cache file is a miss, never an error
        return None


def read_view(path: Path, domain: str, cache_dir: str | None) -> DomainView:
    """The view of ``domain``'s file at ``path``; ``cache_dir`` None reads without remembering.

    Raises ``UserError`` exactly as ``load_domain_file`` does for a file that can't be read.
    """
    text = read_text_file(path)
    key = _key(text)
    place = os.path.join(cache_dir, "views", f"{domain}.json") if cache_dir else None
    if place is not None:
        found = _remembered(place, key, domain, path)
        if found is not None:
            return found
    doc = parse_domain_text(text, path, domain)
    tree = doc.loaded.tree
    keys = {str(k): int(tree.lc.key(k)[0]) for k in tree}
    view = DomainView(domain, path, doc.model, doc.line_count, keys)
    if place is not None:
        record = {
            "key": key,
            "lines": view.line_count,
            "keys": keys,
            "model": doc.model.as_json(),
        }
        try:
            os.makedirs(os.path.dirname(place), exist_ok=True)
            write_atomic(Path(place), orjson.dumps(record))
        except (OSError, UserError, TypeError):
            pass  # remembering is best effort: the next reader parses again
    return view
