"""The render cache: everything the pre-task hook needs, as one JSON file the write path keeps fresh.

Stdlib only, on purpose: the hook runs on every agent turn and must not import the YAML, git or
validation machinery. Freshness is checked by stat signatures (mtime, size, inode) of config.yaml and
each domain file, so a hand edit is noticed and the cache rebuilt once.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = ["CACHE_VERSION", "cache_path", "signature", "read_fresh_cache", "signatures_for"]

CACHE_VERSION = 1


def cache_path(expertise_dir: str | Path) -> str:
    return os.path.join(expertise_dir, ".cache", "render.json")


def signature(path: str | Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def signatures_for(expertise_dir: str | Path, domains: list[str]) -> dict[str, list[int] | None]:
    names = ["config.yaml", *(f"{name}.yaml" for name in domains)]
    return {name: signature(os.path.join(expertise_dir, name)) for name in names}


def read_fresh_cache(expertise_dir: str | Path) -> dict[str, Any] | None:
    """The cache when every file it was built from is unchanged; None when it must be rebuilt."""
    try:
        with open(cache_path(expertise_dir), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    recorded = data.get("files")
    domains = list((data.get("config") or {}).get("domains") or {})
    if not isinstance(recorded, dict) or signatures_for(expertise_dir, domains) != recorded:
        return None
    return data
