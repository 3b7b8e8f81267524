"""Every revision is one git commit of ``.expertise/`` paths only; when git is busy, it is deferred.

The commit is ``git commit --only -- <our paths>``: git builds it from HEAD plus just those paths, so the
user's staged changes stay staged and out of our commit, and their unstaged and untracked files are never
read. When the repo is mid-merge, mid-rebase, detached, unborn, locked, or not a repo at all, the file is
still written and the revision is recorded as pending; the next revision, or ``expertise history --sync``,
commits it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from expertise_kit import clock
from expertise_kit.clock import iso
from expertise_kit.errors import UserError
from expertise_kit.project import GitLocation, Project
from expertise_kit.versioning.busy import busy_reason, head_sha, wait_for_index_lock
from expertise_kit.versioning.git import GitError, GitMissing, configured_identity, run_git

__all__ = [
    "CHANGE_TYPES",
    "Revision",
    "CommitOutcome",
    "commit_revision",
    "sync_pending",
    "pending_revisions",
    "record_pending",
    "reserve_pending",
    "drop_reservation",
    "trailer_value",
    "TRAILER_PREFIX",
    "commit_exported",
    "ignored_by_git",
]

CHANGE_TYPES = ("learned", "manual", "agent", "validated", "pruned", "improved", "reverted", "feedback", "merged")
TRAILER_PREFIX = "Expertise-"
_MAX_BODY_ENTRIES = 40  # a learn that adds hundreds of entries still gets a readable message
_INDEX_LOCK_RETRIES = 12  # a developer's git busy in a loop can take the index lock again and again


@dataclass
class Revision:
    """One logical change to the expertise files, as the commit message will describe it."""

    domains: list[str]
    change: str
    subject: str
    paths: list[str]  # relative to the project root
    sessions: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)  # "<id> <section>: <text>"
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reverts: str | None = None
    # The raw entries added, by domain and section: if a deferred revision's file change is wiped (say by
    # `git rebase --abort`), they are put back before the deferred commit is made.
    entries: list[dict[str, Any]] = field(default_factory=list)
    by_hand: bool = False  # a human's own edit: authored by them, not by expertise_kit
    time: str = ""
    reason: str = ""  # why it was deferred, when it was
    # Blob id of the bytes written to each path, and where git pointed then (``objects.git_motion``): a
    # later write tells a change git made to the file (a stash, an aborted rebase) from a person's edit.
    written: dict[str, str] = field(default_factory=dict)
    motion: str = ""
    counts: dict[str, int] = field(default_factory=dict)  # extra trailers: `Expertise-Helpful: 2`
    # Set when the record was written ahead of the files (``reserve_pending``): a later record with the same
    # key replaces it, and the commit that makes this revision does not count it as an earlier one.
    key: str = ""

    def __post_init__(self) -> None:
        if self.change not in CHANGE_TYPES:
            raise ValueError(f"unknown change type {self.change!r}")


@dataclass
class CommitOutcome:
    sha: str | None = None
    deferred: str | None = None  # the reason, when the commit was deferred
    synced: int = 0  # earlier deferred revisions this commit also made
    hint: str = ""


def _pending_files(project: Project) -> list[Path]:
    files = [project.expertise_dir / ".cache" / "pending.jsonl"]
    if project.git is not None:
        files.insert(0, project.git.git_dir / "expertise-pending.jsonl")
    return files


def pending_revisions(project: Project) -> list[Revision]:
    revisions: list[Revision] = []
    for path in _pending_files(project):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            try:
                revisions.append(Revision(**json.loads(line)))
            except (ValueError, TypeError):
                continue  # a torn line from a killed writer: the files themselves still get committed
    latest = {r.key: r for r in revisions if r.key}  # a reservation, then the record that says why
    revisions = [r for r in revisions if not r.key or latest[r.key] is r]
    return sorted(revisions, key=lambda r: r.time)


_UNFINISHED = "its commit did not finish"


def reserve_pending(project: Project, revision: Revision) -> None:
    """Record ``revision`` as pending before its files are written, so that a commit that then fails for
    want of space (or a process killed before it commits) still leaves the revision on record: on a full
    disk, the record written after the failed commit would fail too, and the next revision would sweep
    the file in under trailers that don't list its entries. The commit that makes it clears it.

    Raises ``UserError`` when even this can't be written: nothing has been changed yet.
    """
    import secrets

    revision.key = revision.key or secrets.token_hex(8)
    try:
        _append_pending(project, revision, _UNFINISHED)
    except OSError as exc:
        from expertise_kit.versioning.git import NO_SPACE_HINT, no_space

        target = _pending_files(project)[0]
        if no_space(exc):
            raise UserError(
                "no space left on device", path=target, hint=f"{NO_SPACE_HINT}; nothing was changed"
            ) from None
        raise UserError(f"can't be written: {exc.strerror or exc}", path=target, hint="nothing was changed") from None


def drop_reservation(project: Project, revision: Revision) -> None:
    """Take back ``reserve_pending``'s record when none of the revision's files were written after all."""
    target = _pending_files(project)[0]
    try:
        lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
    except OSError:
        return
    kept = [line for line in lines if f'"key": "{revision.key}"' not in line]
    try:
        if kept:
            target.write_text("".join(kept), encoding="utf-8")
        else:
            target.unlink()
    except OSError:
        pass  # it stays pending; the next revision commits nothing new for it


def record_pending(project: Project, revision: Revision, reason: str) -> None:
    try:
        _append_pending(project, revision, reason)
    except OSError:
        if not revision.key:
            raise
        # Reserved before the write: that record stands (with a vaguer reason), and the revision is pending.


def _append_pending(project: Project, revision: Revision, reason: str) -> None:
    revision.time = revision.time or iso(clock.now())
    revision.reason = reason
    target = _pending_files(project)[0]
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(asdict(revision), ensure_ascii=False) + "\n")


def _clear_pending(project: Project) -> None:
    for path in _pending_files(project):
        path.unlink(missing_ok=True)


def _ids(lines: list[str]) -> list[str]:
    return [line.split(" ", 1)[0] for line in lines]


_TRAILER_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")


def trailer_value(value: str) -> str:
    """A value that can only ever be one trailer: ids as they are, anything else as a short digest.

    Session ids come from transcripts, which anyone can write; a newline in one would forge trailers.
    """
    if value and len(value) <= 128 and set(value) <= _TRAILER_SAFE:
        return value
    return "sha-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _one_line(text: str) -> str:
    """No value can start a new line or paragraph of the message: whitespace runs become one space."""
    return " ".join(text.split())


def _is_hex(token: str) -> bool:
    return 7 <= len(token) <= 64 and all(ch in "0123456789abcdef" for ch in token)


def _message(revision: Revision, pending: list[Revision]) -> str:
    parts = [_one_line(revision.subject), ""]
    body: list[str] = []
    shown = revision.added[:_MAX_BODY_ENTRIES] + revision.removed[: max(0, _MAX_BODY_ENTRIES - len(revision.added))]
    body += [f"+ {_one_line(line)}" for line in revision.added if line in shown]
    body += [f"- {_one_line(line)}" for line in revision.removed if line in shown]
    hidden = len(revision.added) + len(revision.removed) - len(shown)
    if hidden > 0:
        body.append(f"... and {hidden} more (see `expertise diff`)")
    body += [_one_line(note) for note in revision.notes]
    if pending:
        body.append(f"Also commits {len(pending)} deferred revision{'s' if len(pending) != 1 else ''}:")
        body += [f"  {_one_line(f'{p.time} {p.subject} (deferred: {p.reason})')}" for p in pending]
    if body:
        parts += [*body, ""]
    everything = [revision, *pending]
    # Trailers carry only values that can't break out of their line: ids, hashes, known words.
    trailers: list[str] = []
    for domain in dict.fromkeys(d for r in everything for d in r.domains):
        trailers.append(f"{TRAILER_PREFIX}Domain: {trailer_value(domain)}")
    for change in dict.fromkeys(r.change for r in everything if r.change in CHANGE_TYPES):
        trailers.append(f"{TRAILER_PREFIX}Change: {change}")
    for session in dict.fromkeys(trailer_value(str(s)) for r in everything for s in r.sessions):
        trailers.append(f"{TRAILER_PREFIX}Session: {session}")
    added = list(dict.fromkeys(i for r in everything for i in _ids(r.added) if _is_hex(i)))
    removed = list(dict.fromkeys(i for r in everything for i in _ids(r.removed) if _is_hex(i)))
    for name, count in revision.counts.items():
        if name.replace("-", "").isalnum() and isinstance(count, int):
            trailers.append(f"{TRAILER_PREFIX}{name}: {count}")
    if added:
        trailers.append(f"{TRAILER_PREFIX}Added: {' '.join(added)}")
    if removed:
        trailers.append(f"{TRAILER_PREFIX}Removed: {' '.join(removed)}")
    for r in everything:
        if r.reverts and _is_hex(r.reverts):
            trailers.append(f"{TRAILER_PREFIX}Reverts: {r.reverts}")
    return "\n".join(parts + trailers) + "\n"


def _identity(git: GitLocation) -> tuple[str, str] | None:
    """The user's committer identity, as git would pick it: environment first, then config."""
    name = os.environ.get("GIT_COMMITTER_NAME")
    email = os.environ.get("GIT_COMMITTER_EMAIL")
    if not (name and email):
        configured = configured_identity(git.toplevel)
        name = name or configured[0]
        email = email or configured[1]
    if not (name and email):
        return None
    return str(name), str(email)


