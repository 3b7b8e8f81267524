"""The git side of ``expertise sync`` (``store/sharing.py`` runs it under the store's lock): fetch the
remote's shared ref into ``refs/expertise/remotes/<remote>/shared``, integrate it with ours (nothing to
do, a fast-forward, or a merge commit whose files are merged entry by entry and whose ledgers are merged
three ways, tombstones beating entries), push ours. Branches are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from expertise_kit import clock
from expertise_kit.errors import UserError
from expertise_kit.project import GitLocation
from expertise_kit.versioning.ledger import Ledger, is_ledger, ledger_path, merge_ledgers, parse_ledger
from expertise_kit.versioning.shared import (
    REMOVED_TRAILER,
    SHARED_REF,
    _git,
    drop_entries,
    read_blob,
    run,
    shared_files,
    write_commit,
    write_object,
    write_tree_of,
)

__all__ = [
    "SyncOutcome", "default_remote", "tracking_ref", "integrate", "synced_ref", "valid_remote", "fetch", "push",
    "note_synced", "read_named", "rewritten",
]  # fmt: skip


def tracking_ref(remote: str) -> str:
    return f"refs/expertise/remotes/{remote}/shared"


@dataclass
class SyncOutcome:
    remote: str
    before: str | None = None  # our shared ref before
    after: str | None = None  # ... and after
    theirs: str | None = None  # the remote's, as fetched last
    how: str = "unchanged"  # unchanged | fast-forward | merged | created | reset (the remote's went back)
    pushed: bool = False
    attempts: int = 0
    merged_files: list[str] = field(default_factory=list)
    incoming: dict[str, list[str]] = field(default_factory=dict)  # path -> "+ text" / "- text", what came in
    removed: list[str] = field(default_factory=list)  # "<id> <cause>: text", entries this sync took out
    read_only: bool = False  # `shared: read`: taken in, never pushed


def default_remote(git: GitLocation) -> str:
    """The current branch's remote, else ``origin``, else the only remote there is."""
    from expertise_kit.versioning.shared import branch_name

    branch = branch_name(git)
    if branch != "HEAD":
        configured = _git(git, ["config", "--get", f"branch.{branch}.remote"], check=False).decode().strip()
        if configured and configured != ".":
            return configured
    remotes = _git(git, ["remote"], check=False).decode().split()
    if "origin" in remotes:
        return "origin"
    if len(remotes) == 1:
        return remotes[0]
    if not remotes:
        raise UserError("this repository has no remote to sync with", hint="add one with `git remote add origin URL`")
    raise UserError(f"which remote? this repository has {len(remotes)}", hint="name it: `expertise sync --remote NAME`")


def valid_remote(git: GitLocation, remote: str) -> None:
    if not remote or remote.startswith("-") or any(ch.isspace() or ch in "\\:?*[~^" for ch in remote):
        raise UserError(f"{remote!r} is not a remote name", hint="see `git remote`")
    if remote not in _git(git, ["remote"], check=False).decode().split():
        raise UserError(f"no remote named {remote!r}", hint="see `git remote`, or add it with `git remote add`")


def _first_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return next((line for line in text.splitlines() if line.strip()), "no message")


def _commit_or_refuse(git: GitLocation, sha: str, what: str) -> str:
    kind = _git(git, ["cat-file", "-t", sha], check=False).decode().strip()
    if kind != "commit":
        raise UserError(
            f"{what} is a {kind or 'missing object'}, not a commit: it is not a shared layer",
            hint="ask who pushed it; `git push <remote> :refs/expertise/shared` starts it over (docs/sharing.md)",
        )
    return sha


def fetch(git: GitLocation, remote: str) -> str | None:
    """Fetch the remote's shared ref; its commit, or None when the remote has none yet."""
    refspec = f"+{SHARED_REF}:{tracking_ref(remote)}"
    done = run(git, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, refspec], timeout=300)
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace")
        if "couldn't find remote ref" in message or "could not find remote ref" in message:
            return None
        raise UserError(
            f"git fetch from {remote} failed: {_first_line(done.stderr)}", hint="check the remote and try again"
        )
    value = _git(git, ["rev-parse", "--verify", "--quiet", tracking_ref(remote)], check=False).decode().strip()
    return _commit_or_refuse(git, value, f"{remote}'s {SHARED_REF}") if value else None


def push(git: GitLocation, remote: str, commit: str) -> bool:
    """Push ``commit`` as the remote's shared ref; False when the remote moved first (fetch and retry)."""
    done = run(git, ["push", "--quiet", "--porcelain", remote, f"{commit}:{SHARED_REF}"], timeout=300)
    if done.returncode == 0:
        return True
    report = (done.stdout + done.stderr).decode("utf-8", "replace")
    if any(word in report for word in ("non-fast-forward", "fetch first", "stale info", "cannot lock ref")):
        return False
    raise UserError(f"git push to {remote} failed: {_first_line(done.stderr or done.stdout)}", hint="check the remote")


def _is_ancestor(git: GitLocation, older: str, newer: str) -> bool:
    return run(git, ["merge-base", "--is-ancestor", older, newer]).returncode == 0


def _text(git: GitLocation, sha: str | None) -> str | None:
    if sha is None:
        return None
    try:
        return read_blob(git, sha).decode("utf-8")
    except (ValueError, OSError, UnicodeDecodeError):
        return None


def _ledger(git: GitLocation, sha: str | None) -> Ledger:
    try:
        return parse_ledger(read_blob(git, sha)) if sha else Ledger()
    except (ValueError, OSError):
        return Ledger()


