"""Building and updating the render cache from parsed domain files (the write path's side)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .atomic import write_atomic
from .cache import CACHE_VERSION, cache_path, signature, signatures_for
from .classify import tokens
from .config import Config
from .errors import UserError
from .models import FailureEntry, FileEntry, TextEntry, is_learned, item_id, item_last_seen
from .names import ENTRY_SECTIONS
from .store import Store, parse_item

__all__ = ["domain_payload", "update_cache", "rebuild_cache"]


def _entry(section: str, raw: Any) -> dict[str, Any] | None:
    try:
        item = parse_item(section, raw)
    except ValidationError:
        return None
    record: dict[str, Any] = {"id": item_id(section, item), "section": section, "learned": is_learned(item)}
    if isinstance(item, str):
        record["path" if section == "core_files" else "issue" if section == "learned_from_failures" else "text"] = item
    elif isinstance(item, FailureEntry):
        record.update(issue=item.issue, error=item.error, solution=item.solution or "", stale=item.stale)
    elif isinstance(item, FileEntry):
        record["path"] = item.path
    elif isinstance(item, TextEntry):
        record["text"] = item.text
    if not isinstance(item, str):
        record.update(recurrence=item.recurrence, helpful=item.helpful, harmful=item.harmful)
    seen = item_last_seen(item)
    record["last_seen"] = seen.isoformat() if seen else ""
    words = " ".join(str(record.get(k, "")) for k in ("text", "issue", "error", "solution", "path"))
    record["tokens"] = sorted(set(tokens(words)))
    return record


def domain_payload(plain: dict[str, Any]) -> dict[str, Any]:
    entries = []
    for section in ENTRY_SECTIONS:
        for raw in plain.get(section) or []:
            entry = _entry(section, raw)
            if entry is not None:
                entries.append(entry)
    overview = plain.get("overview")
    return {"overview": overview if isinstance(overview, str) else "", "entries": entries}


def _config_payload(config: Config) -> dict[str, Any]:
    return {
        "line_cap": config.line_cap,
        "domains": {name: {"keywords": list(r.keywords), "paths": list(r.paths)} for name, r in config.domains.items()},
    }


def _write(expertise_dir: Path, data: dict[str, Any]) -> None:
    path = Path(cache_path(expertise_dir))
    path.parent.mkdir(exist_ok=True)
    write_atomic(path, json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8"))


def update_cache(store: Store, changed: dict[str, dict[str, Any]]) -> None:
    """After a write: refresh the changed domains. Call inside the write lock, after the files are written."""
    directory = store.project.expertise_dir
    try:
        data = json.loads(Path(cache_path(directory)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if data.get("version") != CACHE_VERSION or data.get("config") != _config_payload(store.config):
        rebuild_cache(store)
        return
    for name, plain in changed.items():
        data["domains"][name] = domain_payload(plain)
        data["files"][f"{name}.yaml"] = signature(directory / f"{name}.yaml")
    _write(directory, data)


def rebuild_cache(store: Store) -> dict[str, Any]:
    """Parse every domain file and write the cache from scratch. A file that fails is left out."""
    directory = store.project.expertise_dir
    names = list(store.config.domain_names)
    before = signatures_for(directory, names)
    domains: dict[str, Any] = {}
    for name in names:
        try:
            domains[name] = domain_payload(store.load(name).loaded.plain)
        except Exception as exc:  # noqa: BLE001 - a broken file must not take the others' expertise away
            message = exc.one_line() if isinstance(exc, UserError) else f"{name}.yaml: {exc}"
            domains[name] = {"overview": "", "entries": [], "error": message}
    data = {"version": CACHE_VERSION, "config": _config_payload(store.config), "files": before, "domains": domains}
    if signatures_for(directory, names) == before:  # nothing changed under us while we read
        _write(directory, data)
    return data
