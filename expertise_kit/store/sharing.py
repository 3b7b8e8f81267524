"""``expertise sync``: share the shared layer (``refs/expertise/shared``) with the project's remote.

Fetch the remote's layer (``versioning.sharesync``), check it as a write is checked, take it in under the
write lock (nothing to do, a fast-forward, or an entry-by-entry merge in which tombstones beat entries),
retire the lessons of this clone's deleted branches, rebuild the render cache for what changed, and push.
A push the remote refuses because someone pushed first starts again from the fetch, a few times with a
growing pause. Branches are never touched: clones share lessons without merging anything.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from expertise_kit.errors import UserError
from expertise_kit.project import GitLocation, Project
from expertise_kit.versioning import sharesync
from expertise_kit.versioning.shared import (
    SHARED_REF,
    _git,
    _parsed,
    fold_origins,
    git_plumbing,
    publish,
    read_blob,
    read_ref,
    shared_files,
    tree_path,
    update_ref,
    write_state,
)
from expertise_kit.versioning.sharesync import SyncOutcome

if TYPE_CHECKING:
    from expertise_kit.store import Store

__all__ = ["sync_shared", "check_layer"]

_ATTEMPTS = 6


def _refuse(remote: str, commit: str, where: str, problem: str) -> UserError:
    return UserError(
        f"refused {remote}'s {SHARED_REF} at {commit[:12]}: {where}: {problem}",
        hint="the local layer is kept; ask who pushed it, or reset the remote's ref (docs/sharing.md)",
    )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _value_problem(value: str) -> str | None:
    """The write path's own checks on one string: size and control characters (``store.value_problem``),
    invisible characters every writer strips, and secrets the scrubber would have replaced."""
    from expertise_kit.fast.render import strip_controls
    from expertise_kit.learning.redact import redact_counting
    from expertise_kit.store import value_problem

    problem = value_problem(value)
    if problem is not None:
        return problem
    if strip_controls(value) != value:
        return "contains invisible or control characters"
    found = redact_counting(value)[1]
    if found:
        return f"holds a secret ({', '.join(sorted(found))})"
    return None


def check_layer(project: Project, remote: str, theirs: str, ours: str | None, line_cap: int) -> None:
    """Check a fetched layer as a write is checked, file by file (those that differ from ours): only domain
    files of this project and their ledgers; each file valid (schema), within the size and line cap; each
    string of each entry within the text limit, free of control characters and secrets. Raises a one-line
    ``UserError`` naming the ref, the file and the entry."""

    from expertise_kit.document.cap import count_lines
    from expertise_kit.document.domainfile import parse_domain_text
    from expertise_kit.document.entries import item_id, parse_item
    from expertise_kit.document.names import validate_domain_name
    from expertise_kit.document.yamlio import MAX_FILE_BYTES
    from expertise_kit.versioning.ledger import is_ledger, parse_ledger
    from expertise_kit.vocab import section_names

    git = project.git
    assert git is not None
    prefix = tree_path(project, project.expertise_dir) + "/"
    try:
        their_files = shared_files(git, theirs)
        our_files = shared_files(git, ours) if ours else {}
    except (ValueError, OSError) as exc:
        raise _refuse(remote, theirs, "its tree", str(exc)) from None
    for path, sha in sorted(their_files.items()):
        if our_files.get(path) == sha:
            continue  # the same bytes as ours: checked when they came in
        try:
            data = read_blob(git, sha)
        except (ValueError, OSError) as exc:
            raise _refuse(remote, theirs, path, str(exc)) from None
        if is_ledger(path):
            try:
                parse_ledger(data)
            except ValueError as exc:
                raise _refuse(remote, theirs, path, f"not a ledger: {exc}") from None
            continue
        name = path[len(prefix) :].removesuffix(".yaml") if path.startswith(prefix) else ""
        try:
            validate_domain_name(name)
        except UserError:
            raise _refuse(remote, theirs, path, "not a domain file of this project") from None
        if len(data) > MAX_FILE_BYTES:
            raise _refuse(remote, theirs, path, f"{len(data):,} bytes, over a domain file's {MAX_FILE_BYTES:,}")
        try:
            text = data.decode("utf-8")
            plain = parse_domain_text(text, Path(path), name).loaded.plain
        except UnicodeDecodeError:
            raise _refuse(remote, theirs, path, "not UTF-8") from None
        except UserError as exc:
            raise _refuse(remote, theirs, path, exc.message) from None
        if count_lines(text) > line_cap:
            raise _refuse(remote, theirs, path, f"{count_lines(text)} lines, over the line cap of {line_cap}")
        entries = {n: plain.get(n) or [] for n in section_names()}
        for section, items in entries.items():
            for index, raw in enumerate(items):
                try:
                    where = f"entry {item_id(section, parse_item(section, raw))}"
                except ValueError:
                    where = f"{section}[{index}]"
                for value in _strings(raw):
                    problem = _value_problem(value)
                    if problem is not None:
                        raise _refuse(remote, theirs, path, f"{where} {problem}")
        for key, value in plain.items():
            if key not in entries:
                for text_value in _strings(value):
                    problem = _value_problem(text_value)
                    if problem is not None:
                        raise _refuse(remote, theirs, path, f"key {key!r} {problem}")


def _incoming(git: GitLocation, before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """What changed in the layer's domain files, as entry lines: ``+ text``, ``- text``, ``~ text``."""
    from expertise_kit.versioning.entrydiff import diff_versions
    from expertise_kit.versioning.ledger import is_ledger

    found: dict[str, list[str]] = {}
    for path in sorted(set(before) | set(after)):
        if is_ledger(path) or before.get(path) == after.get(path):
            continue
        domain = path.rsplit("/", 1)[-1].removesuffix(".yaml")
        plains = []
        for sha in (before.get(path), after.get(path)):
            text = read_blob(git, sha).decode("utf-8", "replace") if sha else None
            plains.append(_parsed(git, text, Path(path), domain) if text is not None else None)
        marks = {"added": "+", "removed": "-", "changed": "~"}
        lines = [f"{marks[c.kind]} {' '.join(c.text.split())[:160]}" for c in diff_versions(path, *plains).changes]
        if lines:
            found[path] = lines
    return found


