"""What leaves the shared layer, and why: removals made anywhere a lesson was present, and lessons whose
branches are gone (``docs/sharing.md``, "Lifecycle").

- **Removed.** A revision that removes an entry (revert, validate, a hand edit it commits) names it; a
  branch whose HEAD moved by other means since it last published (a merge, a plain ``git commit``, a
  pull) is read once with ``git log`` for entries its file held on the way and no longer holds. Either
  way the entry leaves the layer and a tombstone (``versioning.ledger``) is left in its place.
- **Retired.** Each clone remembers which of its branches published lessons. When one of them is gone
  (``git branch -D``) for the grace period, every lesson whose origins are all such branches of this
  clone, and that no live branch (local or remote-tracking) holds, leaves the layer.

Nothing here runs a git process in the common case: a revision whose HEAD only moved by its own commit,
with every origin branch still present, costs a few stats.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from expertise_kit import clock
from expertise_kit.project import GitLocation

__all__ = [
    "Drop", "clone_id", "origin_of", "note_origin_branch", "removed_in_history", "retirements", "ids_of", "merge_drops",
]  # fmt: skip


@dataclass(frozen=True)
class Drop:
    """An entry to take out of the layer: why, and what it said (filled from the layer when blank)."""

    cause: str
    text: str = ""


def _state_dir(git: GitLocation) -> Path:
    return git.common_dir / "expertise" / "shared"


def clone_id(git: GitLocation) -> str:
    """This clone's name in the ledger's origins: random, made once, shared by its worktrees."""
    path = git.common_dir / "expertise" / "clone-id"
    with contextlib.suppress(OSError):
        value = path.read_text(encoding="ascii").strip()
        if value:
            return value
    value = os.urandom(6).hex()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n", encoding="ascii")
    return value


def origin_of(git: GitLocation, branch: str) -> str:
    return f"{clone_id(git)}:{branch}"


def _origin_branches(git: GitLocation) -> list[str]:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return [line for line in (_state_dir(git) / "origins").read_text(encoding="utf-8").splitlines() if line]
    return []


def note_origin_branch(git: GitLocation, branch: str) -> None:
    """Remember that ``branch`` published lessons, so its deletion is noticed with a stat."""
    known = _origin_branches(git)
    if branch in known:
        return
    with contextlib.suppress(OSError):
        _state_dir(git).mkdir(parents=True, exist_ok=True)
        with open(_state_dir(git) / "origins", "a", encoding="utf-8") as out:
            out.write(branch + "\n")


def _forget_branches(git: GitLocation, branches: set[str]) -> None:
    kept = [b for b in _origin_branches(git) if b not in branches]
    with contextlib.suppress(OSError):
        (_state_dir(git) / "origins").write_text("".join(b + "\n" for b in kept), encoding="utf-8")


def _branch_exists(git: GitLocation, branch: str) -> bool:
    from expertise_kit.versioning.shared import run

    if (git.common_dir / "reftable").is_dir():
        return run(git, ["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"]).returncode == 0
    if (git.common_dir / "refs" / "heads" / branch).is_file():
        return True
    with contextlib.suppress(OSError), open(git.common_dir / "packed-refs", "rb") as packed:
        wanted = f" refs/heads/{branch}".encode()
        return any(line.rstrip(b"\n").endswith(wanted) for line in packed)
    return False


def ids_of(git: GitLocation, text: str, rel: str) -> dict[str, str]:
    """Entry id -> what it says, for one version of a domain file (empty when it isn't one)."""
    from pydantic import ValidationError

    from expertise_kit.document.entries import item_id, item_text, parse_item
    from expertise_kit.versioning.shared import _parsed
    from expertise_kit.vocab import section_names

    domain = rel.rsplit("/", 1)[-1].removesuffix(".yaml")
    plain = _parsed(git, text, Path(rel), domain)
    found: dict[str, str] = {}
    for name in section_names():
        for raw in (plain or {}).get(name) or []:
            with contextlib.suppress(ValidationError):
                item = parse_item(name, raw)
                found[item_id(name, item)] = item_text(item)
    return found


def _blob_text(git: GitLocation, sha: str) -> str | None:
    from expertise_kit.versioning.shared import read_blob

    with contextlib.suppress(ValueError, OSError, UnicodeDecodeError):
        return read_blob(git, sha).decode("utf-8")
    return None


def removed_in_history(git: GitLocation, prefix: str, since: str, head: str) -> dict[str, dict[str, Drop]]:
    """Entries the domain files under ``prefix`` held on this branch's first-parent line since ``since``
    (where it last published) and that HEAD's files no longer hold: rel -> id -> Drop. One ``git log``."""
    from expertise_kit.versioning.shared import run

    done = run(git, ["log", "--first-parent", "-m", "--raw", "--no-abbrev", "--no-renames", "--format=%x00%H",
                     f"{since}..{head}", "--", f"{prefix}"])  # fmt: skip
    if done.returncode != 0:
        return {}
    versions: dict[str, list[str]] = {}  # rel -> blobs, newest first
    kinds: dict[str, str] = {}
    commit = ""
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("\0"):
            commit = line[1:]
            continue
        if not line.startswith(":"):
            continue
        meta, _, rel = line.partition("\t")
        fields = meta.split()
        if len(fields) < 5 or not rel.endswith(".yaml") or rel.count("/") != prefix.count("/") + 1:
            continue
        seen = versions.setdefault(rel, [])
        seen += [sha for sha in (fields[3], fields[2]) if set(sha) != {"0"} and sha not in seen]
        kinds.setdefault(rel, commit[:12])
    found: dict[str, dict[str, Drop]] = {}
    for rel, blobs in versions.items():
        current_text = _blob_text(git, blobs[0]) if blobs else None
        now = ids_of(git, current_text, rel) if current_text is not None else {}
        had: dict[str, str] = {}
        for sha in blobs[1:]:
            text = _blob_text(git, sha)
            if text is not None:
                had.update(ids_of(git, text, rel))
        gone = {entry: Drop("deleted", said) for entry, said in had.items() if entry not in now}
        if gone:
            found[rel] = gone
    return found


def _gone_since(git: GitLocation, gone: list[str]) -> dict[str, str]:
    path = _state_dir(git) / "gone.json"
    noted: dict[str, str] = {}
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            noted = {str(k): str(v) for k, v in loaded.items()}
    now = clock.now().isoformat()
    fresh = {branch: noted.get(branch, now) for branch in gone}
    if fresh != noted:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(fresh), encoding="utf-8")
    return fresh


