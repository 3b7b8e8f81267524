"""Which entries the line cap prunes, and in what order, on plain data: shared by every write
(``cap.fit_to_cap``) and the merge driver's quick path (``versioning.quickmerge``). Standard library only.

Learned entries are pruned first: each section's surplus above its floor, in the sections' prune order
(``vocab.SECTIONS``), least valuable and oldest first, so the newest learnings stay; then any learned
entry; hand-written entries only when nothing learned is left.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone

from expertise_kit.document.edits import Append, Edit, Remove, Replace
from expertise_kit.lightdata import dataclass
from expertise_kit.vocab import SECTIONS

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Facts", "PrunedEntry", "Candidate", "candidates_of", "count_lines", "plainly_fits", "prune_to_cap"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def prune_order() -> tuple[tuple[str, int], ...]:
    """(section, floor) in the order learned surplus is pruned."""
    return tuple((s.name, s.floor) for s in sorted(SECTIONS, key=lambda s: s.prune_rank))


@dataclass(frozen=True)
class PrunedEntry:
    section: str
    text: str
    learned: bool
    id: str = ""


@dataclass(frozen=True)
class Facts:
    """What pruning reads of an entry (``entries.item_*`` of the parsed item, or ``plainentry``'s)."""

    learned: bool
    value: int
    seen: datetime | None
    text: str
    id: str


if TYPE_CHECKING:
    Describe = Callable[[str, Any], Facts]


@dataclass(frozen=True)
class Candidate:
    section: str
    index: int | None  # None: an item being appended in this write
    append_order: int
    facts: Facts
    raw: Any
    lines: int

    def age_key(self) -> tuple[int, datetime, int]:
        # Least valuable first, then oldest; file order breaks ties (later in a list is newer).
        seen = self.facts.seen or _EPOCH
        position = self.index if self.index is not None else 1_000_000 + self.append_order
        return (self.facts.value, seen, position)


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def candidates_of(
    plain: dict[str, Any],
    counts: Callable[[str], list[int] | None],
    edits: list[Edit],
    render: Callable[[Any, int, int], list[str]],
    describe: Describe,
) -> list[Candidate]:
    """Every entry that may be pruned after ``edits``, with the lines it takes; ``counts(section)`` gives
    each item's lines as the text has them (None: unknown, so each is measured by rendering it)."""
    removed = {(e.section, e.index) for e in edits if isinstance(e, Remove)}
    replaced = {(e.section, e.index): e.item for e in edits if isinstance(e, Replace)}
    result: list[Candidate] = []
    for section, _floor in prune_order():
        raws = plain.get(section) or []
        lines_of = counts(section) if raws else None
        for index, raw in enumerate(raws):
            if (section, index) in removed:
                continue
            if (section, index) in replaced:
                # Judged as it will be after this write: a revert may bring an old value back.
                raw = replaced[(section, index)]
                lines = len(render(raw, 2, 2))
            else:
                lines = lines_of[index] if lines_of else len(render(raw, 2, 2))
            result.append(Candidate(section, index, 0, describe(section, raw), raw, lines))
    for order, edit in enumerate(edits):
        if isinstance(edit, Append):
            lines = len(render(edit.item, 2, 2))
            result.append(Candidate(edit.section, None, order, describe(edit.section, edit.item), edit.item, lines))
    return result


def victim_order(candidates: list[Candidate]) -> list[Candidate]:
    order = prune_order()
    rank = {section: position for position, (section, _) in enumerate(order)}
    floors = dict(order)
    learned = [c for c in candidates if c.facts.learned]
    manual = [c for c in candidates if not c.facts.learned]
    # Phase 1: each section's learned surplus above its floor, section by section.
    phase1: list[Candidate] = []
    for section, _ in order:
        mine = sorted((c for c in learned if c.section == section), key=Candidate.age_key)
        surplus = len(mine) - floors[section]
        phase1.extend(mine[: max(0, surplus)])
    chosen = {id(c) for c in phase1}
    # Phase 2: every other learned entry, least valuable and oldest first, whatever its section.
    phase2 = sorted((c for c in learned if id(c) not in chosen), key=lambda c: (*c.age_key(), rank[c.section]))
    # Phase 3: hand-written entries, section by section, earliest written first.
    phase3 = sorted(manual, key=lambda c: (rank[c.section], c.index if c.index is not None else 1_000_000))
    return [*phase1, *phase2, *phase3]


def _rough_lines(raw: Any) -> int:
    """About how many lines ``raw`` renders to (each text line, each key, each list item)."""
    if isinstance(raw, str):
        return raw.count("\n") + 1
    if isinstance(raw, dict):
        return sum(1 + _rough_lines(value) for value in raw.values())
    if isinstance(raw, list):
        return sum(_rough_lines(value) for value in raw) or 1
    return 1


def plainly_fits(raw: Any, room: int) -> bool:
    """Whether a new entry fits in ``room`` lines without rendering it to count."""
    return _rough_lines(raw) * 2 + 8 < room


def prune_to_cap(
    candidates: list[Candidate], edits: list[Edit], text: str, cap: int, apply: Callable[[list[Edit]], str]
) -> tuple[list[Edit], list[PrunedEntry], str]:
    """Prune ``candidates`` in victim order until ``apply(edits)`` (``text`` now) is within ``cap`` lines:
    (the edits, pruning included; what was pruned; the last trial text, unverified)."""
    lines = count_lines(text)
    planned, edits = list(edits), list(edits)  # a new entry's candidate names its edit by its place in planned
    pruned: list[PrunedEntry] = []
    queue = deque(victim_order(candidates))
    # Line counts are exact for block lists; a re-count after each batch catches the rest.
    while lines > cap and queue:
        excess = lines - cap
        batch: list[Candidate] = []
        while queue and excess > 0:
            victim = queue.popleft()
            batch.append(victim)
            excess -= victim.lines
        # A new entry is dropped by its edit (two may be equal, even one object); a stored one is removed, and
        # a replacement of it dropped. One pass for the batch: pruning thousands stays linear.
        new = {id(planned[v.append_order]) for v in batch if v.index is None}
        stored = [(v.section, v.index) for v in batch if v.index is not None]
        at = set(stored)
        edits = [e for e in edits if id(e) not in new and not (isinstance(e, Replace) and (e.section, e.index) in at)]
        edits += [Remove(section, index) for section, index in stored]
        pruned += [PrunedEntry(v.section, v.facts.text, v.facts.learned, v.facts.id) for v in batch]
        text = apply(edits)
        lines = count_lines(text)
    return edits, pruned, text
