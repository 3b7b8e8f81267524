"""The shared layer's ledger: what it removed (tombstones) and which branches brought each lesson in.

One small JSON file per domain file, in the layer's own tree at ``.expertise-layer/<path>.json``, so it
travels with the layer through ``git push`` and ``git fetch`` and is merged with it, entry by entry:

- ``removed``: entry id -> why it went (``cause``: revert, validate, deleted, merge, reset, retired), from
  which branch, when, and what it said. A tombstone beats the entry in every merge, so a removal made in
  one worktree or clone sticks in all of them, whichever branch first published the lesson. An entry
  learned again later (added on a branch since its last publish) lifts its tombstone. Tombstones expire
  after ``TOMBSTONE_DAYS``.
- ``origins``: entry id -> the branches that published it, each as ``<clone>:<branch>``. A lesson whose
  origin branches are all gone from their clone, and that reached no live branch, is retired.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

__all__ = [
    "LEDGER_DIR",
    "Ledger",
    "TOMBSTONE_DAYS",
    "MAX_LEDGER_BYTES",
    "ledger_path",
    "is_ledger",
    "domain_path_of",
    "parse_ledger",
    "merge_ledgers",
]

LEDGER_DIR = ".expertise-layer"
TOMBSTONE_DAYS = 180  # long enough that no clone still holds the lesson unsynced; then the tombstone goes
MAX_LEDGER_BYTES = 4 << 20
_FIELDS = ("cause", "branch", "time", "text")


def ledger_path(rel: str) -> str:
    """The ledger's path in the layer's tree for the domain file at ``rel``."""
    return f"{LEDGER_DIR}/{rel.replace('%', '%25').replace('/', '%2F')}.json"


def is_ledger(path: str) -> bool:
    return path.startswith(LEDGER_DIR + "/")


def domain_path_of(path: str) -> str:
    return path[len(LEDGER_DIR) + 1 :].removesuffix(".json").replace("%2F", "/").replace("%25", "%")


@dataclass
class Ledger:
    removed: dict[str, dict[str, str]] = field(default_factory=dict)
    origins: dict[str, list[str]] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """One line per record, sorted: a change to one lesson is a one-line diff."""
        lines = ["{", '"removed": {']
        removed = sorted(self.removed.items())
        lines.append(",\n".join(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in removed))
        lines += ["},", '"origins": {']
        lines.append(",\n".join(f"{json.dumps(k)}: {json.dumps(sorted(v))}" for k, v in sorted(self.origins.items())))
        lines += ["}", "}"]
        return ("\n".join(line for line in lines if line) + "\n").encode("utf-8")

    @property
    def empty(self) -> bool:
        return not (self.removed or self.origins)

    def tombstone(self, entry: str, cause: str, branch: str, time: str, text: str) -> None:
        self.removed[entry] = {"cause": cause, "branch": branch, "time": time, "text": " ".join(text.split())[:200]}
        self.origins.pop(entry, None)

    def add_origin(self, entry: str, origin: str) -> bool:
        """Record ``origin`` for ``entry``, lifting its tombstone (learned again); whether anything changed."""
        had = self.removed.pop(entry, None) is not None
        known = self.origins.setdefault(entry, [])
        if origin in known:
            return had
        known.append(origin)
        return True

    def expire(self, now: datetime) -> bool:
        horizon = (now - timedelta(days=TOMBSTONE_DAYS)).isoformat()
        old = [k for k, v in self.removed.items() if v.get("time", "") < horizon]
        for key in old:
            del self.removed[key]
        return bool(old)


def parse_ledger(data: bytes | None) -> Ledger:
    """A ledger's bytes, checked; raises ValueError when they are not one (a fetched layer is refused)."""
    if not data:
        return Ledger()
    if len(data) > MAX_LEDGER_BYTES:
        raise ValueError(f"over {MAX_LEDGER_BYTES} bytes")
    try:
        raw: Any = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("removed", {}), dict):
        raise ValueError("not a ledger")
    ledger = Ledger()
    for key, value in (raw.get("removed") or {}).items():
        if not isinstance(value, dict) or not all(isinstance(value.get(f, ""), str) for f in _FIELDS):
            raise ValueError(f"tombstone {key!r} is not one")
        if any(ord(ch) < 32 for f in _FIELDS for ch in value.get(f, "")):
            raise ValueError(f"tombstone {key!r} contains control characters")
        ledger.removed[str(key)] = {f: value.get(f, "") for f in _FIELDS}
    origins = raw.get("origins") or {}
    if not isinstance(origins, dict):
        raise ValueError("not a ledger")
    for key, value in origins.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"origins of {key!r} are not a list of branches")
        ledger.origins[str(key)] = list(dict.fromkeys(value))
    return ledger


def merge_ledgers(base: Ledger, ours: Ledger, theirs: Ledger) -> Ledger:
    """Three ways: a tombstone either side added stays, one either side lifted since ``base`` goes (learned
    again, or expired); origins are united. An entry that is tombstoned has no origins."""
    result = Ledger()
    for key in set(ours.removed) | set(theirs.removed):
        lifted = key in base.removed and (key not in ours.removed or key not in theirs.removed)
        if lifted:
            continue
        records = [r for r in (ours.removed.get(key), theirs.removed.get(key)) if r is not None]
        result.removed[key] = max(records, key=lambda r: r.get("time", ""))
    for key in set(ours.origins) | set(theirs.origins):
        if key not in result.removed:
            result.origins[key] = sorted(set(ours.origins.get(key, [])) | set(theirs.origins.get(key, [])))
    return result
