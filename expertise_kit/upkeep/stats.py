"""`expertise stats`: what the expertise has been doing, from the git history and the local session log.

- **learnings** per day and per domain: entries added by `learned` revisions;
- **recurring failures**: the failure entries seen most, and whether they stopped after being learned
  (no sighting in the last ``STOPPED_AFTER`` sessions learned since);
- **injected characters per session**: from the pre-task hook's log (`.git/expertise/cache/injected.log`,
  local to this clone, bounded);
- **feedback** per domain: helpful, harmful and ended-well counters, and feedback revisions;
- **correction rate**: of the entries learned, the share a person later edited or removed (a hand edit,
  a `manual` revision or a revert).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from statistics import median
from typing import Any

from expertise_kit.document.entries import FailureEntry, item_id, item_text
from expertise_kit.document.view import DomainView, read_view
from expertise_kit.errors import UserError
from expertise_kit.fast.cache import cache_dir
from expertise_kit.fast.session import log_path
from expertise_kit.store import Store
from expertise_kit.versioning.log import HistoryRow, read_history

__all__ = ["collect_stats", "read_domains", "parse_since", "stats_lines", "STOPPED_AFTER"]

STOPPED_AFTER = 3  # sessions learned since a failure's last sighting, with no new one, before it "stopped"
TOP_FAILURES = 10


def parse_since(text: str | None) -> datetime | None:
    """``--since``: a date (2026-11-01) or a date and time, read as UTC."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UserError(f"--since {text!r} is not a date", hint="give it as YYYY-MM-DD") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _when(row: HistoryRow) -> datetime | None:
    try:
        return datetime.fromisoformat(row.time.replace("Z", "+00:00"))
    except ValueError:
        return None


def _injections(store: Store, since: datetime | None) -> dict[str, Any]:
    """Characters injected per session, from the hook's log (and the one it rotated out)."""
    path = log_path(str(store.project.expertise_dir))
    per_session: Counter[str] = Counter()
    for name in (path + ".1", path):
        try:
            with open(name, encoding="ascii", errors="replace") as handle:
                lines = handle.read(1 << 20).splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) != 4 or not parts[0].isdigit() or not parts[2].isdigit():
                continue  # a torn or foreign line: left out
            moment = datetime.fromtimestamp(int(parts[0]), tz=timezone.utc)
            if since is None or moment >= since:
                per_session[parts[1]] += int(parts[2])
    sizes = sorted(per_session.values())
    return {
        "sessions": len(sizes),
        "mean": round(sum(sizes) / len(sizes)) if sizes else None,
        "median": round(median(sizes)) if sizes else None,
        "max": sizes[-1] if sizes else None,
        "per_session": dict(per_session.most_common(20)),
    }


def read_domains(store: Store) -> tuple[dict[str, DomainView], dict[str, UserError]]:
    """Every domain file read once: those that read, and why each other one can't (``validate`` and
    ``list`` report those; the figures leave them out). Parsing is the dear part (about 0.9 s for a file
    at the cap), so the views are remembered by the files' digests (``document.view``), and a caller
    that needs them too passes them on to ``collect_stats``."""
    views: dict[str, DomainView] = {}
    errors: dict[str, UserError] = {}
    remember = cache_dir(store.project.expertise_dir)
    for domain in store.config.domain_names:
        try:
            views[domain] = read_view(store.path_for(domain), domain, remember)
        except UserError as exc:
            errors[domain] = exc
    return views, errors


def collect_stats(
    store: Store,
    since: datetime | None = None,
    *,
    history: list[HistoryRow] | None = None,
    docs: dict[str, DomainView] | None = None,
) -> dict[str, Any]:
    """The figures. ``history`` (``read_history``'s rows, newest first) and ``docs`` (``read_domains``)
    spare a caller that has them already a second ``git log`` and a second parse."""
    if history is None:
        history = read_history(store.project)
    if docs is None:
        docs = read_domains(store)[0]
    rows = [r for r in history if r.commit or r.deferred]
    rows.reverse()  # oldest first
    if since is not None:
        before = [r for r in rows if (_when(r) or since) < since]
        rows = [r for r in rows if (_when(r) or since) >= since]
    else:
        before = []
    # Where each entry lives now, and its counters.
    home: dict[str, str] = {}
    feedback: dict[str, dict[str, int]] = {}
    failures: list[tuple[str, FailureEntry]] = []
    by_agent = {"entries": 0, "helpful": 0, "harmful": 0}  # what agents wrote when asked to reflect
    for domain, doc in docs.items():
        counts = feedback.setdefault(domain, {"helpful": 0, "harmful": 0, "ended_well": 0})
        for section_name, _, item in doc.entries():
            home[item_id(section_name, item)] = domain
            if not isinstance(item, str):
                counts["helpful"] += item.helpful
                counts["harmful"] += item.harmful
                counts["ended_well"] += item.ended_well
            if isinstance(item, FailureEntry) and item.source in ("learned", "agent"):
                failures.append((domain, item))
            if not isinstance(item, str) and item.source == "agent":
                by_agent["entries"] += 1
                by_agent["helpful"] += item.helpful
                by_agent["harmful"] += item.harmful
    per_day: Counter[str] = Counter()
    per_domain: Counter[str] = Counter()
    learned: set[str] = {i for r in before if "learned" in r.changes for i in r.added or []}
    corrected: set[str] = set()
    learned_sessions: list[list[str]] = []  # each learned revision's sessions, oldest first
    feedback_revisions = agent_revisions = 0
    for row in rows:
        if "feedback" in row.changes:
            feedback_revisions += 1
        if "agent" in row.changes:
            agent_revisions += 1
        if "learned" in row.changes:
            for entry in row.added or []:
                per_day[row.time[:10]] += 1
                per_domain[home.get(entry) or (row.domains[0] if len(row.domains) == 1 else "?")] += 1
                learned.add(entry)
            learned_sessions.append(list(row.sessions))
        if row.by_hand or {"manual", "reverted"} & set(row.changes):
            corrected |= {entry for entry in row.removed or [] if entry in learned}
    top = sorted(failures, key=lambda pair: (-pair[1].recurrence, item_text(pair[1])))[:TOP_FAILURES]
    recurring = []
    for domain, item in top:
        last = item.last_seen or item.first_seen
        # Sessions learned after the last revision that saw this failure (its sessions are on the entry).
        seen_in = {str(s) for s in item.sessions}
        latest = max((n for n, sessions in enumerate(learned_sessions) if seen_in & set(sessions)), default=-1)
        since_last = len({s for sessions in learned_sessions[latest + 1 :] for s in sessions} - seen_in)
        recurring.append({
            "id": item_id("learned_from_failures", item), "domain": domain, "issue": item.issue,
            "error": item.error, "recurrence": item.recurrence,
            "first_seen": item.first_seen.isoformat() if item.first_seen else None,
            "last_seen": last.isoformat() if last else None,
            "sessions_since_last_seen": since_last, "stopped": since_last >= STOPPED_AFTER,
        })  # fmt: skip
    return {
        "since": since.isoformat() if since else None,
        "revisions": len(rows),
        "learnings_per_day": dict(sorted(per_day.items())),
        "learnings_per_domain": dict(per_domain.most_common()),
        "recurring_failures": recurring,
        "injected_chars": _injections(store, since),
        "feedback": {"per_domain": feedback, "revisions": feedback_revisions},
        "reflection": {**_reflections(store, since), **by_agent, "revisions": agent_revisions},
        "correction_rate": {
            "learned": len(learned),
            "corrected": len(corrected),
            "share": round(len(corrected) / len(learned), 3) if learned else None,
        },
    }


