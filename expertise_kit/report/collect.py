"""Everything the report shows, gathered in one pass.

History is read with one ``git log`` (``read_history``) and handed to ``collect_stats``, so the page's
numbers are ``expertise stats``'s own; each domain file is parsed once and shared the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from expertise_kit import clock
from expertise_kit.document.entries import is_learned, item_id, item_text
from expertise_kit.document.view import DomainView
from expertise_kit.errors import FileMissing, UserError
from expertise_kit.store import Store
from expertise_kit.upkeep.stats import collect_stats, read_domains
from expertise_kit.versioning.log import HistoryRow, read_history
from expertise_kit.vocab import section_names

__all__ = ["LAST_REVISIONS", "ReportData", "DomainSummary", "EntrySummary", "collect_report", "learning_buckets"]

LAST_REVISIONS = 20
TOP_FEEDBACK = 10
MAX_STALE = 100  # listed; the count says how many there are in all
_MAX_DAYS = 92  # a longer span is drawn by week, and past two years by month
_MAX_WEEKS = 104


@dataclass
class DomainSummary:
    name: str
    path: str
    status: str  # ok, missing or error
    error: str | None = None
    lines: int = 0
    entries: int = 0
    learned: int = 0
    sections: dict[str, tuple[int, int]] = field(default_factory=dict)  # section -> (entries, lines)

    @property
    def other_lines(self) -> int:
        """Lines outside the sections: the header comments, ``domain``, ``overview``, ``last_validated``."""
        return max(0, self.lines - sum(lines for _, lines in self.sections.values()))


@dataclass
class EntrySummary:
    domain: str
    section: str
    id: str
    text: str
    learned: bool
    helpful: int = 0
    harmful: int = 0
    stale: bool = False


@dataclass
class ReportData:
    project: str
    generated: str
    line_cap: int
    in_git: bool
    domains: list[DomainSummary]
    stats: dict[str, Any]
    revisions: list[HistoryRow]  # newest first, at most LAST_REVISIONS
    revision_count: int
    learnings_unit: str  # day, week or month
    learnings: list[tuple[str, int]]  # (first day of the bucket, entries learned), oldest first, no gaps
    feedback: list[EntrySummary]
    stale: list[EntrySummary]
    stale_count: int
    errors: list[UserError] = field(default_factory=list)
    root: str = ""  # the work tree: the page names paths under it relative to it, as a shared page should


def _section_lines(view: DomainView) -> dict[str, int]:
    """Lines from each top-level key to the next (to the end of the file for the last one)."""
    starts = sorted(view.key_lines.items(), key=lambda pair: pair[1])
    ends = [line for _, line in starts[1:]] + [view.line_count]
    return {key: max(0, end - start) for (key, start), end in zip(starts, ends, strict=True)}


def _summarise(name: str, relative: str, doc: DomainView) -> tuple[DomainSummary, list[EntrySummary]]:
    spans = _section_lines(doc)
    summary = DomainSummary(name, relative, "ok", lines=doc.line_count)
    counts = dict.fromkeys(section_names(), 0)
    entries: list[EntrySummary] = []
    for section_name, _, item in doc.entries():
        counts[section_name] += 1
        learned = is_learned(item)
        summary.learned += learned
        if isinstance(item, str):
            continue  # hand-written plain text: no counters, never marked stale
        if item.stale or item.helpful or item.harmful:
            entries.append(
                EntrySummary(name, section_name, item_id(section_name, item), item_text(item), learned,
                             item.helpful, item.harmful, item.stale)
            )  # fmt: skip
    summary.entries = sum(counts.values())
    summary.sections = {s: (counts[s], spans.get(s, 0)) for s in section_names()}
    return summary, entries


def learning_buckets(per_day: dict[str, int], today: date) -> tuple[str, list[tuple[str, int]]]:
    """Entries learned per day, week (from Monday) or month, whichever keeps the chart readable, from
    the first learning to ``today`` with empty buckets filled in."""
    days: dict[date, int] = {}
    for key, count in per_day.items():
        try:
            days[date.fromisoformat(key)] = days.get(date.fromisoformat(key), 0) + int(count)
        except ValueError:
            continue  # a deferred revision's hand-edited time: left out of the chart, as stats counts it
    if not days:
        return "day", []
    first, last = min(days), max(max(days), today)
    span = (last - first).days
    if span < _MAX_DAYS:
        unit, start = "day", first
    elif span < _MAX_WEEKS * 7:
        unit, start = "week", first - timedelta(days=first.weekday())
    else:
        unit, start = "month", first.replace(day=1)
    buckets: dict[date, int] = {}
    cursor = start
    while cursor <= last:
        buckets[cursor] = 0
        cursor = _next(cursor, unit)
    for day, count in days.items():
        buckets[_bucket_of(day, unit)] += count
    return unit, [(key.isoformat(), count) for key, count in buckets.items()]


def _bucket_of(day: date, unit: str) -> date:
    if unit == "week":
        return day - timedelta(days=day.weekday())
    return day.replace(day=1) if unit == "month" else day


def _next(day: date, unit: str) -> date:
    if unit == "month":
        return date(day.year + day.month // 12, day.month % 12 + 1, 1)
    return day + timedelta(days=7 if unit == "week" else 1)


def collect_report(store: Store) -> ReportData:
    """The report's data. Domain files that can't be read are listed with their error, not counted."""
    project = store.project
    docs, failed = read_domains(store)
    history = read_history(project)
    stats = collect_stats(store, history=history, docs=docs)
    domains: list[DomainSummary] = []
    flagged: list[EntrySummary] = []
    for name in store.config.domain_names:
        path = project.expertise_dir / f"{name}.yaml"
        relative = path.relative_to(project.root).as_posix()
        if name in docs:
            summary, entries = _summarise(name, relative, docs[name])
            domains.append(summary)
            flagged.extend(entries)
        else:
            error = failed[name]
            status = "missing" if isinstance(error, FileMissing) else "error"
            domains.append(DomainSummary(name, relative, status, error=error.one_line(project.root)))
    now = clock.now()
    unit, learnings = learning_buckets(stats["learnings_per_day"], now.date())
    stale = [entry for entry in flagged if entry.stale]
    rated = sorted(
        (entry for entry in flagged if entry.helpful or entry.harmful),
        key=lambda entry: (-(entry.helpful + entry.harmful), -entry.harmful, entry.domain, entry.id),
    )
    return ReportData(
        project=project.root.name,
        generated=clock.iso(now),
        line_cap=store.config.line_cap,
        in_git=project.git is not None,
        domains=domains,
        stats=stats,
        revisions=history[:LAST_REVISIONS],
        revision_count=len(history),
        learnings_unit=unit,
        learnings=learnings,
        feedback=rated[:TOP_FEEDBACK],
        stale=stale[:MAX_STALE],
        stale_count=len(stale),
        errors=[failed[name] for name in store.config.domain_names if name in failed],
        root=str(project.root),
    )
