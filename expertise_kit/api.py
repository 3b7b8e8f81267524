"""The Python API: one project's expertise, as the CLI's ``--json`` prints it (see docs/api.md).

``Expertise(path)`` opens the project holding ``path``. Each method does what its command does, through the
same machinery, and returns what that command's ``--json`` prints, as plain JSON data (times are ISO
strings ending in ``Z``): the commands print these dicts, and ``expertise serve`` sends them, so the three
agree by construction. Writes go through ``Store.transaction()`` like every other write; bad input raises
``UserError`` (``UnknownDomain`` for a domain the config does not name, ``LockTimeout`` when another writer
held the lock past ``lock_timeout``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from expertise_kit import clock
from expertise_kit.errors import FileMissing, UserError
from expertise_kit.project import Project, find_project

if TYPE_CHECKING:
    from expertise_kit.store import Store, WriteResult
    from expertise_kit.store.feedback import FeedbackResult
    from expertise_kit.store.revert import RevertResult
    from expertise_kit.versioning.commit import CommitOutcome
    from expertise_kit.versioning.entrydiff import FileDiff

__all__ = ["Expertise", "JSONObject", "jsonable"]

JSONObject = dict[str, Any]
_Rows = list[JSONObject]
_T = TypeVar("_T")


def jsonable(value: _T) -> _T:
    """``value`` with datetimes as the CLI prints them (ISO, ``Z``) and paths as strings, recursively.

    Typed as its argument: the containers keep their shape, and only leaves typed ``Any`` change type.
    """
    return cast(_T, _plain(value))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def commit_fields(outcome: CommitOutcome | None) -> JSONObject:
    """A write's commit: its hash, or null and why it was deferred (git busy: a rebase, a merge, index.lock)."""
    if outcome is None or outcome.sha:
        return {"commit": outcome.sha if outcome else None, "deferred": None}
    return {"commit": None, "deferred": f"{outcome.deferred}; {outcome.hint}" if outcome.hint else outcome.deferred}


def add_record(result: WriteResult, store: Store, section: str, redacted: dict[str, int]) -> JSONObject:
    """What ``expertise add --json`` prints for ``result``."""
    record: JSONObject = {"domain": result.domain, "section": section, "path": store.relative(result.path)}
    if result.duplicates:
        record.update(id=result.duplicates[0], added=False)
    else:
        record.update(id=result.added[0] if result.added else None, added=bool(result.added))
    record["redacted"] = redacted
    record["pruned"] = [{"id": p.id, "section": p.section, "text": p.text, "learned": p.learned} for p in result.pruned]
    record["over_cap_by"] = result.over_by
    record.update(commit_fields(result.commit))
    return record


def feedback_record(result: FeedbackResult) -> JSONObject:
    """What ``expertise feedback --json`` prints for ``result``."""
    return {
        "domain": result.domain,
        "id": result.entry,
        "section": result.section,
        "text": result.text,
        "verdict": result.verdict,
        "count": result.count,
        "commit": result.commit.sha if result.commit else None,
    }


def revert_record(result: RevertResult) -> JSONObject:
    """What ``expertise revert --json`` prints for ``result``."""
    return {
        "reverted": result.sha,
        "subject": result.subject,
        "files": result.files,
        "added": result.added,
        "removed": result.removed,
        **commit_fields(result.commit),
    }


def diff_records(diffs: list[FileDiff]) -> _Rows:
    """What ``expertise diff --json`` prints for ``diffs``."""
    return jsonable(
        [
            {
                "path": d.path,
                "created": d.created,
                "deleted": d.deleted,
                "entries": [
                    {"change": c.kind, "id": c.id, "section": c.section, "before": c.before, "after": c.after}
                    for c in d.changes
                ],
                "keys": {k: {"before": b, "after": a} for k, (b, a) in d.keys.items()},
            }
            for d in diffs
        ]
    )


def scrub_entry(
    text: str, error: str | None, solution: str | None
) -> tuple[str, str | None, str | None, dict[str, int]]:
    """An entry's fields with secrets scrubbed (git history is forever), and how many of each kind went."""
    from expertise_kit.learning.redact import redact_counting

    found: dict[str, int] = {}
    cleaned: list[str | None] = []
    for value in (text, error, solution):
        if value is None:
            cleaned.append(None)
            continue
        clean, counts = redact_counting(value)
        cleaned.append(clean)
        for kind, count in counts.items():
            found[kind] = found.get(kind, 0) + count
    return cleaned[0] or "", cleaned[1], cleaned[2], dict(sorted(found.items()))


