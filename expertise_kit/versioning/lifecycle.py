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
    "note_origins", "local_origins", "clear_local_origins", "directory_tree",
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


def note_origins(git: GitLocation, learned: dict[str, list[str]], branch: str) -> None:
    """Record ``branch`` of this clone as the origin of the entries it added (rel -> ids): one append to
    a local log, no object written. ``sync`` folds the log into the layer's ledgers (``fold_origins``),
    so other clones learn them; retirement reads both."""
    note_origin_branch(git, branch)
    origin = origin_of(git, branch)
    with contextlib.suppress(OSError), open(_state_dir(git) / "origins.log", "a", encoding="utf-8") as out:
        out.write("".join(f"{rel}\t{entry}\t{origin}\n" for rel, ids in learned.items() for entry in ids))


def local_origins(git: GitLocation) -> dict[str, dict[str, set[str]]]:
    """rel -> id -> origins, as this clone's log holds them (not folded into the layer yet)."""
    found: dict[str, dict[str, set[str]]] = {}
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in (_state_dir(git) / "origins.log").read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                found.setdefault(parts[0], {}).setdefault(parts[1], set()).add(parts[2])
    return found


def clear_local_origins(git: GitLocation, folded: dict[str, dict[str, set[str]]]) -> None:
    """Let go of the log's lines that ``folded`` holds (what a fold put into the layer)."""
    kept = [
        f"{rel}\t{entry}\t{origin}\n"
        for rel, entries in local_origins(git).items() for entry, origins in entries.items()
        for origin in origins if origin not in folded.get(rel, {}).get(entry, set())
    ]  # fmt: skip
    with contextlib.suppress(OSError):
        (_state_dir(git) / "origins.log").write_text("".join(kept), encoding="utf-8")


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

    from expertise_kit.document.entries import item_id, item_text, parse_item
    from expertise_kit.versioning.shared import _parsed
    from expertise_kit.vocab import section_names

    domain = rel.rsplit("/", 1)[-1].removesuffix(".yaml")
    plain = _parsed(git, text, Path(rel), domain)
    found: dict[str, str] = {}
    for name in section_names():
        for raw in (plain or {}).get(name) or []:
            with contextlib.suppress(ValueError):
                item = parse_item(name, raw)
                found[item_id(name, item)] = item_text(item)
    return found


def _blob_text(git: GitLocation, sha: str) -> str | None:
    from expertise_kit.versioning.shared import read_blob

    with contextlib.suppress(ValueError, OSError, UnicodeDecodeError):
        return read_blob(git, sha).decode("utf-8")
    return None


_WALK = 64  # first-parent commits read from loose objects before asking git's log instead


def _commit_parts(git: GitLocation, commit: str) -> tuple[str, list[str]] | None:
    """(root tree, parents) of a loose commit; None when it isn't one."""
    from expertise_kit.versioning.objects import _loose

    found = _loose(git, commit)
    if found is None or found[0] != b"commit" or not found[1].startswith(b"tree "):
        return None
    head = found[1].partition(b"\n\n")[0].split(b"\n")
    parents = [line[7:].decode("ascii", "replace") for line in head if line.startswith(b"parent ")]
    return head[0][5:].decode("ascii"), parents


