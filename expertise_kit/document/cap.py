"""Keeping a domain file under its line cap.

Learned entries are pruned first: each section's surplus above its floor, in the sections' prune order
(``vocab.SECTIONS``), least valuable and oldest first, so the newest learnings stay; then any learned
entry; hand-written entries only when nothing learned is left. What is pruned is reported, never silent.
An entry that could not fit under the cap even alone is refused outright.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from expertise_kit.document.entries import (
    DomainBase,
    Item,
    is_learned,
    item_id,
    item_last_seen,
    item_text,
    item_value,
    parse_item,
)
from expertise_kit.document.splice import Append, Edit, Remove, Replace, apply_edits, item_line_counts, render_item
from expertise_kit.document.yamlio import LoadedYaml
from expertise_kit.errors import UserError
from expertise_kit.vocab import SECTIONS

__all__ = ["CapResult", "PrunedEntry", "candidates_of", "count_lines", "fit_to_cap", "plainly_fits", "prune_to_cap"]


def _prune_order() -> tuple[tuple[str, int], ...]:
    """(section, floor) in the order learned surplus is pruned."""
    return tuple((s.name, s.floor) for s in sorted(SECTIONS, key=lambda s: s.prune_rank))


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class PrunedEntry:
    section: str
    text: str
    learned: bool
    id: str = ""


@dataclass
class CapResult:
    text: str
    lines: int
    pruned: list[PrunedEntry] = field(default_factory=list)
    over_by: int = 0  # lines still over the cap after pruning everything we may
    edits: list[Edit] = field(default_factory=list)  # what was applied, pruning included


@dataclass(frozen=True)
class _Candidate:
    section: str
    index: int | None  # None: an item being appended in this write
    append_order: int
    item: Item
    raw: Any
    lines: int

    def age_key(self) -> tuple[int, datetime, int]:
        # Least valuable first, then oldest; file order breaks ties (later in a list is newer).
        seen = item_last_seen(self.item) or _EPOCH
        position = self.index if self.index is not None else 1_000_000 + self.append_order
        return (item_value(self.item), seen, position)


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _candidates(loaded: LoadedYaml, model: DomainBase, edits: list[Edit]) -> list[_Candidate]:
    def counts(section: str) -> list[int] | None:
        return item_line_counts(loaded, section)

    return candidates_of(loaded.plain, model, counts, edits)


def candidates_of(
    plain: dict[str, Any],
    model: DomainBase,
    counts: Callable[[str], list[int] | None],
    edits: list[Edit],
    render: Callable[[Any, int, int], list[str]] = render_item,
) -> list[_Candidate]:
    """Every entry that may be pruned after ``edits``, with the lines it takes; ``counts(section)`` gives
    each item's lines as the text has them (None: unknown, so each is measured by rendering it)."""
    removed = {(e.section, e.index) for e in edits if isinstance(e, Remove)}
    replaced = {(e.section, e.index): e.item for e in edits if isinstance(e, Replace)}
    result: list[_Candidate] = []
    for section, _floor in _prune_order():
        items = model.items(section)
        lines_of = counts(section) if items else None
        raws = plain.get(section) or []
        for index, item in enumerate(items):
            if (section, index) in removed:
                continue
            raw = raws[index]
            if (section, index) in replaced:
                # Judged as it will be after this write: a revert may bring an old value back.
                raw = replaced[(section, index)]
                item = parse_item(section, raw)
                lines = len(render(raw, 2, 2))
            else:
                lines = lines_of[index] if lines_of else len(render(raw, 2, 2))
            result.append(_Candidate(section, index, 0, item, raw, lines))
    for order, edit in enumerate(edits):
        if isinstance(edit, Append):
            item = parse_item(edit.section, edit.item)
            lines = len(render(edit.item, 2, 2))
            result.append(_Candidate(edit.section, None, order, item, edit.item, lines))
    return result


