"""The render cache: everything the pre-task hook needs, in files the write path keeps fresh.

Stdlib only, on purpose: the hook runs on every agent turn and must not import the YAML, git or
validation machinery. ``index.bin`` holds the config, the stat signatures (mtime, size, inode) of
config.yaml and each domain file, and each domain's overview; ``domains/<name>.bin`` holds its entries,
so the hook reads only the domains a task needs. A hand edit changes a signature, and the cache is
rebuilt once. The files are ``marshal`` data: built in, three times quicker to load than JSON, and it
spares the hook the ``json`` import. They are local (git-ignored), written only by us; one that can't be
read is rebuilt.
"""

from __future__ import annotations

import marshal
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = [
    "CACHE_VERSION",
    "cache_path",
    "domain_cache_path",
    "signature",
    "read_fresh_cache",
    "load_entries",
    "signatures_for",
]

CACHE_VERSION = 4


def cache_path(expertise_dir: str | Path) -> str:
    return os.path.join(expertise_dir, ".cache", "index.bin")


def domain_cache_path(expertise_dir: str | Path, domain: str) -> str:
    return os.path.join(expertise_dir, ".cache", "domains", f"{domain}.bin")


def signature(path: str | Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def signatures_for(expertise_dir: str | Path, domains: list[str]) -> dict[str, list[int] | None]:
    names = ["config.yaml", *(f"{name}.yaml" for name in domains)]
    return {name: signature(os.path.join(expertise_dir, name)) for name in names}


def _load(path: str) -> Any:
    try:
        with open(path, "rb") as handle:
            return marshal.loads(handle.read())  # marshal.load(file) reads in tiny pieces: 20x slower
    except (OSError, ValueError, EOFError, TypeError):
        return None


def read_fresh_cache(expertise_dir: str | Path, domains: list[str] | None = None) -> dict[str, Any] | None:
    """The cache, with entries for ``domains`` (all when None), if every file it was built from is
    unchanged; None when it must be rebuilt."""
    data = _load(cache_path(expertise_dir))
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    recorded = data.get("files")
    known = list((data.get("config") or {}).get("domains") or {})
    if not isinstance(recorded, dict) or signatures_for(expertise_dir, known) != recorded:
        return None
    return data if load_entries(expertise_dir, data, known if domains is None else domains) else None


def load_entries(expertise_dir: str | Path, data: dict[str, Any], domains: list[str]) -> bool:
    """Read the entries of ``domains`` into ``data``; False if a domain's file is missing or stale."""
    recorded = data.get("files") or {}
    for name in domains:
        summary = data.get("domains", {}).get(name)
        if not isinstance(summary, dict):
            continue  # not a configured domain: nothing to render
        if "entries" not in summary:
            detail = _load(domain_cache_path(expertise_dir, name))
            if not isinstance(detail, dict) or detail.get("signature") != recorded.get(f"{name}.yaml"):
                return False
            summary["entries"] = detail.get("entries") or []
            summary["postings"] = detail.get("postings") or {}
    return True
