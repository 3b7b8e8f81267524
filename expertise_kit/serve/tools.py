"""The MCP tools as plain functions over one project: search, get, add, feedback.

Each does what the CLI does, through the same code: ``search`` ranks as the pre-task hook does
(``fast.retrieve.for_prompt`` over the render cache, routed by ``fast.classify``), ``get`` finds an entry
by id as ``feedback`` does and presents it as ``expertise show --json`` does, ``add`` and ``feedback`` write
through ``Store`` (one revision each, ``.expertise/`` paths only). Bad input raises ``UserError``; the
server turns it into a one-line tool error. What an agent sends is scrubbed of secrets before it is
written, as learned text is: an agent may paste a token into a lesson as easily as into a transcript.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from expertise_kit import clock
from expertise_kit.document.entries import item_record
from expertise_kit.document.names import normalise_section, validate_domain_name
from expertise_kit.errors import UserError
from expertise_kit.fast.cache import read_fresh_cache, signature
from expertise_kit.fast.classify import classify, rules_from
from expertise_kit.fast.render import MAX_PATH_CHARS, MAX_TASK_CHARS, MAX_TASK_FILES, strip_controls
from expertise_kit.fast.retrieve import for_prompt
from expertise_kit.learning.redact import redact_counting
from expertise_kit.project import find_project
from expertise_kit.store import Store, manual_item
from expertise_kit.store.cachebuild import rebuild_cache
from expertise_kit.store.feedback import MAX_NOTE_CHARS, VERDICTS, record_feedback
from expertise_kit.versioning.commit import CommitOutcome
from expertise_kit.vocab import FAILURES, FILES, section

__all__ = ["Tools", "MAX_LIMIT", "DEFAULT_LIMIT"]

MAX_LIMIT = 50
DEFAULT_LIMIT = 10
# Ranking is asked for everything above its relevance floor; ``limit`` cuts, not a character budget.
_NO_BUDGET = 1_000_000_000
_TEXT_KEYS = {FILES: "path", FAILURES: "issue"}


def _commit(outcome: CommitOutcome | None) -> dict[str, Any]:
    if outcome is None:
        return {"commit": None}
    if outcome.sha:
        return {"commit": outcome.sha}
    return {"commit": None, "deferred": f"{outcome.deferred}; {outcome.hint}" if outcome.hint else outcome.deferred}


def _entry_prefix(entry_id: str) -> str:
    """``entry_id`` as ``feedback`` reads it (4 or more hex characters of an id), checked."""
    wanted = entry_id.strip().lower()
    if not 4 <= len(wanted) <= 64 or any(ch not in "0123456789abcdef" for ch in wanted):
        raise UserError(f"{entry_id[:80]!r} is not an entry id", hint="give 4+ characters of an id from search")
    return wanted


def _no_controls(label: str, value: str) -> None:
    if any(ord(ch) < 32 and ch not in "\n\t" for ch in value):
        raise UserError(f"{label} contains control characters", hint="remove them")


class Tools:
    """The tools over the project found from ``start``. Calls are serialised: the SDK runs each on a worker
    thread, and the records below are shared."""

    def __init__(self, start: Path) -> None:
        self.start = start
        self._lock = threading.Lock()
        # Each domain's entries as plain records, kept while its file's (mtime, size, inode) is unchanged:
        # a long-running server parses a file again only after it changed.
        self._records: dict[str, tuple[list[int] | None, dict[str, dict[str, Any]]]] = {}

    def _store(self) -> Store:
        # Opened per call: the config (domains, caps) may change while the server runs.
        return Store(find_project(self.start))

    def _domain_records(self, store: Store, domain: str) -> dict[str, dict[str, Any]]:
        """The entries of ``domain`` by id, as ``show --json`` gives them (the first of a repeated id); none
        when its file can't be read (the commands that read it say why)."""
        path = store.project.domain_path(domain)
        stamp = signature(path)
        known = self._records.get(domain)
        if known is not None and stamp is not None and known[0] == stamp:
            return known[1]
        records: dict[str, dict[str, Any]] = {}
        try:
            doc = store.load(domain)
        except UserError:
            pass
        else:
            for name, _, item in doc.entries():
                record = item_record(name, item)
                records.setdefault(record["id"], record)
        self._records[domain] = (stamp, records)
        return records

    def warm(self) -> None:
        """Parse every domain file now, so the first search or get does not wait for it (150 ms a file at
        the cap); run on a thread at start, while the agent is still setting up."""
        with self._lock:
            store = self._store()
            for domain in store.config.domain_names:
                self._domain_records(store, domain)

    # -- search ----------------------------------------------------------------------------------

    def search(self, query: str, files: list[str] | None = None, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
        files = list(files or [])
        if not 1 <= limit <= MAX_LIMIT:
            raise UserError(f"limit {limit} is out of range", hint=f"give 1 to {MAX_LIMIT}")
        if len(query) > MAX_TASK_CHARS:
            raise UserError(
                f"query is {len(query):,} characters, over the {MAX_TASK_CHARS:,} limit", hint="say it shorter"
            )
        if len(files) > MAX_TASK_FILES:
            raise UserError(f"{len(files)} files given, over the {MAX_TASK_FILES} limit", hint="name fewer")
        for name in files:
            if len(name) > MAX_PATH_CHARS or not name.strip():
                raise UserError("a file path is empty or too long", hint=f"give paths of 1 to {MAX_PATH_CHARS:,}")
        if not query.strip() and not files:
            raise UserError("nothing to search for", hint="give a query (what the task is about) or files")
        with self._lock:
            return self._search(query, files, limit)

    def _search(self, query: str, files: list[str], limit: int) -> dict[str, Any]:
        store = self._store()
        cache = read_fresh_cache(store.project.expertise_dir) or rebuild_cache(store.project, store.config)
        everything = [d for d in cache["config"]["domains"] if not (cache["domains"].get(d) or {}).get("error")]
        classification = classify(query, files, rules_from(cache["config"]["domains"]))
        routing = [classification.domain, *classification.secondary[:2]]
        ranked = for_prompt(
            cache,
            everything,
            task=query,
            files=files,
            routing=routing,
            max_chars=_NO_BUDGET,
            now=clock.now().timestamp(),
        )
        results: list[dict[str, Any]] = []
        given: set[tuple[str, str]] = set()
        for entry in ranked.included:
            found = self._locate(store, ranked.domains, entry, given)
            if found is not None:
                results.append(found)
            if len(results) >= limit:
                break
        return {"classified_as": classification.domain, "results": results}

    def _locate(
        self, store: Store, domains: list[str], entry: str, given: set[tuple[str, str]]
    ) -> dict[str, Any] | None:
        """The search result for ``entry``: the first domain holding it that has not given it yet."""
        for domain in domains:
            if (domain, entry) in given:
                continue
            record = self._domain_records(store, domain).get(entry)
            if record is not None:
                given.add((domain, entry))
                return _result(domain, record)
        return None

    # -- get -------------------------------------------------------------------------------------

    def get(self, entry_id: str) -> dict[str, Any]:
        wanted = _entry_prefix(entry_id)
        with self._lock:
            store = self._store()
            found = [
                (domain, record)
                for domain in store.config.domain_names
                for entry, record in self._domain_records(store, domain).items()
                if entry.startswith(wanted)
            ]
            if not found:
                raise UserError(f"no entry {wanted!r} in any domain", hint="find ids with the search tool")
            if len(found) > 1:
                raise UserError(f"{wanted!r} matches {len(found)} entries", hint="give more of the id")
            domain, record = found[0]
            path = store.project.domain_path(domain).relative_to(store.project.root).as_posix()
            return {"domain": domain, "path": path, **record}

    # -- add -------------------------------------------------------------------------------------

    def add(
        self,
        domain: str,
        section_name: str,
        text: str,
        error: str | None = None,
        solution: str | None = None,
        session: str | None = None,
    ) -> dict[str, Any]:
        from expertise_kit.api import add_entry

        validate_domain_name(domain)
        key = normalise_section(section_name)
        # Checked as given first (sizes, control characters, a path outside the project), so a huge paste is
        # refused before it is scanned; then scrubbed and built again by the one add path.
        manual_item(key, text, error=error, solution=solution)
        with self._lock:
            store = self._store()
            result, redacted = add_entry(store, domain, key, text, error=error, solution=solution, session=session)
        relative = result.path.relative_to(store.project.root).as_posix()
        reply: dict[str, Any] = {"domain": domain, "section": key, "path": relative}
        if result.duplicates:
            reply.update({"id": result.duplicates[0], "added": False, "note": "already present; nothing changed"})
        else:
            reply.update({"id": result.added[0] if result.added else None, "added": bool(result.added)})
        reply["redacted"] = redacted
        reply.update(_commit(result.commit))
        if result.pruned:
            reply["pruned"] = [{"id": p.id, "section": p.section, "text": p.text[:200]} for p in result.pruned]
        if result.over_by:
            reply["over_cap_by"] = result.over_by
        return reply

    # -- feedback --------------------------------------------------------------------------------

    def feedback(self, entry_id: str, verdict: str, note: str | None = None) -> dict[str, Any]:
        if verdict not in VERDICTS:
            raise UserError(f"unknown verdict {verdict[:40]!r}", hint="say helpful or harmful")
        _entry_prefix(entry_id)
        if note is not None:
            if len(note) > MAX_NOTE_CHARS:
                raise UserError(f"the note is {len(note):,} characters, over {MAX_NOTE_CHARS}", hint="shorten it")
            _no_controls("note", note)
            note = redact_counting(note)[0]  # it goes into the commit message, and git history is forever
        with self._lock:
            result = record_feedback(self._store(), entry_id, verdict, note)
        return {
            "domain": result.domain,
            "id": result.entry,
            "section": result.section,
            "text": result.text,
            "verdict": result.verdict,
            "count": result.count,
            **_commit(result.commit),
        }


def _result(domain: str, record: dict[str, Any]) -> dict[str, Any]:
    """A search hit: what the entry says, with control characters gone (it is data, shown to a model)."""
    name = record["section"]
    key = _TEXT_KEYS.get(section(name).kind, "text")
    hit: dict[str, Any] = {"id": record["id"], "domain": domain, "section": name}
    hit["text"] = strip_controls(str(record.get(key) or ""))
    if section(name).kind == FAILURES:
        hit["error"] = strip_controls(str(record.get("error") or ""))
        hit["solution"] = strip_controls(str(record["solution"])) if record.get("solution") else None
    hit["source"] = record.get("source", "manual")
    for counter in ("recurrence", "helpful", "harmful"):
        if counter in record:
            hit[counter] = record[counter]
    return hit