def _live_ids(git: GitLocation, rel: str, memo: dict[str, dict[str, str]]) -> set[str]:
    """The ids the file at ``rel`` holds at the tip of any live branch, local or remote-tracking."""
    from expertise_kit.versioning.shared import run

    tips = run(git, ["for-each-ref", "--format=%(objectname)", "refs/heads", "refs/remotes"]).stdout.decode().split()
    query = "".join(f"{tip}:{rel}\n" for tip in dict.fromkeys(tips)).encode()
    done = run(git, ["cat-file", "--batch-check=%(objectname) %(objecttype)"], data=query)
    live: set[str] = set()
    for line in done.stdout.decode().splitlines():
        sha, _, kind = line.partition(" ")
        if kind != "blob":
            continue
        if sha not in memo:
            text = _blob_text(git, sha)
            memo[sha] = ids_of(git, text, rel) if text is not None else {}
        live |= set(memo[sha])
    return live


def retirements(git: GitLocation, files: dict[str, str], grace_days: int) -> dict[str, dict[str, Drop]]:
    """Lessons to retire: rel -> id -> Drop. A few stats unless one of this clone's origin branches is gone."""
    from expertise_kit.versioning.ledger import domain_path_of, is_ledger, parse_ledger
    from expertise_kit.versioning.shared import read_blob

    gone = [b for b in _origin_branches(git) if not _branch_exists(git, b)]
    if not gone:
        return {}
    noted = _gone_since(git, gone)
    horizon = clock.now() - timedelta(days=grace_days)
    due = {b for b in gone if _parse_time(noted[b]) <= horizon}
    if not due:
        return {}
    me = clone_id(git) + ":"
    memo: dict[str, dict[str, str]] = {}
    found: dict[str, dict[str, Drop]] = {}
    for path, sha in files.items():
        if not is_ledger(path):
            continue
        try:
            ledger = parse_ledger(read_blob(git, sha))
        except (ValueError, OSError):
            continue
        candidates = [
            entry for entry, origins in ledger.origins.items()
            if origins and all(o.startswith(me) and o[len(me):] in due for o in origins)
        ]  # fmt: skip
        if not candidates:
            continue
        rel = domain_path_of(path)
        live = _live_ids(git, rel, memo)
        drops = {entry: Drop("retired") for entry in candidates if entry not in live}
        if drops:
            found[rel] = drops
    _forget_branches(git, due)
    return found


def _parse_time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return clock.now()


def merge_drops(*sources: dict[str, dict[str, Drop]]) -> dict[str, dict[str, Drop]]:
    merged: dict[str, dict[str, Drop]] = {}
    for source in sources:
        for rel, drops in source.items():
            for entry, drop in drops.items():
                merged.setdefault(rel, {}).setdefault(entry, drop)
    return merged