def sync_shared(store: Store, remote: str | None = None, *, push: bool = True) -> SyncOutcome:
    """Fetch, check, integrate and push the shared layer; retried when another clone pushed first.

    When the remote's layer was rewritten since this clone last synced it (reset, say by a CI job that
    refused a lesson), what it dropped since is dropped here too, by a three-way merge with that synced
    state as the base, and tombstoned; what this clone learned since is kept, and pushed on top.
    """
    project = store.project
    git = project.git
    if git is None:
        raise UserError("not a git repository, so there is no shared layer to sync", hint="run it in a git work tree")
    if store.config.shared == "off":
        raise UserError(
            "the shared layer is off (`shared: off` in .expertise/config.yaml)",
            hint="set `shared: read` to take the remote's lessons in, or `shared: on` to share them too",
        )
    push = push and store.config.shared_publish
    remote = remote or sharesync.default_remote(git)
    sharesync.valid_remote(git, remote)
    with git_plumbing():  # no budget here (the network dominates): git's own writers, every setting followed
        return _sync(store, git, remote, push)


def _sync(store: Store, git: GitLocation, remote: str, push: bool) -> SyncOutcome:
    project = store.project
    outcome = SyncOutcome(remote=remote, read_only=not store.config.shared_publish)
    for attempt in range(1, _ATTEMPTS + 1):
        outcome.attempts = attempt
        theirs = sharesync.fetch(git, remote)
        outcome.theirs = theirs
        with store.locked():
            actual = ours = read_ref(git)
            if attempt == 1:
                outcome.before = ours
            if ours is not None and _git(git, ["cat-file", "-t", ours], check=False).decode().strip() != "commit":
                ours = None  # ours names no commit: theirs replaces it (the swap below still checks the old value)
            elif ours is not None and store.config.shared_publish:
                actual = ours = fold_origins(git) or ours  # the branches behind our lessons travel with them
            if theirs is not None:
                check_layer(project, remote, theirs, ours, store.config.line_cap)
            last = sharesync.read_named(git, sharesync.synced_ref(remote))
            reset = sharesync.rewritten(git, theirs, last)
            new, how, merged, removed = sharesync.integrate(
                git, ours, theirs, line_cap=store.config.line_cap, remote=remote, base=last if reset else None
            )
            if reset:
                how = "reset"
            if new is not None and new != actual:
                if not update_ref(git, new, actual, f"expertise sync: {how} {remote}"):
                    continue  # moved under us (a git command outside our lock): start again
                write_state(git, new, shared_files(git, new))
            if new is not None and store.config.shared_publish:
                new = _retire(store, new) or new
            if new is not None and new != actual:
                before, after = shared_files(git, ours), shared_files(git, new)
                for path, lines in _incoming(git, before, after).items():
                    outcome.incoming.setdefault(path, [])
                    outcome.incoming[path] += [line for line in lines if line not in outcome.incoming[path]]
                _refresh_cache(store, before, after)
            sharesync.note_synced(git, remote, theirs)
            outcome.after = new
            if how != "unchanged":
                outcome.how = how
            outcome.merged_files += [m for m in merged if m not in outcome.merged_files]
            outcome.removed += removed
        if not push or new is None or new == theirs:
            return outcome
        if sharesync.push(git, remote, new):
            with store.locked():
                sharesync.note_synced(git, remote, new)
            outcome.pushed = True
            return outcome
        time.sleep(random.uniform(0.05, 0.2) * attempt)
    raise UserError(
        f"{remote}'s {SHARED_REF} kept moving while we pushed ({_ATTEMPTS} attempts)",
        hint="run `expertise sync` again",
    )


def _retire(store: Store, commit: str) -> str | None:
    """Retire, on top of ``commit``, the lessons of this clone's branches deleted past the grace period (and
    what this branch removed by other means since it last published); the new commit, or None."""
    project = store.project
    published = publish(
        project, {}, message="expertise(shared): retire the lessons of deleted branches\n",
        line_cap=store.config.line_cap, retire_days=store.config.shared_retire_days,
    )  # fmt: skip
    return published.commit


def _refresh_cache(store: Store, before: dict[str, str], after: dict[str, str]) -> None:
    """Rebuild this worktree's render cache for the domains whose shared file changed."""
    from expertise_kit.store.cachebuild import refresh_domains

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