def _commit(project: Project, revision: Revision, pending: list[Revision]) -> str:
    assert project.git is not None
    toplevel = project.git.toplevel
    paths = list(dict.fromkeys(p for r in [revision, *pending] for p in r.paths))
    pathspecs = [str((project.root / p).relative_to(toplevel)) for p in paths]
    args = ["commit", "--only", "--no-verify", "--no-edit", "--quiet", "--cleanup=verbatim"]
    if not revision.by_hand:
        identity = _identity(project.git)
        if identity is None:
            raise GitError(["commit"], 1, "", "git has no user identity (user.name and user.email)")
        args.append(f"--author=expertise_kit (on behalf of {identity[0]}) <{identity[1]}>")
    return _commit_only(project.git, toplevel, args, pathspecs, _message(revision, pending))


def _commit_only(git: GitLocation, toplevel: Path, args: list[str], pathspecs: list[str], message: str) -> str:
    """``git commit --only`` of ``pathspecs`` with ``message`` (given on standard input: a prune's list of
    removed ids can pass what an argument may hold), retried while another git holds index.lock: the new
    commit's sha, or "" when there was nothing to commit. Paths git doesn't know yet are staged first,
    since ``--only`` takes only known paths."""
    for attempt in range(_INDEX_LOCK_RETRIES + 1):
        result = run_git(toplevel, [*args, "-F", "-", "--", *pathspecs], check=False, stdin=message)
        if result.status == 0:
            # A commit always leaves a loose ref behind; reading it saves a second git process.
            return head_sha(git) or str(run_git(toplevel, ["rev-parse", "HEAD"]).stdout.strip())
        error = result.stderr + result.stdout
        if "did not match any file(s) known to git" in error:
            run_git(toplevel, ["add", "--", *pathspecs])
            continue
        if "index.lock" in error and attempt < _INDEX_LOCK_RETRIES:
            wait_for_index_lock(git, 2.0)
            time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))  # jitter: out of step with it
            continue
        if "nothing to commit" in error or "no changes added to commit" in error:
            return ""
        raise GitError(["commit", "--only", "--", *pathspecs], result.status, result.stdout, result.stderr)
    raise GitError(["commit"], 1, "", "gave up after repeated index.lock contention")


