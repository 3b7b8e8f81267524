"""``expertise sync``: share the shared layer (``refs/expertise/shared``) with the project's remote.

Fetch the remote's shared ref into ``refs/expertise/remotes/<remote>/shared``, integrate it with ours
inside the write lock (nothing to do, a fast-forward, or a merge commit whose files are merged entry by
entry), then push our ref. A push the remote refuses because someone pushed first starts again from the
fetch, a few times with a growing pause. Branches are never touched: clones share lessons without
merging anything.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from expertise_kit.errors import UserError
from expertise_kit.project import GitLocation
from expertise_kit.versioning.shared import (
    SHARED_REF,
    _git,
    read_blob,
    read_ref,
    run,
    shared_files,
    update_ref,
    write_commit,
    write_object,
    write_state,
    write_tree_of,
)

if TYPE_CHECKING:
    from expertise_kit.store import Store

__all__ = ["SyncOutcome", "sync_shared", "default_remote", "tracking_ref", "integrate"]

_ATTEMPTS = 6


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


def _valid_remote(git: GitLocation, remote: str) -> None:
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


def _fetch(git: GitLocation, remote: str) -> str | None:
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


def _push(git: GitLocation, remote: str, commit: str) -> bool:
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


def integrate(
    git: GitLocation,
    ours: str | None,
    theirs: str | None,
    *,
    line_cap: int,
    remote: str,
    base: str | None = None,
) -> tuple[str | None, str, list[str]]:
    """Our shared ref with theirs taken in: (commit, how, files merged entry by entry). ``base``: merge
    against it rather than the common ancestor (theirs went back to an earlier state: what it dropped
    since ``base`` is dropped from ours too)."""
    if theirs is None or ours == theirs:
        return ours, "unchanged", []
    if ours is None:
        return theirs, "created", []
    if base is None:
        if _is_ancestor(git, theirs, ours):
            return ours, "unchanged", []
        if _is_ancestor(git, ours, theirs):
            return theirs, "fast-forward", []
    from expertise_kit.versioning.merge import merge_domain_texts

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
    for path in sorted(set(our_files) | set(their_files)):
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
    if result == their_files:
        return theirs, "fast-forward", merged  # nothing of ours is left to add: theirs as it is
    tree = write_tree_of(git, result)
    message = (
        f"expertise(shared): merge the shared layer of {remote}\n\n"
        + "".join(f"merged entry by entry: {p}\n" for p in merged)
        + ("\n" if merged else "")
        + "Expertise-Change: merged\n"
    )
    return write_commit(git, tree, [ours, theirs], message), "merged", merged


def synced_ref(remote: str) -> str:
    """What the remote's shared ref last was as this clone knew it: fetched, or pushed by us. A fetch moves
    the tracking ref but a push does not, so this one is ours, moved under the lock."""
    return f"refs/expertise/synced/{remote}"


def _read(git: GitLocation, ref: str) -> str | None:
    return _git(git, ["rev-parse", "--verify", "--quiet", ref], check=False).decode().strip() or None


def _note_synced(git: GitLocation, remote: str, commit: str | None) -> None:
    if commit is not None:
        _git(git, ["update-ref", synced_ref(remote), commit], check=False)


def sync_shared(store: Store, remote: str | None = None, *, push: bool = True) -> SyncOutcome:
    """Fetch, integrate and push the shared layer; retried when another clone pushed first.

    When the remote's layer went back to an earlier state this clone had synced (someone reset it, say a
    CI job that refused a lesson), what it dropped since is dropped here too, by a three-way merge with
    that synced state as the base; what this clone learned since is kept, and pushed on top.
    """
    project = store.project
    git = project.git
    if git is None:
        raise UserError("not a git repository, so there is no shared layer to sync", hint="run it in a git work tree")
    remote = remote or default_remote(git)
    _valid_remote(git, remote)
    outcome = SyncOutcome(remote=remote)
    for attempt in range(1, _ATTEMPTS + 1):
        outcome.attempts = attempt
        theirs = _fetch(git, remote)
        outcome.theirs = theirs
        with store.locked():
            actual = ours = read_ref(git)
            if attempt == 1:
                outcome.before = ours
            if ours is not None and _git(git, ["cat-file", "-t", ours], check=False).decode().strip() != "commit":
                ours = None  # ours names no commit: theirs replaces it (the swap below still checks the old value)
            last = _read(git, synced_ref(remote))
            rewound = bool(theirs and last and theirs != last and _is_ancestor(git, theirs, last))
            new, how, merged = integrate(
                git, ours, theirs, line_cap=store.config.line_cap, remote=remote, base=last if rewound else None
            )
            if rewound:
                how = "reset"
            if new is not None and new != actual:
                if not update_ref(git, new, actual, f"expertise sync: {how} {remote}"):
                    continue  # moved under us (a git command outside our lock): start again
                files = shared_files(git, new)
                write_state(git, new, files)
                _refresh_cache(store, shared_files(git, ours), files)
            _note_synced(git, remote, theirs)
            outcome.after = new
            if how != "unchanged":
                outcome.how = how
            outcome.merged_files += [m for m in merged if m not in outcome.merged_files]
        if not push or new is None or new == theirs:
            return outcome
        if _push(git, remote, new):
            with store.locked():
                _note_synced(git, remote, new)
            outcome.pushed = True
            return outcome
        time.sleep(random.uniform(0.05, 0.2) * attempt)
    raise UserError(
        f"{remote}'s {SHARED_REF} kept moving while we pushed ({_ATTEMPTS} attempts)",
        hint="run `expertise sync` again",
    )


def _refresh_cache(store: Store, before: dict[str, str], after: dict[str, str]) -> None:
    """Rebuild this worktree's render cache for the domains whose shared file changed."""
    from expertise_kit.store.cachebuild import refresh_domains
    from expertise_kit.versioning.shared import tree_path

    project = store.project
    try:
        prefix = tree_path(project, project.expertise_dir) + "/"
        names = [
            name for name in store.config.domain_names
            if before.get(f"{prefix}{name}.yaml") != after.get(f"{prefix}{name}.yaml")
        ]  # fmt: skip
        if names:
            refresh_domains(project, store.config, names)
    except Exception:  # noqa: BLE001, S110 - the hook rebuilds a stale cache itself
        pass
