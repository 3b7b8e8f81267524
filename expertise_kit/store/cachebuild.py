"""Building and updating the render cache from parsed domain files (the write path's side)."""

from __future__ import annotations

import contextlib
import marshal
from array import array
from pathlib import Path
from typing import Any

from expertise_kit.config import Config
from expertise_kit.document.atomic import write_atomic
from expertise_kit.document.domainfile import load_domain_file
from expertise_kit.document.entries import is_learned, item_last_seen, item_record, parse_item
from expertise_kit.errors import UserError
from expertise_kit.fast.cache import (
    CACHE_VERSION,
    cache_path,
    domain_cache_path,
    domain_search_path,
    domain_top_path,
    read_index,
    signature,
)
from expertise_kit.fast.classify import keyword_stems, tokens
from expertise_kit.fast.render import prepare_entry, strip_controls
from expertise_kit.fast.retrieve import contender_positions, entry_weight
from expertise_kit.project import Project
from expertise_kit.vocab import FAILURES, section_names

__all__ = ["domain_payload", "update_cache", "rebuild_cache", "refresh_domains"]


def _entry(section: str, raw: Any) -> dict[str, Any] | None:
    try:
        item = parse_item(section, raw)
    except ValueError:
        return None
    record = item_record(section, item)
    record["learned"] = is_learned(item)
    seen = item_last_seen(item)
    record["last_seen"] = seen.isoformat() if seen else ""
    record["seen_epoch"] = int(seen.timestamp()) if seen else 0
    words = strip_controls(" ".join(str(record.get(k) or "") for k in ("text", "issue", "error", "solution", "path")))
    record["tokens"] = sorted(set(tokens(words)))
    return record


def domain_payload(plain: dict[str, Any]) -> dict[str, Any]:
    """A domain's overview, its entries ready to render, and postings (word -> entry positions)."""
    entries: list[dict[str, Any]] = []
    postings: dict[str, list[int]] = {}
    found = []
    for section in section_names():
        for raw in plain.get(section) or []:
            entry = _entry(section, raw)
            if entry is not None:
                prepared = prepare_entry(entry, len(entry["tokens"]))
                prepared["prog"] = _program(entry) if prepared["kind"] == FAILURES else ""
                prepared["fact"] = prepared["kind"] == FAILURES and _machine_fact(entry)
                found.append((prepared, entry["tokens"]))
    # In standing order, so the renderer reads only as far down the list as its budget reaches.
    found.sort(key=lambda pair: pair[0]["order"])
    for prepared, words in found:
        for word in words:
            postings.setdefault(word, []).append(len(entries))
        entries.append(prepared)
    overview = plain.get("overview")
    programs: dict[str, int] = {}
    for prepared in entries:
        if prepared["prog"]:
            programs[prepared["prog"]] = programs.get(prepared["prog"], 0) + int(prepared.get("rec") or 1)
    return {
        "overview": overview if isinstance(overview, str) else "",
        "entries": entries,
        "postings": postings,
        "programs": programs,  # failing program -> sightings of its failures: what fails most, by program
    }


def _program(entry: dict[str, Any]) -> str:
    """The program a failure entry's issue runs (`` `cd web && npm test` `` -> npm test), or ""."""
    from expertise_kit.learning.extract import span_programs  # not at the top: the merge driver never needs it

    return (span_programs(str(entry.get("issue") or "")) or [""])[0]


def _machine_fact(entry: dict[str, Any]) -> bool:
    from expertise_kit.learning.quality import machine_fact  # not at the top: the merge driver never needs it

    return machine_fact(str(entry.get("error") or ""))


def _config_payload(config: Config) -> dict[str, Any]:
    return {
        "line_cap": config.line_cap,
        "reflect": config.reflect,
        "domains": {
            name: {"keywords": list(r.keywords), "paths": list(r.paths), "stems": sorted(keyword_stems(r.keywords))}
            for name, r in config.domains.items()
        },
    }


def _dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, marshal.dumps(data))


