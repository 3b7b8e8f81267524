"""The three-way merge of one domain file, entry by entry, keyed by entry id.

Git's line merge conflicts whenever two branches append to the same list or both count a sighting of
one entry. Here each side's change since the common base is applied once:

- an entry added on either side is kept; one deleted on one side is dropped only if the other side left
  it unchanged (deleted on one side and changed on the other, it stays);
- an entry both sides saw again gets ``sightings.merge_sightings``: sessions as a union, recurrence and
  feedback counted once per session, the later ``last_seen``, the earlier ``first_seen``;
- any other field takes the side that changed it; both changing it differently is a true conflict. The
  entry then stays parseable with our version in place and both versions under ``conflict:``
  (``{ours: ..., theirs: ...}``), so every command still reads the file and ``validate --check`` flags it.
  A top-level value (``overview``) changed differently keeps ours, with both under a top-level
  ``conflict:`` mapping keyed by the value's name.

The result starts from our text and splices in what theirs changed (so our comments and layout stay
byte for byte); when git's plain line merge of the three texts is clean and holds exactly the same
entries, that text is used instead, which also keeps comments and positions from their side. The line
cap then holds on the merged file. Nothing here reads or writes files or runs git.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from expertise_kit.document.edits import Append, DeleteKey, Edit, Remove, Replace, SetKey, expected_data
from expertise_kit.document.plainentry import id_of, text_of
from expertise_kit.document.prune import PrunedEntry
from expertise_kit.document.sightings import merge_sightings
from expertise_kit.errors import UserError
from expertise_kit.lightdata import dataclass, field
from expertise_kit.vocab import FILES, SESSION_SOURCES, TEXT, section, section_names

TYPE_CHECKING = False  # typing, ruamel and pydantic cost the merge driver's quick path its start-up
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from expertise_kit.document.domainfile import DomainDoc

__all__ = [
    "CONFLICT_KEY",
    "EntryConflict",
    "DomainMerge",
    "LineMerge",
    "line_merge_text",
    "merge_domain_texts",
    "conflicts_in",
    "same_entries",
]

CONFLICT_KEY = "conflict"
_SIMILAR = 0.6  # the share of an entry's words its in-place rewrite must keep to count as an edit of it


@dataclass(frozen=True)
class EntryConflict:
    where: str  # an entry id, or a top-level key
    section: str  # "" for a top-level key
    text: str

    def describe(self) -> str:
        return f"{self.where} {self.section}: {self.text[:60]}" if self.section else f"top-level `{self.where}`"


@dataclass
class DomainMerge:
    text: str
    conflicts: list[EntryConflict] = field(default_factory=list)
    pruned: list[PrunedEntry] = field(default_factory=list)
    lines: int = 0
    over_by: int = 0
    kept_line_merge: bool = False  # git's line merge was clean and agreed, so its text was used
    plain: dict[str, Any] | None = None  # the merged file's data, as verified


class _Entry:
    """One entry of one version (a class of its own, not a dataclass: a merge at the cap makes a thousand)."""

    __slots__ = ("section", "index", "raw", "id", "text", "learned")

    def __init__(self, section: str, index: int, raw: Any, id: str, text: str, learned: bool) -> None:  # noqa: A002
        self.section, self.index, self.raw, self.id, self.text, self.learned = section, index, raw, id, text, learned


_Key = tuple[str, int]  # (entry id, which occurrence of it in its file): hand edits may repeat an id


def _entries(doc: DomainDoc | None) -> dict[_Key, _Entry]:
    found: dict[_Key, _Entry] = {}
    if doc is None:
        return found
    seen: dict[str, int] = {}
    plain = doc.loaded.plain
    for name in section_names():
        for index, raw in enumerate(plain.get(name) or []):
            entry = id_of(name, raw)  # the file is valid: the parsed item's id and text
            occurrence = seen.get(entry, 0)
            seen[entry] = occurrence + 1
            learned = isinstance(raw, dict) and raw.get("source") in SESSION_SOURCES
            found[(entry, occurrence)] = _Entry(name, index, raw, entry, text_of(name, raw), learned)
    return found


def _rewrites(base: dict[_Key, _Entry], side: dict[_Key, _Entry]) -> dict[_Key, _Key]:
    """Base entries a side rewrote in place (a hand edit changes the text, so the id): base key -> side key.

    Only a one-for-one replacement at the same position, with similar text and the same provenance,
    counts; anything else is a deletion and an addition, as the ids say.
    """
    pairs: dict[_Key, _Key] = {}
    for name in section_names():
        old = [k for k, e in base.items() if e.section == name]
        new = [k for k, e in side.items() if e.section == name]
        if all(k in side for k in old) or all(k in base for k in new):
            continue  # nothing gone, or nothing new: no pair below could count (and the matcher is slow)
        old.sort(key=lambda k: base[k].index)
        new.sort(key=lambda k: side[k].index)
        from difflib import SequenceMatcher  # here: only a side that dropped and added entries needs it

        matcher = SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "replace" or i2 - i1 != j2 - j1:
                continue
            for before, after in zip(old[i1:i2], new[j1:j2], strict=True):
                if before in side or after in base:
                    continue
                was, now = base[before], side[after]
                if was.learned != now.learned or not _provenance_kept(was.raw, now.raw):
                    continue
                if _kept_words(was.text, now.text) >= _SIMILAR:
                    pairs[before] = after
    return pairs


def _kept_words(before: str, after: str) -> float:
    """How much of an entry's wording survives in its rewrite: the share of its words still there."""
    old, new = set(before.lower().split()), set(after.lower().split())
    return len(old & new) / len(old) if old else 0.0


