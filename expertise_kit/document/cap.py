"""Keeping a domain file under its line cap.

The spec (5.7) trims in a fixed section order but keeps the *oldest* entries. We keep its order and its
per-section floors, and prune the least valuable, oldest learned entries first, so the newest learnings
stay. Hand-written entries go only when nothing learned is left. What is pruned is reported, never silent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from expertise_kit.document.entries import DomainFile, Item, is_learned, item_id, item_last_seen, item_text, item_value
from expertise_kit.document.splice import Append, Edit, Remove, apply_edits, item_line_counts, render_item
from expertise_kit.document.yamlio import LoadedYaml

__all__ = ["CapResult", "PrunedEntry", "fit_to_cap", "count_lines"]

# Spec 5.7's order and the counts it keeps; the other sections come after it, in file order.
_PRUNE_ORDER: tuple[tuple[str, int], ...] = (
    ("learned_from_failures", 10),
    ("effective_patterns", 15),
    ("core_files", 30),
    ("successful_techniques", 10),
    ("patterns", 0),
    ("best_practices", 0),
)
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


def _candidates(loaded: LoadedYaml, model: DomainFile, edits: list[Edit], parse_item: Any) -> list[_Candidate]:
    removed = {(e.section, e.index) for e in edits if isinstance(e, Remove)}
    result: list[_Candidate] = []
    for section, _floor in _PRUNE_ORDER:
        items: list[Item] = getattr(model, section)
        counts = item_line_counts(loaded, section) if items else None
        raws = loaded.plain.get(section) or []
        for index, item in enumerate(items):
            if (section, index) in removed:
                continue
            lines = counts[index] if counts else len(render_item(raws[index], 2, 2))
            result.append(_Candidate(section, index, 0, item, raws[index], lines))
    for order, edit in enumerate(edits):
        if isinstance(edit, Append):
            item = parse_item(edit.section, edit.item)
            lines = len(render_item(edit.item, 2, 2))
            result.append(_Candidate(edit.section, None, order, item, edit.item, lines))
    return result


def _victim_order(candidates: list[_Candidate]) -> list[_Candidate]:
    rank = {section: position for position, (section, _) in enumerate(_PRUNE_ORDER)}
    floors = dict(_PRUNE_ORDER)
    learned = [c for c in candidates if is_learned(c.item)]
    manual = [c for c in candidates if not is_learned(c.item)]
    # Phase 1: each section's learned surplus above the spec's floor, in the spec's section order.
    phase1: list[_Candidate] = []
    for section, _ in _PRUNE_ORDER:
        mine = sorted((c for c in learned if c.section == section), key=_Candidate.age_key)
        surplus = len(mine) - floors[section]
        phase1.extend(mine[: max(0, surplus)])
    chosen = {id(c) for c in phase1}
    # Phase 2: every other learned entry, least valuable and oldest first, whatever its section.
    phase2 = sorted((c for c in learned if id(c) not in chosen), key=lambda c: (*c.age_key(), rank[c.section]))
    # Phase 3: hand-written entries, in the spec's section order, earliest written first.
    phase3 = sorted(manual, key=lambda c: (rank[c.section], c.index if c.index is not None else 1_000_000))
    return [*phase1, *phase2, *phase3]


def fit_to_cap(loaded: LoadedYaml, model: DomainFile, edits: list[Edit], cap: int, parse_item: Any) -> CapResult:
    """Apply ``edits`` and, if the result is over ``cap`` lines, prune until it fits.

    Trial texts are only counted; the one that is returned is verified.
    """
    text = apply_edits(loaded, edits, verify=False)
    lines = count_lines(text)
    if lines <= cap:
        return CapResult(apply_edits(loaded, edits), lines, edits=list(edits))
    edits = list(edits)
    pruned: list[PrunedEntry] = []
    queue = _victim_order(_candidates(loaded, model, edits, parse_item))
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
                edits.append(Remove(victim.section, victim.index))
            pruned.append(
                PrunedEntry(
                    victim.section,
                    item_text(victim.item),
                    is_learned(victim.item),
                    item_id(victim.section, victim.item),
                )
            )
        text = apply_edits(loaded, edits, verify=False)
        lines = count_lines(text)
    text = apply_edits(loaded, edits)
    return CapResult(text, count_lines(text), pruned, max(0, count_lines(text) - cap), edits)
