"""Keeping a domain file under its line cap (the victim order itself is ``prune.py``'s, on plain data).

Learned entries are pruned first: each section's surplus above its floor, in the sections' prune order
(``vocab.SECTIONS``), least valuable and oldest first, so the newest learnings stay; then any learned
entry; hand-written entries only when nothing learned is left. What is pruned is reported, never silent.
An entry that could not fit under the cap even alone is refused outright.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from expertise_kit.document.entries import (
    DomainData,
    Item,
    is_learned,
    item_id,
    item_last_seen,
    item_text,
    item_value,
    parse_item,
)
from expertise_kit.document.prune import (
    Candidate,
    Facts,
    PrunedEntry,
    candidates_of,
    count_lines,
    plainly_fits,
    prune_order,
    prune_to_cap,
)
from expertise_kit.document.splice import Append, Edit, apply_edits, item_line_counts, render_item
from expertise_kit.document.yamlio import LoadedYaml
from expertise_kit.errors import UserError

__all__ = ["CapResult", "PrunedEntry", "count_lines", "fit_to_cap", "plainly_fits", "prune_to_cap"]


@dataclass
class CapResult:
    text: str
    lines: int
    pruned: list[PrunedEntry] = field(default_factory=list)
    over_by: int = 0  # lines still over the cap after pruning everything we may
    edits: list[Edit] = field(default_factory=list)  # what was applied, pruning included


def _facts(item: Item, section_name: str) -> Facts:
    facts = is_learned(item), item_value(item), item_last_seen(item), item_text(item), item_id(section_name, item)
    return Facts(*facts)


def _candidates(loaded: LoadedYaml, model: DomainData, edits: list[Edit]) -> list[Candidate]:
    def counts(section: str) -> list[int] | None:
        return item_line_counts(loaded, section)

    # The file's items are parsed already; a replaced or appended one is parsed (so validated) here.
    known = {
        id(raw): item
        for section, _ in prune_order()
        for raw, item in zip(loaded.plain.get(section) or [], model.items(section), strict=False)
    }

    def describe(section: str, raw: Any) -> Facts:
        item = known.get(id(raw))
        return _facts(item if item is not None else parse_item(section, raw), section)

    return candidates_of(loaded.plain, counts, edits, render_item, describe)


def _skeleton_lines(loaded: LoadedYaml, model: DomainData) -> int:
    """Lines the file needs with every entry gone: its keys, comments and header."""
    used = 0
    for section, _ in prune_order():
        items = model.items(section)
        if not items:
            continue
        counts = item_line_counts(loaded, section)
        raws = loaded.plain.get(section) or []
        used += sum(counts) if counts else sum(len(render_item(raw, 2, 2)) for raw in raws)
    return max(0, count_lines(loaded.text) - used)


def _refuse_oversized(loaded: LoadedYaml, model: DomainData, edits: list[Edit], cap: int) -> None:
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


def fit_to_cap(loaded: LoadedYaml, model: DomainData, edits: list[Edit], cap: int) -> CapResult:
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
