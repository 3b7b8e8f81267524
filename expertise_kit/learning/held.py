"""Failures held back until they teach something: seen once, with no fix, they are not stored yet.

A failure that happened once and was never fixed is a bare "this failed" with no lesson: in a pull request it
is noise to review, and in a prompt it is a warning nobody can act on. It is held in a small local file
instead, and learned (with both sightings counted) as soon as it recurs in another session or a session
finds its fix. A failure already in the store is never held: its new sightings count as before.

The file lives in the repository's common git dir, so every worktree of one clone shares it; it is local
state, not part of the reviewed expertise, so it is bounded (``MAX_HELD`` entries, the oldest leave first)
and entries expire after ``EXPIRE_DAYS``. A missing, corrupt or unwritable file costs only the hold: a
failure is then held again from scratch, never lost from the store nor counted twice in it.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from expertise_kit import clock
from expertise_kit.clock import iso
from expertise_kit.document.atomic import write_atomic
from expertise_kit.document.sightings import combine_sightings
from expertise_kit.project import Project

__all__ = ["HeldFailures", "MAX_HELD", "EXPIRE_DAYS", "held_path"]

MAX_HELD = 500
EXPIRE_DAYS = 180
_VERSION = 1
_MAX_BYTES = 4 << 20


def held_path(project: Project) -> Path:
    """One file per ``.expertise/`` of the repository, shared by its worktrees."""
    if project.git is None:
        return project.expertise_dir / ".cache" / "held.json"
    nested = project.expertise_dir.parent.resolve().relative_to(project.git.toplevel.resolve()).as_posix()
    name = "held.json" if nested in ("", ".") else "held-" + nested.replace("%", "%25").replace("/", "%2F") + ".json"
    return project.git.common_dir / "expertise" / name


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(_MAX_BYTES))
    except (OSError, ValueError):
        return {}
    entries = data.get("entries") if isinstance(data, dict) and data.get("version") == _VERSION else None
    if not isinstance(entries, dict):
        return {}
    return {
        key: value
        for key, value in entries.items()
        if isinstance(key, str) and isinstance(value, dict) and isinstance(value.get("raw"), dict)
        and isinstance(value.get("held"), str)
    }  # fmt: skip


class HeldFailures:
    """What this learn run changes in the held file, applied to it (re-read under the lock) by ``save``."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.path = held_path(project)
        self._entries = _read(self.path)
        self._added: dict[str, dict[str, Any]] = {}
        self._released: set[str] = set()

    def sight(self, entry: str, section: str, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The learning to store now, or None while it is held.

        Held when it has no solution and was not seen in another session; released, combined with the
        earlier sighting, when it recurs elsewhere or comes with a fix.
        """
        earlier = self._added.get(entry) or (None if entry in self._released else self._entries.get(entry))
        sessions = {str(s) for s in raw.get("sessions") or []}
        if earlier is not None:
            before = earlier["raw"]
            if any(str(s) not in sessions for s in before.get("sessions") or []):
                self._release(entry)
                return combine_sightings(before, raw)
            if raw.get("solution"):  # the same session, grown: it found the fix
                self._release(entry)
                return raw
            return None  # the same session again (a transcript learned twice, or one that grew)
        if raw.get("solution"):
            return raw
        self._added[entry] = {"section": section, "raw": raw, "held": iso(clock.now())}
        return None

    def holds(self, entry: str) -> bool:
        return entry in self._added or (entry in self._entries and entry not in self._released)

    def _release(self, entry: str) -> None:
        self._released.add(entry)
        self._added.pop(entry, None)

    def save(self) -> None:
        """Apply this run's holds and releases to the file as it is now (the caller holds the write lock)."""
        if not self._added and not self._released:
            return
        current = _read(self.path)
        for entry in self._released:
            current.pop(entry, None)
        current.update(self._added)
        cutoff = iso(clock.now() - timedelta(days=EXPIRE_DAYS))
        kept = sorted(((v["held"], k) for k, v in current.items() if v["held"] >= cutoff), reverse=True)[:MAX_HELD]
        entries = {key: current[key] for _, key in sorted(kept)}
        data = json.dumps({"version": _VERSION, "entries": entries}, ensure_ascii=False, sort_keys=True)
        try:
            os.makedirs(self.path.parent, exist_ok=True)
            write_atomic(self.path, data.encode("utf-8"))
        except OSError:
            pass  # local bookkeeping only: the failure is held again next time it is seen
        self._entries, self._added, self._released = entries, {}, set()

    def __len__(self) -> int:
        return len(self._entries)