def add_entry(
    store: Store,
    domain: str,
    section: str,
    text: str,
    *,
    error: str | None = None,
    solution: str | None = None,
    session: str | None = None,
) -> tuple[WriteResult, dict[str, int]]:
    """An entry added as one revision, scrubbed first; and the secrets scrubbed, by kind. Hand-written, or
    with ``session``, written by the agent of that session (``source: agent``, docs/reflect.md)."""
    from expertise_kit.document.names import normalise_section
    from expertise_kit.store import manual_item

    key = normalise_section(section)
    if (error or solution) and key != "learned_from_failures":
        raise UserError("error and solution only apply to learned_from_failures", hint="leave them out")
    text, error, solution, redacted = scrub_entry(text, error, solution)
    if session is not None:  # the agent's, for the team: no path of this machine, as the learner keeps none
        from expertise_kit.learning.portable import portable

        root = str(store.project.root)
        text = portable(text, root)
        error, solution = (None if v is None else portable(v, root) for v in (error, solution))
    item = manual_item(key, text, error=error, solution=solution)
    if session is None:
        return store.add_items(domain, [(key, item)]), redacted
    from expertise_kit.fast.hookinput import session_key
    from expertise_kit.learning.reflect import asked_candidates, lesson_words, note_written, one_lesson
    from expertise_kit.vocab import FILES, TEXT
    from expertise_kit.vocab import section as section_of

    if session_key({"session_id": session}) != session:
        raise UserError(
            f"{session[:80]!r} is not a session id",
            hint="pass the id the reflection request gave (letters, digits, -_.)",
        )
    moment = clock.iso(clock.now())
    kind = section_of(key).kind
    raw = {"path": item} if kind == FILES else {"text": item} if kind == TEXT else dict(item)
    raw.update({"source": "agent", "sessions": [session], "first_seen": moment, "last_seen": moment})
    expertise_dir = str(store.project.expertise_dir)
    shown, words = asked_candidates(expertise_dir, session), lesson_words(raw)
    result = store.add_agent_lesson(
        domain, key, raw, session,
        rewords=lambda section, entry, item: one_lesson(section, entry, lesson_words(item), words, shown),
    )  # fmt: skip
    if result.added:
        note_written(expertise_dir, session, result.added)
    return result, redacted


