"""A line-based three-way merge (diff3), standard library only.

The semantic merge uses it to keep both sides' untouched lines, comments included, whenever the plain
line merge agrees with the entry-by-entry merge; and it is the fallback for a side that is not a domain
file, with git's own conflict markers, so such a file merges no worse than without our driver.
Changes that touch or overlap in the base conflict (as in git), unless both sides made the same change.
"""

from __future__ import annotations

from expertise_kit.lightdata import dataclass, field

__all__ = ["TextMerge", "merge_lines"]


@dataclass
class TextMerge:
    lines: list[str]
    conflicts: int = 0
    regions: list[tuple[list[str], list[str]]] = field(default_factory=list)  # (ours, theirs) in conflict

    @property
    def text(self) -> str:
        return "".join(self.lines)


def _hunks(base: list[str], side: list[str]) -> list[tuple[int, int, int, int]]:
    """Changed regions as (base start, base end, side start, side end); common ends are skipped first,
    because SequenceMatcher is quadratic in the worst case and most of a merged file is untouched."""
    head = 0
    limit = min(len(base), len(side))
    while head < limit and base[head] == side[head]:
        head += 1
    tail = 0
    while tail < limit - head and base[-1 - tail] == side[-1 - tail]:
        tail += 1
    from difflib import SequenceMatcher  # here: the merge driver's quick path merges lines with git instead

    middle = SequenceMatcher(None, base[head : len(base) - tail], side[head : len(side) - tail], autojunk=False)
    return [
        (i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle.get_opcodes() if tag != "equal"
    ]


def _side_lines(
    side: list[str], hunks: list[tuple[int, int, int, int]], lo: int, hi: int, base: list[str]
) -> list[str]:
    if not hunks:
        return base[lo:hi]
    start = hunks[0][2] - (hunks[0][0] - lo)
    end = hunks[-1][3] + (hi - hunks[-1][1])
    return side[start:end]


def merge_lines(
    base: list[str], ours: list[str], theirs: list[str], *, labels: tuple[str, str, str] | None = None
) -> TextMerge:
    """Merge ``ours`` and ``theirs`` (lists of lines with their endings) against ``base``.

    With ``labels`` (ours, base, theirs), conflicts are written with git's markers; without, a conflict
    region keeps our lines and is only counted (the caller will not use the text).
    """
    tagged = sorted(
        [(h, 0) for h in _hunks(base, ours)] + [(h, 1) for h in _hunks(base, theirs)],
        key=lambda item: (item[0][0], item[0][1]),
    )
    result = TextMerge([])
    cursor = 0
    index = 0
    while index < len(tagged):
        lo, hi = tagged[index][0][0], tagged[index][0][1]
        group = [tagged[index]]
        index += 1
        # Touching counts as overlapping: two insertions at one place, or edits of adjacent lines, conflict.
        while index < len(tagged) and tagged[index][0][0] <= hi:
            hi = max(hi, tagged[index][0][1])
            group.append(tagged[index])
            index += 1
        result.lines.extend(base[cursor:lo])
        cursor = hi
        mine = [h for h, side in group if side == 0]
        yours = [h for h, side in group if side == 1]
        ours_part = _side_lines(ours, mine, lo, hi, base)
        theirs_part = _side_lines(theirs, yours, lo, hi, base)
        if not yours or ours_part == theirs_part:
            result.lines.extend(ours_part)
        elif not mine:
            result.lines.extend(theirs_part)
        else:
            result.conflicts += 1
            result.regions.append((ours_part, theirs_part))
            if labels is None:
                result.lines.extend(ours_part)
                continue
            eol = "\r\n" if any(line.endswith("\r\n") for line in ours_part + theirs_part) else "\n"
            result.lines.append(f"<<<<<<< {labels[0]}{eol}")
            result.lines.extend(_ended(ours_part, eol))
            result.lines.append(f"======={eol}")
            result.lines.extend(_ended(theirs_part, eol))
            result.lines.append(f">>>>>>> {labels[2]}{eol}")
    result.lines.extend(base[cursor:])
    return result


def _ended(lines: list[str], eol: str) -> list[str]:
    """A last line without its newline would swallow the marker after it."""
    if lines and not lines[-1].endswith(("\n", "\r")):
        return [*lines[:-1], lines[-1] + eol]
    return lines