def commit_revision(project: Project, revision: Revision) -> CommitOutcome:
    """Commit ``revision`` (and any deferred ones); defer it when the repo can't take a commit now.

    Call while holding the write lock.
    """
    if project.git is None:
        record_pending(project, revision, "not a git repository")
        return CommitOutcome(
            deferred="not a git repository",
            hint="run `git init` and then `expertise history --sync` to version it",
        )
    reason = busy_reason(project.git)
    if reason is not None:
        record_pending(project, revision, reason)
        hint = "it will be committed by the next change or `expertise history --sync`"
        if reason.startswith(("a rebase", "a cherry-pick", "a revert")):
            # git refuses to go on over a changed file its next step touches; the record brings the entries back
            changed = " ".join(dict.fromkeys(revision.paths))
            hint += f"; if git then refuses to go on, `git checkout -- {changed}` first: they come back after"
        return CommitOutcome(deferred=reason, hint=hint)
    pending = [p for p in pending_revisions(project) if not (revision.key and p.key == revision.key)]
    try:
        sha = _commit(project, revision, pending)
    except GitError as exc:
        from expertise_kit.versioning.git import NO_SPACE_HINT, short_of_space

        message, advice = exc.message, exc.hint
        if advice != NO_SPACE_HINT and short_of_space(project.git.git_dir):
            message, advice = f"no space left on device: {message}", NO_SPACE_HINT
        record_pending(project, revision, exc.stderr.strip().splitlines()[0] if exc.stderr.strip() else str(exc))
        hint = f"{advice or 'fix that'}, then run `expertise history --sync`"
        return CommitOutcome(deferred=message, hint=hint)
    except GitMissing:  # no git to run: the file is written, the revision waits for git
        reason = "git is not available"
        record_pending(project, revision, reason)
        return CommitOutcome(deferred=reason, hint="install git, then run `expertise history --sync`")
    except OSError as exc:  # git could not be started (out of memory or processes): the revision waits
        reason = f"git could not be started: {exc.strerror or exc}"
        record_pending(project, revision, reason)
        return CommitOutcome(deferred=reason, hint="run `expertise history --sync` when that is fixed")
    _clear_pending(project)
    return CommitOutcome(sha=sha or None, synced=len(pending))