def _write_domain(expertise_dir: Path, index: dict[str, Any], name: str, payload: dict[str, Any]) -> None:
    """A domain's cache file: its entries ready to render, and what ranking needs (postings, word counts,
    paths). The index keeps only what every prompt reads (overview, errors, signatures)."""
    entries = payload.get("entries", [])
    stamp = index["files"].get(f"{name}.yaml")
    keys = tuple(entries[0]) if entries else ()
    best = contender_positions(entries, payload.get("programs") or {})
    # Postings and word counts packed as machine ints (`Packed` reads them): a blob per word loads as one
    # copy, where a list of ints is an object per number.
    search = {
        "signature": stamp,
        "postings": {word: array("I", found).tobytes() for word, found in payload.get("postings", {}).items()},
        "lengths": array("I", [entry["n"] for entry in entries]).tobytes(),
        "paths": [[position, entry["path"]] for position, entry in enumerate(entries) if entry["path"]],
        "best": best,
        "weights": array("f", [entry_weight(entry) for entry in entries]).tobytes(),
    }
    # Three files, each vouched for by the domain file's signature: a prompt reads the ranking file of every
    # domain and the entries of the winners'; session start reads only the essentials' contenders.
    rows = [marshal.dumps(tuple(entry[key] for key in keys)) for entry in entries]
    top = {"signature": stamp, "keys": keys, **_packed_rows([rows[p] for p in best])}
    _dump(Path(domain_cache_path(expertise_dir, name)), {"signature": stamp, "keys": keys, **_packed_rows(rows)})
    _dump(Path(domain_search_path(expertise_dir, name)), search)
    _dump(Path(domain_top_path(expertise_dir, name)), top)
    index["domains"][name] = {k: v for k, v in payload.items() if k not in ("entries", "postings")}


def _with_shared(
    project: Project, config: Config, index: dict[str, Any], name: str, plain: dict[str, Any]
) -> dict[str, Any]:
    """The domain's payload as agents read it: the working tree's entries, plus what the shared layer adds
    (``versioning.shared.union_plain``), each marked ``shared`` (an export leaves those out: they are not
    this branch's). The index records which shared file went into it."""
    recorded = index.setdefault("shared", {})
    recorded[name] = ""
    if project.git is None or not config.shared_layer:
        return domain_payload(plain)
    from expertise_kit.versioning.shared import union_plain

    try:
        union, sha, added = union_plain(project, name, project.domain_path(name), plain)
    except Exception:  # noqa: BLE001 - the shared layer can't be read: the working tree alone still renders
        return domain_payload(plain)
    recorded[name] = sha
    payload = domain_payload(union)
    if added:
        theirs = set(added)
        for entry in payload["entries"]:
            entry["shared"] = entry["id"] in theirs
    return payload


def _working_plain(project: Project, config: Config, name: str) -> dict[str, Any]:
    """A domain file's data: from the memo of texts parsed here (the same text always holds the same
    data), else read in plain Python where the file is surely valid in our writers' layout
    (``quickmerge.valid_plain``), else parsed. So when only the shared layer changed (another worktree
    learned), this worktree's cache is rebuilt without parsing its own file with ruamel again."""
    path = project.domain_path(name)
    if project.git is None or not config.shared_layer:
        return load_domain_file(path, name).loaded.plain
    from expertise_kit.document.domainfile import parse_domain_text
    from expertise_kit.document.yamlio import read_text_file
    from expertise_kit.versioning.memo import remember_plain, remembered_plain
    from expertise_kit.versioning.quickmerge import valid_plain

    text = read_text_file(path)
    plain = remembered_plain(project.git, text, name) or valid_plain(text, name)
    if plain is None:
        plain = parse_domain_text(text, path, name).loaded.plain
        remember_plain(project.git, text, name, plain)
    return plain


def _shared_blob(project: Project, config: Config, name: str) -> str:
    """The blob of ``name``'s file in the shared layer now, or ""."""
    if project.git is None or not config.shared_layer:
        return ""
    from expertise_kit.versioning.shared import current_files, tree_path

    try:
        return current_files(project.git)[1].get(tree_path(project, project.domain_path(name)), "")
    except Exception:  # noqa: BLE001 - unreadable: as if none
        return ""


