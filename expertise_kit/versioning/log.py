"""Reading the audit trail: revisions of ``.expertise/`` from one ``git log``, described by trailers.

Our commits carry ``Expertise-*`` trailers naming the domains, change type, session and the ids of the
entries added and removed, so listing 10,000 revisions needs no YAML parsing at all. Commits made by
hand carry none; for those the entry changes are worked out by comparing the two versions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from expertise_kit.document.yamlio import MAX_FILE_BYTES, decode_text
from expertise_kit.errors import UserError
from expertise_kit.project import Project
from expertise_kit.versioning.commit import TRAILER_PREFIX, pending_revisions
from expertise_kit.versioning.git import GitError, open_repo, run_git

__all__ = ["HistoryRow", "read_history", "read_file_at", "read_version", "domain_files_in", "pathspec"]

_FIELD = "\x1f"
_RECORD = "\x1e"
_FORMAT = _FIELD.join(["%H", "%ct", "%an", "%s", "%P", "%(trailers:only,unfold)"]) + _RECORD


@dataclass
class HistoryRow:
    commit: str  # "" for a deferred revision not yet committed
    time: str
    author: str
    subject: str
    domains: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    added: list[str] | None = field(default_factory=list)  # None: not recorded (a commit made by hand)
    removed: list[str] | None = field(default_factory=list)
    reverts: str | None = None
    by_hand: bool = False
    deferred: bool = False
    branch: str | None = None  # the shared layer's revisions: the branch it came from
    source: str | None = None  # ... and that branch's commit
    removals: list[dict[str, str]] = field(default_factory=list)  # the shared layer's: entries it took out, why
    parents: list[str] = field(default_factory=list)
    pruned: list[dict[str, Any]] | None = None  # what the merge this commit finished pruned at the cap

    def as_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit or None,
            "time": self.time,
            "author": self.author,
            "subject": self.subject,
            "domains": self.domains,
            "change": self.changes[0] if len(self.changes) == 1 else self.changes,
            "sessions": self.sessions,
            "added": self.added,
            "removed": self.removed,
            "reverts": self.reverts,
            "by_hand": self.by_hand,
            "deferred": self.deferred,
            **({"branch": self.branch, "source": self.source} if self.branch is not None else {}),
            **({"removals": self.removals} if self.removals else {}),
            **({"pruned": self.pruned} if self.pruned is not None else {}),
        }


def pathspec(project: Project, domain: str | None) -> str:
    assert project.git is not None
    directory = project.expertise_dir.relative_to(project.git.toplevel).as_posix()
    return f"{directory}/{domain}.yaml" if domain else f"{directory}/"


def _parse_trailers(block: str, row: HistoryRow) -> None:
    for line in block.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not key.startswith(TRAILER_PREFIX):
            continue
        name = key[len(TRAILER_PREFIX) :].lower()
        if name == "domain":
            row.domains.append(value)
        elif name == "change":
            row.changes.append(value)
        elif name == "session":
            row.sessions.append(value)
        elif name == "added" and row.added is not None:
            row.added.extend(value.split())
        elif name == "removed" and row.removed is not None:
            row.removed.extend(value.split())
        elif name == "reverts":
            row.reverts = value
        elif name == "branch":
            row.branch = value
        elif name == "commit":
            row.source = value
        elif name == "shared-removed":
            row.removals.append(_removal(value))


def _removal(value: str) -> dict[str, str]:
    """``<id> <cause> [branch]: text``, as ``versioning.shared`` writes it."""
    head, _, text = value.partition(": ")
    entry, _, rest = head.partition(" ")
    cause, _, branch = rest.partition(" ")
    return {"id": entry, "cause": cause, "branch": branch.strip("[]"), "text": text}


def _domain_of(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".yaml")


def read_history(
    project: Project, domain: str | None = None, limit: int | None = None, *, rev: str | None = None
) -> list[HistoryRow]:
    """Revisions newest first: the branch's (deferred ones first), or those of ``rev`` (the shared layer)."""
    rows: list[HistoryRow] = []
    for pending in reversed(pending_revisions(project)) if rev is None else []:
        if domain is None or domain in pending.domains:
            rows.append(
                HistoryRow(
                    commit="",
                    time=pending.time,
                    author="(not yet committed)",
                    subject=pending.subject,
                    domains=pending.domains,
                    changes=[pending.change],
                    sessions=list(pending.sessions),
                    added=[line.split(" ", 1)[0] for line in pending.added],
                    removed=[line.split(" ", 1)[0] for line in pending.removed],
                    deferred=True,
                )
            )
    if project.git is None:
        return rows[:limit] if limit else rows
    args = ["log", f"--format={_FORMAT}", "--no-color"]
    if limit:
        args.append(f"-n{limit}")
    with open_repo(project.git.toplevel) as repo:
        if not (project.git.git_dir / "HEAD").exists():
            return rows
        if rev is not None:
            args.append(rev)
        paths = [pathspec(project, domain)]
        if rev is not None and domain is None:
            from expertise_kit.versioning.ledger import LEDGER_DIR

            paths.append(f"{LEDGER_DIR}/")  # a shared revision may change only what it removed (tombstones)
        result = run_git(repo, [*args, "--", *paths], check=False)
        if result.status != 0:
            if "does not have any commits" in result.stderr or "bad default revision" in result.stderr:
                return rows  # an unborn branch has no log yet
            raise GitError(["log"], result.status, result.stdout, result.stderr, cwd=project.git.toplevel)
        hand_made: list[HistoryRow] = []
        for record in result.stdout.split(_RECORD):
            record = record.strip("\n")
            if not record:
                continue
            sha, stamp, author, subject, parents, trailers = (record.split(_FIELD) + [""] * 6)[:6]
            moment = datetime.fromtimestamp(int(stamp), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            row = HistoryRow(commit=sha, time=moment, author=author, subject=subject, parents=parents.split())
            _parse_trailers(trailers, row)
            if not row.changes:
                row.by_hand = True
                row.changes = ["manual"]
                row.added, row.removed = None, None
                hand_made.append(row)
            rows.append(row)
        if hand_made:
            _fill_hand_made(project, repo, hand_made, domain)
        if rev is None:
            rows[:0] = _attach_merge_prunes(project, repo, rows, domain)
    return rows[:limit] if limit else rows


def _attach_merge_prunes(project: Project, repo: Any, rows: list[HistoryRow], domain: str | None) -> list[HistoryRow]:
    """Put what the merge driver pruned on the commits that finished those merges (``mergerecord``);
    returns a row for each prune of a merge still open."""
    from expertise_kit.versioning.busy import head_sha
    from expertise_kit.versioning.mergerecord import merge_in_progress, merge_prunes

    assert project.git is not None
    records = [r for r in merge_prunes(project.git) if domain is None or r.domain == domain]
    if not records:
        return []
    children: dict[str, list[HistoryRow]] = {}
    for row in rows:
        if row.parents:
            children.setdefault(row.parents[0], []).append(row)
    head = head_sha(project.git) or run_git(repo, ["rev-parse", "-q", "--verify", "HEAD"], check=False).stdout.strip()
    open_merge = merge_in_progress(project.git)
    pending: dict[str, HistoryRow] = {}
    for record in records:
        found = None
        for row in children.get(record.head, []):
            if record.source and record.source in row.parents[1:]:
                found = row
                break
            blob = run_git(repo, ["rev-parse", "-q", "--verify", f"{row.commit}:{record.path}"], check=False)
            if blob.stdout.strip() == record.blob:
                found = row
                break
        if found is None and open_merge and record.head == head and record.worktree in ("", str(project.git.git_dir)):
            found = pending.get(record.path)
            if found is None:
                found = pending[record.path] = HistoryRow(
                    commit="", time=record.time, author="(merge in progress)", deferred=True,
                    subject=f"merging {record.path}: entries pruned at the {record.cap}-line cap",
                    domains=[record.domain], changes=["merged"], added=None, removed=None,
                )  # fmt: skip
            found.pruned = []  # a merge tried again on the same HEAD: its latest prune stands
        if found is None:
            continue  # abandoned (`git merge --abort`), or its commit is past this listing
        if "pruned" not in found.changes:
            found.changes.append("pruned")
        kept = found.pruned if found.pruned is not None else []
        seen = {p.get("id") for p in kept}
        found.pruned = [*kept, *(p for p in record.pruned if p.get("id") not in seen)]
    return list(pending.values())


def read_file_at(repo: Any, rev: str, path: str) -> str | None:
    """A file's text at ``rev`` through GitPython's object model, or None if it isn't there."""
    try:
        blob = repo.commit(rev).tree / path
    except KeyError:
        return None
    data: bytes = blob.data_stream.read()
    return data.decode("utf-8", errors="replace")


def read_version(repo: Any, rev: str, path: str) -> dict[str, Any] | None:
    """Plain data of ``path`` as of ``rev``, or None if it isn't there.

    A version that can't be read (bad YAML, a value Python can't build, not UTF-8, too big) raises one
    ``UserError`` naming the revision and the file: once committed, such a version stays in history even
    after the file is fixed, so the message must say which version it is and how to look at it.
    """
    short = rev[:12]
    hint = f"that version can't be read; look at it with `git show {short}:{path}`"
    try:
        blob = repo.commit(rev).tree / path
    except KeyError:
        return None
    if blob.type != "blob":
        raise UserError(f"as of {short}: is a {blob.type}, not a file", path=path, hint=hint)
    if blob.size > MAX_FILE_BYTES:
        raise UserError(
            f"as of {short}: is {blob.size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit", path=path, hint=hint
        )
    try:
        # Here, not at the top: listing history reads trailers only, and the entry model costs ~120 ms.
        from expertise_kit.versioning.entrydiff import parse_version

        return parse_version(decode_text(blob.data_stream.read(), Path(path)), path)
    except UserError as exc:
        raise UserError(f"as of {short}: {exc.message}", path=path, line=exc.line, hint=hint) from None


def domain_files_in(paths: list[str], project: Project) -> list[str]:
    assert project.git is not None
    prefix = pathspec(project, None)
    return [
        p
        for p in paths
        if p.startswith(prefix)
        and p.endswith(".yaml")
        and "/" not in p[len(prefix) :]
        and not p.endswith("/config.yaml")
    ]


def _fill_hand_made(project: Project, repo: Any, rows: list[HistoryRow], domain: str | None) -> None:
    """Work out domains and entry changes of commits that carry no trailers."""
    # Here, not at the top: only hand-made commits need the entry model (~120 ms to import).
    from expertise_kit.versioning.entrydiff import diff_versions

    for row in rows:
        listed = run_git(
            repo,
            ["diff-tree", "-r", "--root", "--no-commit-id", "--name-only", row.commit, "--", pathspec(project, domain)],
        )
        files = domain_files_in(listed.stdout.split("\n"), project)
        row.domains = [_domain_of(p) for p in files]
        added: list[str] = []
        removed: list[str] = []
        try:
            parents = repo.commit(row.commit).parents
            for path in files:
                before = read_version(repo, parents[0].hexsha, path) if parents else None
                after = read_version(repo, row.commit, path)
                for change in diff_versions(path, before, after).changes:
                    if change.kind == "added":
                        added.append(change.id)
                    elif change.kind == "removed":
                        removed.append(change.id)
        except UserError:
            continue  # a version that can't be read: its entry changes stay unknown ("?" in the listing)
        row.added, row.removed = added, removed


def last_revisions(project: Project, domains: list[str], depth: int = 5000) -> dict[str, HistoryRow]:
    """The newest commit touching each domain file, from one `git log` (at most ``depth`` commits back)."""
    if project.git is None or not (project.git.git_dir / "HEAD").exists():
        return {}
    wanted = {pathspec(project, name): name for name in domains}
    found: dict[str, HistoryRow] = {}
    with open_repo(project.git.toplevel) as repo:
        form = f"--format={_RECORD}%H{_FIELD}%ct{_FIELD}%s"
        log = run_git(
            repo, ["log", f"-n{depth}", "--name-only", form, "--", pathspec(project, None)], check=False
        ).stdout
    for record in log.split(_RECORD)[1:]:
        head, _, names = record.partition("\n")
        sha, stamp, subject = (head.split(_FIELD) + ["", "", ""])[:3]
        for name in names.split("\n"):
            domain = wanted.get(name.strip())
            if domain and domain not in found:
                moment = datetime.fromtimestamp(int(stamp), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
                found[domain] = HistoryRow(commit=sha, time=moment, author="", subject=subject)
        if len(found) == len(wanted):
            break
    return found