class Expertise:
    """The expertise of the project holding ``path`` (its ``.expertise/``; ``expertise init`` makes it).

    ``lock_timeout``: seconds a write waits for another writer before raising ``LockTimeout`` (default:
    the CLI's minute). The config is read again on every call, so edits to it while a server runs count.
    Calls may come from several threads: each write takes the cross-process write lock.
    """

    def __init__(self, path: str | os.PathLike[str] = ".", *, lock_timeout: float | None = None) -> None:
        self.project: Project = find_project(Path(path).resolve())
        self.lock_timeout = lock_timeout

    @property
    def root(self) -> Path:
        return self.project.root

    def store(self) -> Store:
        """A ``Store`` on the project, with the config as it is now: for what the methods do not cover."""
        from expertise_kit.store import Store

        return Store(self.project, lock_timeout=self.lock_timeout)

    # -- reading ---------------------------------------------------------------------------------

    def list(self) -> _Rows:
        """``expertise list --json``: one row per domain, with ``status`` ``ok``, ``missing`` or ``error``."""
        from expertise_kit.versioning.log import last_revisions

        store = self.store()
        rows: _Rows = []
        for name in store.config.domain_names:
            row: JSONObject = {
                "domain": name,
                "lines": None,
                "entries": None,
                "last_revision": None,
                "status": "ok",
                "error": None,
            }
            try:
                doc = store.load(name)
            except UserError as exc:
                status = "missing" if isinstance(exc, FileMissing) else "error"
                row.update(status=status, error=exc.one_line(store.project.root))
            else:
                row.update(lines=doc.line_count, entries=doc.entry_count)
            rows.append(row)
        revisions = last_revisions(store.project, [row["domain"] for row in rows])
        for row in rows:
            newest = revisions.get(row["domain"])
            if newest is not None:
                row["last_revision"] = {"commit": newest.commit, "time": newest.time, "subject": newest.subject}
        return rows

    def show(self, domain: str) -> JSONObject:
        """``expertise show DOMAIN --json``: every entry with its id and provenance."""
        from expertise_kit.document.entries import item_record

        store = self.store()
        doc = store.load(domain)
        model = doc.model
        return jsonable(
            {
                "domain": domain,
                "path": str(doc.path.relative_to(store.project.root)),
                "lines": doc.line_count,
                "line_cap": store.config.line_cap,
                "overview": model.overview,
                "last_validated": model.last_validated,
                "entries": [item_record(section, item) for section, _, item in doc.entries()],
                "extra": model.extra,
            }
        )

    def render(
        self,
        task: str = "",
        files: Sequence[str] = (),
        *,
        domains: Sequence[str] = (),
        max_chars: int | None = None,
    ) -> JSONObject:
        """``expertise render --json``: the markdown an agent reads before ``task`` (``text``), and why.

        With ``task`` or ``files``: the relevant entries of every domain, best first, within 2,000 characters;
        with neither, the project's essentials (1,500); with ``domains``, those domains whole (6,000).
        """
        from expertise_kit.fast.cache import read_fresh_cache
        from expertise_kit.fast.classify import classify, rules_from
        from expertise_kit.fast.render import DEFAULT_MAX_CHARS, render_section
        from expertise_kit.fast.retrieve import ESSENTIALS_CHARS, PROMPT_CHARS, essentials, for_prompt

        if max_chars is not None and max_chars < 200:
            raise UserError(f"max_chars {max_chars} is under 200", hint="give a budget of 200 characters or more")
        files = list(files)
        # The render cache, as the pre-task hook reads it: parsing the config is only needed to rebuild it.
        cache = read_fresh_cache(self.project.expertise_dir)
        if cache is None or domains:
            from expertise_kit.store.cachebuild import rebuild_cache

            store = self.store()
            for name in domains:
                store.path_for(name)
            cache = cache or rebuild_cache(store.project, store.config)
        classification = None
        everything = [d for d in cache["config"]["domains"] if not (cache["domains"].get(d) or {}).get("error")]
        now = clock.now().timestamp()
        if domains:
            budget = max_chars or DEFAULT_MAX_CHARS
            result = render_section(cache, list(domains), task=task, files=files, max_chars=budget)
        elif task or files:
            classification = classify(task, files, rules_from(cache["config"]["domains"]))
            routing = [classification.domain, *classification.secondary[:2]]
            budget = max_chars or PROMPT_CHARS
            result = for_prompt(cache, everything, task=task, files=files, routing=routing, max_chars=budget, now=now)
        else:
            result = essentials(cache, everything, max_chars=max_chars or ESSENTIALS_CHARS, now=now)
        data = result.as_json()
        data["classification"] = classification.as_json() if classification else None
        return data

    def history(self, domain: str | None = None, limit: int | None = None) -> _Rows:
        """``expertise history [DOMAIN] --json``: revisions newest first, deferred ones first of all."""
        from expertise_kit.document.names import validate_domain_name
        from expertise_kit.versioning.log import read_history

        if domain is not None:
            validate_domain_name(domain)  # not its membership: a domain since removed still has a history
        if limit is not None and limit < 1:
            raise UserError(f"limit {limit} is under 1", hint="give 1 or more")
        return jsonable([row.as_json() for row in read_history(self.project, domain, limit)])

    def diff(self, rev: str | None = None) -> _Rows:
        """``expertise diff [REV] --json``: the entry changes per file (no ``rev``: the files against HEAD)."""
        from expertise_kit.versioning.git import open_repo
        from expertise_kit.versioning.revspec import diffs_for

        if self.project.git is None:
            raise UserError("not a git repository, so there is nothing to compare", hint="run `git init`")
        with open_repo(self.project.git.toplevel) as repo:
            found = diffs_for(self.project, repo, rev)
        return diff_records(found or [])

    # -- writing ---------------------------------------------------------------------------------

    def add(
        self,
        domain: str,
        section: str,
        text: str,
        *,
        error: str | None = None,
        solution: str | None = None,
        session: str | None = None,
    ) -> JSONObject:
        """``expertise add --json``: a hand-written entry, scrubbed of secrets, as one revision; with
        ``session``, written by that session's agent (``source: agent``, docs/reflect.md)."""
        from expertise_kit.document.names import normalise_section

        store = self.store()
        result, redacted = add_entry(store, domain, section, text, error=error, solution=solution, session=session)
        return add_record(result, store, normalise_section(section), redacted)

    def learn(
        self, transcripts: Sequence[str | os.PathLike[str]], *, fmt: str = "auto", dry_run: bool = False
    ) -> JSONObject:
        """``expertise learn --json``: per domain what was added, updated and rejected; one commit per domain.

        A transcript that can't be read is named in ``errors`` and the others are still learned from.
        """
        from expertise_kit.learning.learn import learn_from

        report = learn_from(self.store(), [Path(p) for p in transcripts], fmt=fmt, dry_run=dry_run)
        return jsonable(report.as_json())

    def learn_text(
        self, text: str | bytes, *, name: str = "transcript.jsonl", fmt: str = "auto", dry_run: bool = False
    ) -> JSONObject:
        """``learn`` for a transcript held in memory, as if it were a file called ``name`` (a base name)."""
        label = Path(name).name
        if not label or label in (".", "..") or label != name or any(ord(ch) < 32 for ch in name):
            raise UserError(f"{name[:80]!r} is not a plain file name", hint="give a name such as session.jsonl")
        directory = Path(tempfile.mkdtemp(prefix="expertise-learn-"))
        try:
            path = directory / label
            path.write_bytes(text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)
            data = self.learn([path], fmt=fmt, dry_run=dry_run)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        # Said as the caller named it: the temporary copy is gone, and its path is this machine's business.
        return cast(JSONObject, _replace_prefix(data, str(directory) + os.sep, ""))

    def validate(self, domain: str | None = None, *, check: bool = False) -> _Rows:
        """``expertise validate [DOMAIN] --json``: corrections made (or, with ``check``, needed), one commit.

        With a ``domain``, a file that can't be validated raises; with none, every domain is validated and
        the first such error is raised after the others are done.
        """
        from expertise_kit.errors import Failures
        from expertise_kit.upkeep.validate import validate_domains

        store = self.store()
        if domain:
            store.path_for(domain)
        names = [domain] if domain else list(store.config.domain_names)
        reports, errors = validate_domains(store, names, check=check)
        if errors:
            raise errors[0] if domain else Failures(errors)
        return jsonable([report.as_json() for report in reports])

    def improve(self, domain: str | None = None, *, limit: int = 20, dry_run: bool = False) -> _Rows:
        """``expertise improve [DOMAIN] --json``: the files that matter to a domain, ranked, added to core_files."""
        from expertise_kit.upkeep.discovery import improve_domain

        if not 1 <= limit <= 200:
            raise UserError(f"limit {limit} is out of range", hint="give 1 to 200")
        store = self.store()
        names = [domain] if domain else [n for n in store.config.domain_names if store.config.domains[n].paths]
        return jsonable([improve_domain(store, name, limit=limit, dry_run=dry_run).as_json() for name in names])

    def revert(self, rev: str) -> JSONObject:
        """``expertise revert REV --json``: one revision undone as a new one; a clash raises, writing nothing."""
        from expertise_kit.store.revert import revert_revision

        return jsonable(revert_record(revert_revision(self.store(), rev)))

    def feedback(self, entry_id: str, verdict: str, note: str | None = None) -> JSONObject:
        """``expertise feedback ENTRY_ID --helpful|--harmful --json``; ``verdict`` is helpful or harmful."""
        from expertise_kit.store.feedback import record_feedback

        return feedback_record(record_feedback(self.store(), entry_id, verdict, note))


def _replace_prefix(value: Any, prefix: str, replacement: str) -> Any:
    if isinstance(value, str):
        return value.replace(prefix, replacement)
    if isinstance(value, dict):
        return {key: _replace_prefix(item, prefix, replacement) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace_prefix(item, prefix, replacement) for item in value]
    return value