def _stamp_shared(project: Project, config: Config, index: dict[str, Any]) -> None:
    """Record the shared layer the index speaks for, so the hook tells it changed with two small reads:
    the ref's commit when every domain was built from it, else None (the hook compares domain by domain)."""
    index["shared_prefix"] = None
    index["shared_commit"] = None
    index["shared_packed"] = None
    if project.git is None or not config.shared_layer:
        return
    from expertise_kit.fast.cache import packed_shared_ref

    packed = str(project.git.common_dir / "packed-refs")
    index["shared_packed"] = [signature(packed), packed_shared_ref(packed)]
    from expertise_kit.versioning.shared import current_files, tree_path

    try:
        commit, files = current_files(project.git)
        prefix = tree_path(project, project.expertise_dir) + "/"
    except Exception:  # noqa: BLE001 - unreadable: the hook rebuilds when it can tell more
        return
    index["shared_prefix"] = prefix
    recorded = index.get("shared") or {}
    if all(recorded.get(name, "") == files.get(f"{prefix}{name}.yaml", "") for name in config.domain_names):
        index["shared_commit"] = commit or ""


def _packed_rows(rows: list[bytes]) -> dict[str, bytes]:
    """Rows as one blob and where each ends (``fast.cache.Rows`` slices them): loading a domain's file then
    makes two objects, not one per entry."""
    ends, end = array("I"), 0
    for row in rows:
        end += len(row)
        ends.append(end)
    return {"blob": b"".join(rows), "ends": ends.tobytes()}


def update_cache(project: Project, config: Config, changed: dict[str, dict[str, Any]]) -> None:
    """After a write: refresh the changed domains. Call inside the write lock, after the files are written."""
    directory = project.expertise_dir
    index = read_index(directory)
    if index is None or index.get("config") != _config_payload(config):
        rebuild_cache(project, config)
        return
    for name, plain in changed.items():
        index["files"][f"{name}.yaml"] = signature(directory / f"{name}.yaml")
        _write_domain(directory, index, name, _with_shared(project, config, index, name, plain))
    _stamp_shared(project, config, index)
    _dump(Path(cache_path(directory)), index)


def refresh_domains(
    project: Project, config: Config, names: list[str], *, from_scratch: bool = False
) -> dict[str, Any]:
    """Parse the domain files ``names`` into the cache (per-domain files first, then the index that vouches
    for them) and return the index, with entries for those domains. The index keeps what it recorded for
    the other domains when it was built from the same config, so the pre-task hook parses only what a
    prompt needs. A file that fails is recorded with its error; one that changes while it is read is
    left stale. Writing is best effort: a cache that can't be written is rebuilt next time."""
    directory = project.expertise_dir
    recorded = _config_payload(config)
    index = None if from_scratch else read_index(directory)
    if index is None or index.get("config") != recorded:
        index = {"version": CACHE_VERSION, "config": recorded, "files": {}, "domains": {}}
    index["files"]["config.yaml"] = signature(directory / "config.yaml")
    built: dict[str, dict[str, Any]] = {}
    for name in names:
        before = signature(directory / f"{name}.yaml")
        try:
            plain = _working_plain(project, config, name)
            payload = _with_shared(project, config, index, name, plain)
        except Exception as exc:  # noqa: BLE001 - a broken file must not take the others' expertise away
            message = exc.one_line() if isinstance(exc, UserError) else f"{name}.yaml: {exc}"
            payload = {"overview": "", "entries": [], "postings": {}, "error": message}
            # Recorded as built against the shared layer as it is, so a broken file is not rebuilt on
            # every prompt because the shared layer moved; the file's own change rebuilds it.
            index.setdefault("shared", {})[name] = _shared_blob(project, config, name)
        if signature(directory / f"{name}.yaml") != before:
            continue  # changed under us while we read: stays stale, so the next reader builds it again
        index["files"][f"{name}.yaml"] = before
        built[name] = payload
        with contextlib.suppress(OSError, UserError):
            _write_domain(directory, index, name, payload)
    _stamp_shared(project, config, index)
    with contextlib.suppress(OSError, UserError):
        _dump(Path(cache_path(directory)), index)
    return {**index, "domains": {**index["domains"], **built}}


def rebuild_cache(project: Project, config: Config) -> dict[str, Any]:
    """Parse every domain file and write the cache from scratch. A file that fails is left out."""
    return refresh_domains(project, config, list(config.domain_names), from_scratch=True)