def _provenance_kept(before: Any, after: Any) -> bool:
    """A hand edit keeps the sessions; a fresh learning that took an old one's place brings new ones."""
    old = set(map(str, before.get("sessions") or [])) if isinstance(before, dict) else set()
    new = set(map(str, after.get("sessions") or [])) if isinstance(after, dict) else set()
    return new <= old


_ABSENT: Any = object()


def _as_mapping(name: str, raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    key = "path" if section(name).kind == FILES else "text" if section(name).kind == TEXT else "issue"
    return {key: raw}


def _pick(base: Any, ours: Any, theirs: Any, prefer: str | None = None) -> tuple[Any, bool]:
    """Three-way choice of one value: (value, conflicted). ``prefer="theirs"`` settles a conflict for theirs."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    if prefer == "theirs":
        return theirs, False
    return ours, True


def _merge_entry(name: str, base: Any, ours: Any, theirs: Any, prefer: str | None = None) -> tuple[Any, bool]:
    """One entry both sides changed since ``base`` (None: both added it). Returns (raw, conflicted)."""
    if isinstance(ours, str) and isinstance(theirs, str):
        if prefer == "theirs":
            return theirs, False
        return {**_as_mapping(name, ours), CONFLICT_KEY: {"ours": ours, "theirs": theirs}}, True
    a, b = _as_mapping(name, ours), _as_mapping(name, theirs)
    o = _as_mapping(name, base) if base is not None else None
    merged: dict[str, Any] = {}
    conflicted = False
    learned = a.get("source") in SESSION_SOURCES or b.get("source") in SESSION_SOURCES
    provenance = merge_sightings(o, a, b)
    for key in [*a, *(k for k in b if k not in a)]:
        if key in provenance:
            merged[key] = provenance[key]
            continue
        va, vb = a.get(key, _ABSENT), b.get(key, _ABSENT)
        vo = o.get(key, _ABSENT) if o is not None else _ABSENT
        if learned and key == "solution" and vo in (_ABSENT, None, "") and va not in (_ABSENT, None, ""):
            value, clash = va, False  # a fix learned on each side: the first known stays, as add_sighting does
        elif learned and o is None:
            # Learned in two clones from different sessions, worded differently: as when one store sees
            # it again, the wording it first had stays. Only hand edits of a common base conflict.
            value, clash = (va if va is not _ABSENT else vb), False
        else:
            value, clash = _pick(vo, va, vb, prefer)
        conflicted = conflicted or clash
        if value is not _ABSENT:
            merged[key] = value
    for key, value in provenance.items():
        merged.setdefault(key, value)  # a count both sides left at its default may now be past it
    if conflicted:
        return {**a, CONFLICT_KEY: {"ours": ours, "theirs": theirs}}, True
    return merged, False


@dataclass
class _Plan:
    edits: list[Edit] = field(default_factory=list)
    conflicts: list[EntryConflict] = field(default_factory=list)
    prefer: str | None = None  # "theirs": a true conflict takes theirs, unmarked (the shared layer)


def _plan_entries(base: DomainDoc | None, ours: DomainDoc, theirs: DomainDoc, plan: _Plan) -> None:
    o, a, b = _entries(base), _entries(ours), _entries(theirs)
    a_rewrites, b_rewrites = _rewrites(o, a), _rewrites(o, b)
    a_of = {k: a_rewrites.get(k, k) for k in o}
    b_of = {k: b_rewrites.get(k, k) for k in o}
    claimed_a, claimed_b = set(a_of.values()), set(b_of.values())
    for key, old in o.items():
        mine, yours = a.get(a_of[key]), b.get(b_of[key])
        _plan_one(old, mine, yours, plan)
    for key, yours in b.items():
        if key in claimed_b:
            continue
        mine = a.get(key) if key not in claimed_a else None
        _plan_one(None, mine, yours, plan)


def _value(entry: _Entry | None) -> Any:
    return None if entry is None else (entry.section, entry.raw)


_COUNTERS = (("recurrence", 1), ("helpful", 0), ("harmful", 0))


def _counter(raw: Any, key: str, default: int) -> int:
    value = raw.get(key, default) if isinstance(raw, dict) else default
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _counts_twice(old: _Entry | None, mine: _Entry | None, yours: _Entry | None) -> bool:
    """Both sides made the very same change to an entry, and it raised a counter: two verdicts (or two
    sightings) on two branches are two, so the change is merged, not taken once. A session both sides
    added is still counted once (``merge_sightings``)."""
    if old is None or mine is None or yours is None or mine.section != yours.section:
        return False
    return any(_counter(mine.raw, key, default) > _counter(old.raw, key, default) for key, default in _COUNTERS)


def _plan_one(old: _Entry | None, mine: _Entry | None, yours: _Entry | None, plan: _Plan) -> None:
    if _value(yours) == _value(old):
        return  # ours already holds the result
    if _value(mine) == _value(yours) and (plan.prefer is not None or not _counts_twice(old, mine, yours)):
        # Both sides made the same change, and no counter rose: once is the result. The shared layer
        # (``prefer``) applies one worktree's change to a file that may hold it already: once, there too.
        return
    if _value(mine) == _value(old) or mine is None:
        # Only theirs changed it (or we deleted what they changed: a change beats a deletion).
        if yours is None:
            assert mine is not None
            plan.edits.append(Remove(mine.section, mine.index))
        else:
            _put(mine, yours.section, yours.raw, plan)
        return
    if yours is None:
        return  # they deleted what we changed: ours stays
    base_raw = old.raw if old is not None else None
    raw, conflicted = _merge_entry(mine.section, base_raw, mine.raw, yours.raw, plan.prefer)
    if conflicted:
        plan.conflicts.append(EntryConflict(mine.id, mine.section, mine.text))
    target = mine.section if old is None or mine.section != old.section else yours.section
    if (target, raw) != _value(mine):
        _put(mine, target, raw, plan)


def _put(mine: _Entry | None, name: str, raw: Any, plan: _Plan) -> None:
    if mine is not None and mine.section == name:
        plan.edits.append(Replace(name, mine.index, raw))
        return
    if mine is not None:
        plan.edits.append(Remove(mine.section, mine.index))
    plan.edits.append(Append(name, raw))


def _plan_keys(base: DomainDoc | None, ours: DomainDoc, theirs: DomainDoc, plan: _Plan) -> None:
    """Top-level values other than the sections: ``overview``, ``last_validated``, unknown keys."""
    sections = set(section_names())
    o = {k: v for k, v in (base.loaded.plain if base else {}).items() if k not in sections}
    a = {k: v for k, v in ours.loaded.plain.items() if k not in sections}
    b = {k: v for k, v in theirs.loaded.plain.items() if k not in sections}
    clashes: dict[str, Any] = {}
    for key in [*a, *(k for k in b if k not in a)]:
        if key == CONFLICT_KEY:
            continue
        va, vb, vo = a.get(key, _ABSENT), b.get(key, _ABSENT), o.get(key, _ABSENT)
        if key == "last_validated" and va not in (_ABSENT, None) and vb not in (_ABSENT, None):
            value, clash = max(va, vb, key=str), False  # validated on both sides: the later run stands
        else:
            value, clash = _pick(vo, va, vb, plan.prefer)
        if clash:
            clashes[key] = {"ours": None if va is _ABSENT else va, "theirs": None if vb is _ABSENT else vb}
            plan.conflicts.append(EntryConflict(key, "", str(va)))
        elif value is _ABSENT:
            plan.edits.append(DeleteKey(key))
        elif value != va:
            plan.edits.append(SetKey(key, value))
    recorded = _merge_recorded(o.get(CONFLICT_KEY), a.get(CONFLICT_KEY), b.get(CONFLICT_KEY), clashes)
    if recorded != a.get(CONFLICT_KEY, _ABSENT):
        plan.edits.append(DeleteKey(CONFLICT_KEY) if recorded is _ABSENT else SetKey(CONFLICT_KEY, recorded))


def _merge_recorded(base: Any, ours: Any, theirs: Any, new: dict[str, Any]) -> Any:
    """The top-level ``conflict:`` mapping: a conflict still open on either side, plus the new ones."""
    value, _ = _pick(base, ours, theirs)
    if not new:
        return _ABSENT if value is None else value
    combined = dict(value) if isinstance(value, dict) else {}
    combined.update(new)
    return combined


def _parse(text: str, path: Path, domain: str) -> DomainDoc:
    from expertise_kit.document.domainfile import parse_domain_text

    return parse_domain_text(text, path, domain)


def _same_entries(doc: DomainDoc, expected: dict[str, Any]) -> bool:
    return same_entries(doc.loaded.plain, expected)


def same_entries(plain: dict[str, Any], expected: dict[str, Any]) -> bool:
    """Whether ``plain`` holds what the entry merge decided: the same values, each section's entries
    the same whatever their order."""
    sections = set(section_names())
    for key in set(plain) | set(expected):
        got, want = plain.get(key), expected.get(key)
        if key in sections:
            got_items, want_items = list(got or []), list(want or [])
            if len(got_items) != len(want_items) or any(got_items.count(i) != want_items.count(i) for i in want_items):
                return False
        elif got != want:
            return False
    return True


LineMerge = Callable[[str, str, str], "str | None"]


def line_merge_text(base: str, ours: str, theirs: str) -> str | None:
    """Git-style line merge of three texts: the merged text when it is clean, None on a conflict."""
    from expertise_kit.versioning.textmerge import merge_lines  # only without git: the driver's line merge is git's

    merged = merge_lines(*(t.splitlines(keepends=True) for t in (base, ours, theirs)))
    return None if merged.conflicts else merged.text


def merge_domain_texts(
    base: str,
    ours: str,
    theirs: str,
    *,
    path: Path,
    domain: str,
    line_cap: int,
    prefer: str | None = None,
    line_merge: LineMerge | None = None,
) -> DomainMerge:
    """Merge three versions of ``domain``'s file. ``base`` may be empty (both sides added the file).
    ``prefer="theirs"``: settle true conflicts for theirs, with no conflict marked (the shared layer,
    where the branches keep their own versions for review).

    Raises ``UserError`` when ours or theirs is not a valid file of ``domain``; a base that is not one
    is read as empty, so both sides' entries are kept. ``line_merge`` is the plain line merge tried first
    (default ``line_merge_text``; the merge driver passes ``git merge-file``, which is C and some twenty
    times quicker at the cap).
    """
    ours_doc = _parse(ours, path, domain)
    theirs_doc = _parse(theirs, path, domain)
    try:
        base_doc: DomainDoc | None = _parse(base, path, domain) if base.strip() else None
    except UserError:
        base_doc = None
    plan = _Plan(prefer=prefer)
    _plan_entries(base_doc, ours_doc, theirs_doc, plan)
    _plan_keys(base_doc, ours_doc, theirs_doc, plan)
    start = ours_doc
    edits = plan.edits
    kept_line_merge = False
    if prefer is None and not plan.conflicts and base_doc is not None and theirs != base and theirs != ours:
        merged_text = (line_merge or line_merge_text)(base, ours, theirs)
        if merged_text is not None:
            expected = expected_data(ours_doc.loaded.plain, edits)
            try:
                candidate = _parse(merged_text, path, domain)
            except UserError:
                candidate = None
            if candidate is not None and _same_entries(candidate, expected):
                start, edits, kept_line_merge = candidate, [], True
    from expertise_kit.document.cap import fit_to_cap

    capped = fit_to_cap(start.loaded, start.model, edits, line_cap)
    return DomainMerge(
        capped.text, plan.conflicts, capped.pruned, capped.lines, capped.over_by, kept_line_merge=kept_line_merge,
        plain=expected_data(start.loaded.plain, capped.edits),
    )  # fmt: skip


def conflicts_in(doc: DomainDoc) -> Iterator[tuple[str, str, str]]:
    """Conflicts a merge left in ``doc``: (entry id or top-level key, section or "", text)."""
    plain = doc.loaded.plain
    recorded = plain.get(CONFLICT_KEY)
    if isinstance(recorded, dict):
        for key in recorded:
            yield str(key), "", f"top-level `{key}`"
    for name in section_names():
        for raw in plain.get(name) or []:
            if isinstance(raw, dict) and CONFLICT_KEY in raw:
                yield id_of(name, raw), name, text_of(name, raw)