def _reflections(store: Store, since: datetime | None) -> dict[str, Any]:
    """What this clone sent agents asked to reflect (docs/reflect.md): sessions, characters, lessons written."""
    from expertise_kit.learning.reflect import asked_sessions

    cutoff = since.timestamp() if since else None
    asked = [
        m for m in asked_sessions(str(store.project.expertise_dir))
        if isinstance(m["asked"], (int, float)) and (cutoff is None or m["asked"] >= cutoff)
    ]  # fmt: skip
    chars = [m["chars"] if isinstance(m.get("chars"), int) else 0 for m in asked]
    return {
        "sessions": len(asked),
        "asks": sum(m["asks"] if isinstance(m.get("asks"), int) and m["asks"] > 0 else 1 for m in asked),
        "chars_total": sum(chars),
        "chars_mean": round(sum(chars) / len(chars)) if chars else 0,
        "chars_max": max(chars, default=0),
        "written": sum(len(m["written"]) for m in asked if isinstance(m.get("written"), list)),
    }


def stats_lines(data: dict[str, Any]) -> list[str]:
    """The figures as a person reads them."""
    lines = [f"revisions: {data['revisions']}" + (f" since {data['since']}" if data["since"] else "")]
    days = data["learnings_per_day"]
    lines.append("learnings per day: " + (", ".join(f"{d} {n}" for d, n in list(days.items())[-14:]) or "none"))
    domains = data["learnings_per_domain"]
    lines.append("learnings per domain: " + (", ".join(f"{d} {n}" for d, n in domains.items()) or "none"))
    lines.append("recurring failures (after being learned):")
    for row in data["recurring_failures"] or []:
        state = "stopped" if row["stopped"] else f"{row['sessions_since_last_seen']} sessions since last seen"
        lines.append(f"  x{row['recurrence']:<3} {row['id']} {row['domain']}: {row['issue'][:60]}  [{state}]")
    if not data["recurring_failures"]:
        lines.append("  none")
    chars = data["injected_chars"]
    if chars["sessions"]:
        lines.append(
            f"injected per session: mean {chars['mean']:,}, median {chars['median']:,}, max {chars['max']:,} "
            f"characters over {chars['sessions']} sessions"
        )
    else:
        lines.append("injected per session: no sessions logged in this clone yet")
    parts = [
        f"{d} +{c['helpful']}/-{c['harmful']}/{c['ended_well']}" for d, c in data["feedback"]["per_domain"].items()
        if any(c.values())
    ]  # fmt: skip
    lines.append(
        f"feedback (helpful/harmful/ended well): {', '.join(parts) or 'none yet'}; "
        f"{data['feedback']['revisions']} feedback revisions"
    )
    agent = data["reflection"]
    if agent["sessions"]:
        lines.append(
            f"reflection: {agent['sessions']} sessions asked in this clone ({agent['asks']} asks), "
            f"{agent['chars_total']:,} characters sent "
            f"(mean {agent['chars_mean']:,}, max {agent['chars_max']:,}), {agent['written']} lessons written"
        )
    else:
        lines.append("reflection: no session asked in this clone yet")
    lines.append(
        f"written by agents: {agent['entries']} entries in the store ({agent['revisions']} revisions), "
        f"marked +{agent['helpful']} helpful / -{agent['harmful']} harmful"
    )
    rate = data["correction_rate"]
    share = "-" if rate["share"] is None else f"{rate['share']:.0%}"
    lines.append(f"correction rate: {share} ({rate['corrected']} of {rate['learned']} learned entries a person edited)")
    return lines