def _victim_order(candidates: list[_Candidate]) -> list[_Candidate]:
    order = _prune_order()
    rank = {section: position for position, (section, _) in enumerate(order)}
    floors = dict(order)
    learned = [c for c in candidates if is_learned(c.item)]
    manual = [c for c in candidates if not is_learned(c.item)]
    # Phase 1: each section's learned surplus above its floor, section by section.
    phase1: list[_Candidate] = []
    for section, _ in order:
        mine = sorted((c for c in learned if c.section == section), key=_Candidate.age_key)
        surplus = len(mine) - floors[section]
        phase1.extend(mine[: max(0, surplus)])
    chosen = {id(c) for c in phase1}
    # Phase 2: every other learned entry, least valuable and oldest first, whatever its section.
    phase2 = sorted((c for c in learned if id(c) not in chosen), key=lambda c: (*c.age_key(), rank[c.section]))
    # Phase 3: hand-written entries, section by section, earliest written first.
    phase3 = sorted(manual, key=lambda c: (rank[c.section], c.index if c.index is not None else 1_000_000))
    return [*phase1, *phase2, *phase3]


def _skeleton_lines(loaded: LoadedYaml, model: DomainBase) -> int:
    """Lines the file needs with every entry gone: its keys, comments and header."""
    used = 0
    for section, _ in _prune_order():
        items = model.items(section)
        if not items:
            continue
        counts = item_line_counts(loaded, section)
        raws = loaded.plain.get(section) or []
        used += sum(counts) if counts else sum(len(render_item(raw, 2, 2)) for raw in raws)
    return max(0, count_lines(loaded.text) - used)


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


def _refuse_oversized(loaded: LoadedYaml, model: DomainBase, edits: list[Edit], cap: int) -> None:
    """An entry that can't fit under the cap even alone would prune everything, then itself: refuse it."""
    appends = [e for e in edits if isinstance(e, Append)]
    if not appends:
        return
    room = cap - _skeleton_lines(loaded, model)
    if room <= 0:
        return  # the file's own keys and comments are over the cap: no entry is to blame (a warning says so)
    for edit in appends:
        if plainly_fits(edit.item, room):
            continue  # rendering every new entry just to count its lines costs ~2 ms each
        lines = len(render_item(edit.item, 2, 2))
        if lines > room:
            raise UserError(
                f"the new {edit.section} entry is {lines} lines, and the file has room for {room} "
                f"under its {cap}-line cap even with every other entry gone",
                path=loaded.path,
                hint="shorten the entry, or raise line_cap in .expertise/config.yaml",
            )


def fit_to_cap(loaded: LoadedYaml, model: DomainBase, edits: list[Edit], cap: int) -> CapResult:
    """Apply ``edits`` and, if the result is over ``cap`` lines, prune until it fits.

    Trial texts are only counted; the one that is returned is verified.
    """
    _refuse_oversized(loaded, model, edits, cap)
    text = apply_edits(loaded, edits, verify=False)
    lines = count_lines(text)
    if lines <= cap:
        return CapResult(apply_edits(loaded, edits, trial=text), lines, edits=list(edits))
    edits, pruned, text = prune_to_cap(
        _candidates(loaded, model, edits), edits, text, cap, lambda trial: apply_edits(loaded, trial, verify=False)
    )
    text = apply_edits(loaded, edits, trial=text)
    return CapResult(text, count_lines(text), pruned, max(0, count_lines(text) - cap), edits)


def prune_to_cap(
    candidates: list[_Candidate], edits: list[Edit], text: str, cap: int, apply: Callable[[list[Edit]], str]
) -> tuple[list[Edit], list[PrunedEntry], str]:
    """Prune ``candidates`` in victim order until ``apply(edits)`` (``text`` now) is within ``cap`` lines:
    (the edits, pruning included; what was pruned; the last trial text, unverified)."""
    lines = count_lines(text)
    edits = list(edits)
    pruned: list[PrunedEntry] = []
    queue = _victim_order(candidates)
    # Line counts are exact for block lists; a re-count after each batch catches the rest.
    while lines > cap and queue:
        excess = lines - cap
        batch: list[_Candidate] = []
        while queue and excess > 0:
            victim = queue.pop(0)
            batch.append(victim)
            excess -= victim.lines
        for victim in batch:
            if victim.index is None:
                edits = [e for e in edits if not (isinstance(e, Append) and e.item is victim.raw)]
            else:
                at = (victim.section, victim.index)
                edits = [e for e in edits if not (isinstance(e, Replace) and (e.section, e.index) == at)]
                edits.append(Remove(victim.section, victim.index))
            pruned.append(
                PrunedEntry(
                    victim.section,
                    item_text(victim.item),
                    is_learned(victim.item),
                    item_id(victim.section, victim.item),
                )
            )
        text = apply(edits)
        lines = count_lines(text)
    return edits, pruned, text