def sync_pending(project: Project) -> CommitOutcome:
    """Commit the deferred revisions on their own (``expertise history --sync``). Hold the write lock."""
    pending = pending_revisions(project)
    if not pending:
        return CommitOutcome()
    if project.git is None:
        return CommitOutcome(deferred="not a git repository", hint="run `git init` first")
    reason = busy_reason(project.git)
    if reason is not None:
        return CommitOutcome(deferred=reason, hint="finish or abort that first, then sync again")
    summary = Revision(
        domains=[],
        change=pending[0].change,
        subject=f"expertise: commit {len(pending)} deferred revision{'s' if len(pending) != 1 else ''}",
        paths=[],
    )
    try:
        sha = _commit(project, summary, pending)
    except GitError as exc:
        return CommitOutcome(deferred=str(exc), hint="fix that, then sync again")
    except GitMissing as exc:
        return CommitOutcome(deferred=exc.message, hint=exc.hint or "")
    except OSError as exc:
        return CommitOutcome(deferred=f"git could not be started: {exc.strerror or exc}", hint="sync again then")
    _clear_pending(project)
    return CommitOutcome(sha=sha or None, synced=len(pending))


def ignored_by_git(project: Project, paths: list[str]) -> list[str]:
    """Those of ``paths`` (relative to the work tree's top) that git ignores and doesn't track: ``git add``
    would refuse them."""
    assert project.git is not None
    if not paths:
        return []
    result = run_git(project.git.toplevel, ["check-ignore", "--", *paths], check=False)
    if result.status not in (0, 1):
        raise GitError(["check-ignore", "--", *paths], result.status, result.stdout, result.stderr)
    return [name for name in result.stdout.splitlines() if name]


def commit_exported(project: Project, paths: list[str], subject: str, trailers: dict[str, str]) -> CommitOutcome:
    """Commit exactly ``paths`` (relative to the work tree's top), as they are on disk, and nothing else:
    files outside ``.expertise/`` that ``expertise export --commit`` wrote or removed. Like a revision, it
    is a ``commit --only``, so the user's staged changes stay staged and out of it; unlike one, no deferred
    revision rides along, and nothing is deferred: the caller checked that git can take a commit now.

    A path that is neither on disk nor known to git (a file an earlier export wrote and a later one removed,
    never committed) is left out; new files are staged first, since ``--only`` takes only known paths.
    """
    assert project.git is not None
    identity = _identity(project.git)
    if identity is None:
        raise UserError("git has no user identity", hint="set user.name and user.email, then export again")
    toplevel = Path(os.path.realpath(project.git.toplevel))
    listed = run_git(toplevel, ["ls-files", "-z", "--", *paths]).stdout
    tracked = {name for name in listed.split("\0") if name}
    present = [p for p in paths if p in tracked or os.path.lexists(toplevel / p)]
    if not present:
        return CommitOutcome()
    new = [p for p in present if p not in tracked]
    if new:
        run_git(toplevel, ["add", "--", *new])
    if run_git(toplevel, ["diff", "--quiet", "HEAD", "--", *present], check=False).status == 0:
        return CommitOutcome()  # already committed as it is
    message = _one_line(subject) + "\n\n"
    message += "".join(f"{TRAILER_PREFIX}{key}: {trailer_value(value)}\n" for key, value in trailers.items())
    args = ["commit", "--only", "--no-verify", "--no-edit", "--quiet", "--cleanup=verbatim"]
    args.append(f"--author=expertise_kit (on behalf of {identity[0]}) <{identity[1]}>")
    return CommitOutcome(sha=_commit_only(project.git, toplevel, args, present, message) or None)