def integrate(
    git: GitLocation,
    ours: str | None,
    theirs: str | None,
    *,
    line_cap: int,
    remote: str,
    base: str | None = None,
) -> tuple[str | None, str, list[str], list[str]]:
    """Our shared ref with theirs taken in: (commit, how, files merged entry by entry, removals). ``base``:
    merge against it rather than the common ancestor (theirs was rewritten since we last synced it: what
    it dropped since ``base`` is dropped from ours too, and tombstoned so it stays dropped everywhere)."""
    if theirs is None or ours == theirs:
        return ours, "unchanged", [], []
    if ours is None:
        return theirs, "created", [], []
    if base is None:
        if _is_ancestor(git, theirs, ours):
            return ours, "unchanged", [], []
        if _is_ancestor(git, ours, theirs):
            return theirs, "fast-forward", [], []
    from expertise_kit.versioning.lifecycle import ids_of
    from expertise_kit.versioning.merge import merge_domain_texts

    reset = base is not None
    base = base or _git(git, ["merge-base", ours, theirs], check=False).decode().strip() or None
    try:
        base_files, our_files, their_files = (shared_files(git, c) for c in (base, ours, theirs))
    except ValueError as exc:
        raise UserError(
            f"{remote}'s {SHARED_REF} can't be read: {exc}",
            hint="ask who pushed it, or start it over (docs/sharing.md)",
        ) from None
    result: dict[str, str] = {}
    merged: list[str] = []
    domain_paths = sorted(p for p in set(our_files) | set(their_files) if not is_ledger(p))
    for path in domain_paths:
        b, o, t = base_files.get(path), our_files.get(path), their_files.get(path)
        if o == t or t == b:
            chosen = o  # the same on both sides, or only ours changed (or deleted) it
        elif o == b:
            chosen = t  # only theirs changed (or deleted) it
        elif o is None or t is None:
            chosen = o if o is not None else t  # deleted on one side, changed on the other: the change stays
        else:
            domain = path.rsplit("/", 1)[-1].removesuffix(".yaml")
            try:
                outcome = merge_domain_texts(
                    _text(git, b) or "", _text(git, o) or "", _text(git, t) or "",
                    path=Path(path), domain=domain, line_cap=line_cap, prefer="theirs",
                )  # fmt: skip
                chosen = write_object(git, b"blob", outcome.text.encode("utf-8"))
                merged.append(path)
            except UserError:
                chosen = o  # theirs is not a valid domain file: ours stands
        if chosen is not None:
            result[path] = chosen
    removals: list[str] = []
    trailers: list[str] = []
    stamp = clock.now().isoformat()
    for path in domain_paths:
        key = ledger_path(path)
        ledger = merge_ledgers(*(_ledger(git, files.get(key)) for files in (base_files, our_files, their_files)))
        ledger.expire(clock.now())
        text = _text(git, result.get(path))
        if text is None:
            continue
        gone: dict[str, str] = {}
        if reset:  # what the rewrite dropped since we last synced: tombstoned, so no clone brings it back
            dropped = ids_of(git, _text(git, base_files.get(path)) or "", path)
            kept = ids_of(git, _text(git, their_files.get(path)) or "", path)
            held = ids_of(git, _text(git, our_files.get(path)) or "", path)
            for entry, was in dropped.items():
                if entry not in kept and entry not in ledger.removed:
                    ledger.tombstone(entry, "reset", f"{remote} (rewritten)", stamp, was)
                    if entry in held:
                        gone[entry] = was
        if ledger.removed:
            domain = path.rsplit("/", 1)[-1].removesuffix(".yaml")
            new_text, _, said = drop_entries(git, text, Path(path), domain, set(ledger.removed), line_cap)
            if said:
                result[path] = write_object(git, b"blob", new_text.encode("utf-8"))
                gone.update(said)
        for entry, what in gone.items():
            cause = ledger.removed[entry].get("cause", "removed")
            removals.append(f"{entry} {cause}: {what}")
            trailers.append(f"{REMOVED_TRAILER}: {entry} {cause} [{remote}]: {' '.join(what.split())[:120]}\n")
        if ledger.origins:  # origins of entries the file no longer holds (pruned by the cap) are let go
            holds = ids_of(git, _text(git, result.get(path)) or "", path)
            ledger.origins = {entry: origins for entry, origins in ledger.origins.items() if entry in holds}
        if not ledger.empty:
            data = ledger.to_bytes()
            result[key] = write_object(git, b"blob", data)  # the same bytes as theirs: the same blob
    if result == their_files:
        return theirs, "fast-forward", merged, removals  # nothing of ours is left to add: theirs as it is
    tree = write_tree_of(git, result)
    message = (
        f"expertise(shared): merge the shared layer of {remote}\n\n"
        + "".join(f"merged entry by entry: {p}\n" for p in merged)
        + ("\n" if merged else "")
        + "Expertise-Change: merged\n"
        + "".join(trailers)
    )
    return write_commit(git, tree, [ours, theirs], message), "merged", merged, removals


def rewritten(git: GitLocation, theirs: str | None, last: str | None) -> bool:
    """Whether the remote's layer was rewritten since this clone last synced it: a push only moves it
    forward, so one we last saw that isn't an ancestor of what it is now was reset (or replaced)."""
    return bool(theirs and last and theirs != last and not _is_ancestor(git, last, theirs))


def synced_ref(remote: str) -> str:
    """What the remote's shared ref last was as this clone knew it: fetched, or pushed by us. A fetch moves
    the tracking ref but a push does not, so this one is ours, moved under the lock."""
    return f"refs/expertise/synced/{remote}"


def read_named(git: GitLocation, ref: str) -> str | None:
    return _git(git, ["rev-parse", "--verify", "--quiet", ref], check=False).decode().strip() or None


def note_synced(git: GitLocation, remote: str, commit: str | None) -> None:
    if commit is not None:
        _git(git, ["update-ref", synced_ref(remote), commit], check=False)