def _subtree(git: GitLocation, tree: str, prefix: str) -> str | None:
    """The tree at ``prefix`` under ``tree`` ("" when there is none), from loose objects; None if not loose."""
    from expertise_kit.versioning.objects import _loose
    from expertise_kit.versioning.shared import _tree_items

    sha = tree
    for part in prefix.split("/"):
        found = _loose(git, sha)
        if found is None or found[0] != b"tree":
            return None
        items = _tree_items(found[1], len(tree) // 2)
        entry = next((s for mode, name, s in items if name == part.encode() and mode == b"40000"), None)
        if entry is None:
            return ""
        sha = entry
    return sha


def directory_tree(git: GitLocation, commit: str, prefix: str) -> str | None:
    """The id of the tree at ``prefix`` (the domain files' directory) in ``commit``, from loose objects."""
    parts = _commit_parts(git, commit)
    return _subtree(git, parts[0], prefix) if parts is not None else None


def _dir_blobs(git: GitLocation, commit: str, prefix: str) -> tuple[dict[str, str], list[str]] | None:
    """(``<prefix>/*.yaml`` -> blob at ``commit``, its parents), from loose objects; None when something
    isn't loose."""
    from expertise_kit.versioning.objects import _loose
    from expertise_kit.versioning.shared import _tree_items

    parts = _commit_parts(git, commit)
    if parts is None:
        return None
    sha = _subtree(git, parts[0], prefix)
    if sha is None:
        return None
    if not sha:
        return {}, parts[1]
    tree = _loose(git, sha)
    if tree is None or tree[0] != b"tree":
        return None
    listing = {
        f"{prefix}/{name.decode('utf-8', 'replace')}": s
        for mode, name, s in _tree_items(tree[1], len(commit) // 2)
        if mode.startswith(b"100") and name.endswith(b".yaml")
    }  # fmt: skip
    return listing, parts[1]


def _versions_walked(git: GitLocation, prefix: str, since: str, head: str) -> dict[str, list[str]] | None:
    """rel -> its blobs on the first-parent line from ``head`` back to ``since``, newest first, read from
    loose objects (a few zlib calls: commits made since the last publish are loose); None to ask git."""
    listings: list[dict[str, str]] = []
    commit = head
    for _ in range(_WALK):
        read = _dir_blobs(git, commit, prefix)
        if read is None:
            return None
        listings.append(read[0])
        if commit == since:
            break
        if not read[1]:
            return None
        commit = read[1][0]
    else:
        return None
    if all(listing == listings[0] for listing in listings):
        return {}  # no domain file changed on the way: the common case, a code commit in between
    versions: dict[str, list[str]] = {}
    for listing in listings:
        for rel, sha in listing.items():
            seen = versions.setdefault(rel, [])
            if sha not in seen:
                seen.append(sha)
    current = listings[0]
    return {rel: blobs if current.get(rel) == blobs[0] else ["", *blobs] for rel, blobs in versions.items()}


def _versions_logged(git: GitLocation, prefix: str, since: str, head: str) -> dict[str, list[str]]:
    """The same as ``_versions_walked``, from one ``git log`` (packed objects, a long way back)."""
    from expertise_kit.versioning.shared import run

    done = run(git, ["log", "--first-parent", "-m", "--raw", "--no-abbrev", "--no-renames", "--format=%x00%H",
                     f"{since}..{head}", "--", f"{prefix}"])  # fmt: skip
    versions: dict[str, list[str]] = {}
    if done.returncode != 0:
        return versions
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        meta, _, rel = line.partition("\t")
        fields = meta.split()
        if not line.startswith(":") or len(fields) < 5 or not rel.endswith(".yaml"):
            continue
        if rel.count("/") != prefix.count("/") + 1:
            continue
        seen = versions.setdefault(rel, [])
        new = "" if set(fields[3]) == {"0"} else fields[3]
        if not seen:
            seen.append(new)  # the newest: what HEAD holds ("" when the file is gone)
        seen += [sha for sha in (new, fields[2]) if sha and set(sha) != {"0"} and sha not in seen]
    return versions


def removed_in_history(git: GitLocation, prefix: str, since: str, head: str) -> dict[str, dict[str, Drop]]:
    """Entries the domain files under ``prefix`` held on this branch's first-parent line since ``since``
    (where it last published) and that HEAD's files no longer hold: rel -> id -> Drop.

    Read from loose objects (else one ``git log``). A file whose every line of every earlier version is
    still in HEAD's version lost no entry, and is not parsed: an appended comment or lesson costs a split."""
    versions = _versions_walked(git, prefix, since, head)
    if versions is None:
        versions = _versions_logged(git, prefix, since, head)
    found: dict[str, dict[str, Drop]] = {}
    for rel, blobs in versions.items():
        if len(blobs) < 2:
            continue
        current_text = _blob_text(git, blobs[0]) if blobs[0] else ""
        if current_text is None:
            continue
        older = [text for text in (_blob_text(git, sha) for sha in blobs[1:]) if text is not None]
        lines = set(current_text.splitlines())
        older = [text for text in older if not set(text.splitlines()) <= lines]
        if not older:
            continue
        now = ids_of(git, current_text, rel) if current_text else {}
        had: dict[str, str] = {}
        for text in older:
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
    known = local_origins(git)
    for path, sha in files.items():
        if is_ledger(path):
            with contextlib.suppress(ValueError, OSError):
                for entry, origins in parse_ledger(read_blob(git, sha)).origins.items():
                    known.setdefault(domain_path_of(path), {}).setdefault(entry, set()).update(origins)
    for rel, entries in known.items():
        if rel not in files:
            continue
        candidates = [
            entry for entry, origins in entries.items()
            if origins and all(o.startswith(me) and o[len(me):] in due for o in origins)
        ]  # fmt: skip
        if not candidates:
            continue
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
