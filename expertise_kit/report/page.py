"""The report page: HTML with its CSS inline, charts as inline SVG, nothing fetched and nothing run.

Every piece of text that comes from the store (learned text, file names, session ids, commit subjects,
error messages) goes through ``_text``: control and invisible characters stripped (the renderer's own
list, direction overrides included), cut to size, then HTML-escaped. The page also carries a Content
Security Policy that allows inline styles and nothing else, so even a slip could not run a script or
load a resource.
"""

from __future__ import annotations

import html
import os
import stat
from importlib import resources
from pathlib import Path

from expertise_kit.document.atomic import write_atomic
from expertise_kit.errors import UserError
from expertise_kit.fast.render import strip_controls
from expertise_kit.project import Project
from expertise_kit.report import charts
from expertise_kit.report.collect import LAST_REVISIONS, DomainSummary, ReportData
from expertise_kit.upkeep.stats import STOPPED_AFTER
from expertise_kit.versioning.log import HistoryRow
from expertise_kit.vocab import section_names

__all__ = ["render_page", "write_report", "check_output"]

_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
_SHORT = {
    "core_files": "files",
    "patterns": "patterns",
    "best_practices": "practices",
    "learned_from_failures": "failures",
    "effective_patterns": "effective",
    "successful_techniques": "techniques",
}
_MAX_SESSIONS = 3  # per revision; the rest are counted


def _text(value: object, limit: int = 240) -> str:
    """Store text made inert: one line, no control or invisible characters, at most ``limit`` long, escaped."""
    flat = " ".join(strip_controls(str(value)).split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "\u2026"
    return html.escape(flat, quote=True)


def _count(value: int, noun: str) -> str:
    return f"{value:,} {noun}{'' if value == 1 else 's'}"


def _data(value: object, limit: int = 240, *, wrap: bool = False) -> str:
    """Store text as an isolated run: right-to-left text in it can't reorder what stands around it.
    ``wrap``: long text that may break anywhere (a path with no spaces), so its column can narrow."""
    klass = ' class="wrap"' if wrap else ""
    return f"<bdi{klass}>{_text(value, limit)}</bdi>"


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _css() -> str:
    return (resources.files("expertise_kit.report") / "report.css").read_text(encoding="utf-8")


def _swatch(css: str, label: str) -> str:
    return f'<span class="key"><span class="swatch {css}"></span>{label}</span>'


def _tile(value: str, label: str) -> str:
    return f'<div class="tile"><span class="value">{value}</span><span class="label">{label}</span></div>'


def _cell(label: str, content: str, css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return f'<td data-label="{label}"{klass}>{content}</td>'


def _summary(data: ReportData) -> str:
    stats = data.stats
    entries = sum(d.entries for d in data.domains)
    learned = sum(d.learned for d in data.domains)
    failures = stats["recurring_failures"]
    stopped = sum(1 for f in failures if f["stopped"])
    rate = stats["correction_rate"]
    share = "-" if rate["share"] is None else f"{rate['share']:.0%}"
    helpful = sum(c["helpful"] for c in stats["feedback"]["per_domain"].values())
    harmful = sum(c["harmful"] for c in stats["feedback"]["per_domain"].values())
    injected = stats["injected_chars"]
    tiles = [
        _tile(_n(entries), f"entries, {_n(learned)} learned"),
        _tile(_n(data.revision_count), "revisions"),
        _tile(_n(sum(stats["learnings_per_day"].values())), "entries learned"),
        _tile(f"{stopped} of {len(failures)}", "top failures stopped"),
        _tile(f"+{_n(helpful)} / \u2212{_n(harmful)}", "helpful / harmful"),
        _tile(share, "of learned entries corrected"),
        _tile(_n(stats["reflection"]["entries"]), "entries written by agents"),
        _tile(_n(data.stale_count), "stale entries"),
    ]
    if injected["sessions"]:
        tiles.append(_tile(_n(injected["mean"]), f"characters injected per session ({_n(injected['sessions'])})"))
    return f'<section id="summary" aria-label="summary"><div class="tiles">{"".join(tiles)}</div></section>'


def _problems(data: ReportData) -> str:
    notes = []
    if data.errors:
        shown = (error.one_line(data.root or None) for error in data.errors)
        items = "".join(f"<li><code>{_text(line, 400)}</code></li>" for line in shown)
        notes.append(
            '<section id="problems" class="problems"><h2>Files that could not be read</h2>'
            f"<ul>{items}</ul><p>They are left out of every figure below. Fix them, then run the report "
            "again; <code>expertise validate</code> explains each.</p></section>"
        )
    if not data.in_git:
        notes.append(
            '<p class="note">This project is not in a git repository: its revisions are deferred until it is '
            "(<code>git init</code>, then <code>expertise history --sync</code>).</p>"
        )
    elif not data.revision_count:
        notes.append('<p class="note">No revisions yet: nothing of <code>.expertise/</code> is committed.</p>')
    return "".join(notes)


def _domain_row(domain: DomainSummary, scale: int, cap: int) -> str:
    name = _text(domain.name, 60)
    if domain.status != "ok":
        return (
            f'<div class="row"><span class="name">{name}</span><span class="bad">{_text(domain.status)}</span>'
            '<span class="num">-</span></div>'
        )
    segments = [(f"s{n}", domain.sections.get(s, (0, 0))[1]) for n, s in enumerate(section_names())]
    segments.append(("other", domain.other_lines))
    label = f"{name}: {domain.lines:,} of {cap:,} lines"
    over = " over" if domain.lines > cap else ""
    return (
        f'<div class="row"><span class="name">{name}</span>{charts.stacked_bar(segments, scale, label, cap)}'
        f'<span class="num{over}">{domain.lines:,}</span></div>'
    )


def _domains(data: ReportData) -> str:
    cap = data.line_cap
    scale = max([cap, *(d.lines for d in data.domains)])
    legend = "".join(_swatch(f"s{n}", _SHORT.get(s, s)) for n, s in enumerate(section_names()))
    legend += _swatch("other", "other lines") + '<span class="key"><span class="swatch cap"></span>line cap</span>'
    rows = "".join(_domain_row(d, scale, cap) for d in data.domains)
    head = "".join(f'<th class="wide num">{_SHORT.get(s, s)}</th>' for s in section_names())
    body = []
    for d in data.domains:
        status = _text(d.error, 300) if d.error else _text(d.status)
        per_section = "".join(
            _cell(_SHORT.get(s, s), _n(d.sections[s][0]) if d.status == "ok" else "-", "wide num")
            for s in section_names()
        )
        ok = d.status == "ok"
        body.append(
            f"<tr>{_cell('domain', _data(d.name, 60))}{per_section}"
            f"{_cell('entries', _n(d.entries) if ok else '-', 'num')}"
            f"{_cell('status', status, '' if ok else 'bad')}</tr>"
        )
    return (
        '<section id="domains"><h2>Entries against the line cap</h2>'
        f"<p>Each domain file's lines, by section, against the cap of {cap:,} lines (the mark). Past the cap, "
        "learned entries are pruned first.</p>"
        f'<div class="legend">{legend}</div><div class="rows">{rows}</div>'
        '<h3>Entries per section</h3><div class="scroll"><table><thead><tr><th>domain</th>'
        f'{head}<th class="num">entries</th>'
        f"<th>status</th></tr></thead><tbody>{''.join(body)}</tbody></table></div></section>"
    )


def _learnings(data: ReportData) -> str:
    title = '<section id="learnings"><h2>Learnings over time</h2>'
    if not data.learnings:
        return title + '<p class="empty">Nothing learned yet.</p></section>'
    values = [count for _, count in data.learnings]
    unit = data.learnings_unit
    first, last = data.learnings[0][0], data.learnings[-1][0]
    total = sum(values)
    chart = charts.columns(values, f"entries learned per {unit}, {first} to {last}")
    per_domain = data.stats["learnings_per_domain"]
    top = max(per_domain.values(), default=1)
    rows = "".join(
        f'<div class="row"><span class="name">{_text(name, 60)}</span>'
        f"{charts.stacked_bar([('learned', count)], top, f'{_text(name, 60)}: {count:,} learned')}"
        f'<span class="num">{count:,}</span></div>'
        for name, count in per_domain.items()
    )
    return (
        f"{title}<p>Entries learned per {unit}: {total:,} from {first} to {last}, at most "
        f"{max(values):,} in a {unit}.</p>"
        f'<figure class="timeline">{chart}<figcaption><span>{first}</span><span>{last}</span></figcaption></figure>'
        f'<h3>By domain</h3><div class="rows">{rows}</div></section>'
    )


def _failures(data: ReportData) -> str:
    title = '<section id="failures"><h2>Recurring failures</h2>'
    failures = data.stats["recurring_failures"]
    if not failures:
        return title + '<p class="empty">No learned failures yet.</p></section>'
    top = max(f["recurrence"] for f in failures)
    body = []
    for f in failures:
        if f["stopped"]:
            state = '<span class="good">stopped</span>'
        else:
            since = f["sessions_since_last_seen"]
            plural = "s" if since != 1 else ""
            state = f'<span class="warn">still seen</span> <small>{since} session{plural} since</small>'
        issue = _data(f["issue"] or f["error"], 200, wrap=True)
        error = f"<br><small><code>{_text(f['error'], 160)}</code></small>" if f["error"] and f["issue"] else ""
        bar = charts.stacked_bar([("failure", f["recurrence"])], top, f"seen {f['recurrence']} times")
        seen = f'<span class="count">{f["recurrence"]}\u00d7</span>{bar}'
        body.append(
            f"<tr>{_cell('seen', seen, 'seen')}"
            f"{_cell('failure', issue + error)}"
            f"{_cell('domain', _data(f['domain'], 60))}"
            f"{_cell('last seen', _text((f['last_seen'] or '-')[:10]), 'when')}"
            f"{_cell('after learning', state)}</tr>"
        )
    return (
        f"{title}<p>The learned failures seen most, and whether they stopped once learned: stopped means "
        f"not seen again in the {STOPPED_AFTER} or more sessions learned from since.</p>"
        '<div class="scroll"><table class="stack"><thead><tr><th>seen</th><th>failure</th><th>domain</th>'
        f"<th>last seen</th><th>after learning</th></tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        "</section>"
    )


def _feedback(data: ReportData) -> str:
    per_domain = data.stats["feedback"]["per_domain"]
    title = '<section id="feedback"><h2>Helpful and harmful</h2>'
    rated = {name: c for name, c in per_domain.items() if c["helpful"] or c["harmful"]}
    if not rated:
        return title + '<p class="empty">No feedback yet (<code>expertise feedback ID --helpful</code>).</p></section>'
    scale = max(max(c["helpful"], c["harmful"]) for c in rated.values())
    rows = []
    for name, counts in rated.items():
        helpful, harmful = counts["helpful"], counts["harmful"]
        label = f"{_text(name, 60)}: {helpful:,} helpful, {harmful:,} harmful"
        rows.append(
            f'<div class="row"><span class="name">{_text(name, 60)}</span>'
            f"{charts.diverging_bar(helpful, harmful, scale, label)}"
            f'<span class="num">+{helpful:,} / \u2212{harmful:,}</span></div>'
        )
    legend = _swatch("harmful", "harmful (left)") + _swatch("helpful", "helpful (right)")
    body = "".join(
        f"<tr>{_cell('entry', _data(e.text, 200, wrap=True))}{_cell('domain', _data(e.domain, 60))}"
        f"{_cell('helpful', _n(e.helpful), 'num')}{_cell('harmful', _n(e.harmful), 'num')}"
        f"{_cell('id', f'<code>{_text(e.id, 20)}</code>')}</tr>"
        for e in data.feedback
    )
    return (
        f"{title}<p>What agents reported about the entries they were shown, per domain.</p>"
        f'<div class="legend">{legend}</div><div class="rows">{"".join(rows)}</div>'
        '<h3>Entries with the most feedback</h3><div class="scroll"><table class="stack"><thead><tr>'
        '<th>entry</th><th>domain</th><th class="num">helpful</th><th class="num">harmful</th><th>id</th>'
        f"</tr></thead><tbody>{body}</tbody></table></div></section>"
    )


def _stale(data: ReportData) -> str:
    title = '<section id="stale"><h2>Stale entries</h2>'
    if not data.stale:
        none = "None: <code>expertise validate</code> found no entry about code that is gone."
        return f'{title}<p class="empty">{none}</p></section>'
    more = f" The first {len(data.stale)} are listed." if data.stale_count > len(data.stale) else ""
    body = "".join(
        f"<tr>{_cell('entry', _data(e.text, 200, wrap=True))}{_cell('domain', _data(e.domain, 60))}"
        f"{_cell('section', _text(_SHORT.get(e.section, e.section)))}"
        f"{_cell('id', f'<code>{_text(e.id, 20)}</code>')}</tr>"
        for e in data.stale
    )
    return (
        f"{title}<p>{data.stale_count:,} entr{'y' if data.stale_count == 1 else 'ies'} marked stale by "
        "<code>expertise validate</code>: they mention code that is gone, and agents are not shown them "
        f"until it is back or they are edited.{more}</p>"
        '<div class="scroll"><table class="stack"><thead><tr><th>entry</th><th>domain</th><th>section</th>'
        f"<th>id</th></tr></thead><tbody>{body}</tbody></table></div></section>"
    )


def _revision(row: HistoryRow) -> str:
    commit = f"<code>{_text(row.commit[:12])}</code>" if row.commit else "<em>deferred</em>"
    day, _, hour = row.time.removesuffix("Z").partition("T")
    when = f'<span class="when">{_text(day, 20)}</span> {_text(hour[:5], 10)}'
    change = _text(", ".join(row.changes)) + (" <small>(by hand)</small>" if row.by_hand else "")
    sessions = "<br>".join(f'<code class="id">{_text(s, 64)}</code>' for s in row.sessions[:_MAX_SESSIONS])
    if len(row.sessions) > _MAX_SESSIONS:
        sessions += f"<br><small>and {len(row.sessions) - _MAX_SESSIONS} more</small>"
    added = "?" if row.added is None else str(len(row.added))
    removed = "?" if row.removed is None else str(len(row.removed))
    domains = _data(", ".join(row.domains), 120) if row.domains else "-"
    subject = _data(row.subject, 160, wrap=True)
    return (
        f'<tr class="revision">{_cell("commit", commit)}{_cell("time", when)}{_cell("change", change)}'
        f"{_cell('domains', domains)}{_cell('sessions', sessions or '-')}"
        f"{_cell('entries', f'+{added} &minus;{removed}', 'num')}{_cell('subject', subject)}</tr>"
    )


def _revisions(data: ReportData) -> str:
    title = f'<section id="revisions"><h2>Last {LAST_REVISIONS} revisions</h2>'
    if not data.revisions:
        return title + '<p class="empty">No revisions yet.</p></section>'
    body = "".join(_revision(row) for row in data.revisions)
    return (
        f"{title}<p>Newest first: {len(data.revisions)} of {data.revision_count:,}. "
        "<code>expertise history</code> lists them all, <code>expertise diff REV</code> shows one.</p>"
        '<div class="scroll"><table class="stack"><thead><tr><th>commit</th><th>time (UTC)</th><th>change</th>'
        '<th>domains</th><th>sessions</th><th class="num">entries</th><th>subject</th></tr></thead>'
        f"<tbody>{body}</tbody></table></div></section>"
    )


def render_page(data: ReportData) -> str:
    project = _text(data.project, 80)
    return "".join((
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>Expertise report: {project}</title><style>{_css()}</style></head><body>",
        f'<header><h1>Expertise report</h1><p class="meta"><bdi>{project}</bdi> \u00b7 generated '
        f"{_text(data.generated)} \u00b7 {_count(data.revision_count, 'revision')} \u00b7 "
        f"line cap {data.line_cap:,}</p></header><main>",
        _problems(data), _summary(data), _domains(data), _learnings(data), _failures(data), _feedback(data),
        _stale(data), _revisions(data),
        "</main><footer><p>Written by <code>expertise report --html</code> from <code>.expertise/</code> and "
        "its git history; the figures are those of <code>expertise stats</code>.</p></footer></body></html>\n",
    ))  # fmt: skip


def check_output(out: Path, project: Project) -> None:
    """Refuse, before any work, an output path that can't take the page: a directory, a missing parent, a
    place inside ``.expertise/`` or git's own directory (``--html .git/config`` would replace git's config),
    or anything but a regular file (a FIFO, a device, a socket), which an atomic write would replace."""
    try:
        info = os.stat(out)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise UserError(f"can't be checked: {exc.strerror or exc}", path=out, hint="write the page elsewhere") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise UserError("is a directory", path=out, hint="give a file name, such as report.html")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise UserError(
            "is not a regular file (a FIFO, device or socket)",
            path=out,
            hint="move it aside, or write the page elsewhere",
        )
    parent = out.parent
    if not parent.is_dir():
        raise UserError(f"directory {parent} does not exist", path=out, hint="create it, or write the page elsewhere")
    real = os.path.realpath(out)
    places = [(project.expertise_dir, ".expertise/, which holds only the expertise files")]
    if project.git is not None:
        places += [(project.git.git_dir, "git's own directory"), (project.git.common_dir, "git's own directory")]
    for place, what in places:
        home = os.path.realpath(place)
        if real == home or real.startswith(home + os.sep):
            raise UserError(f"is inside {what}", path=out, hint="write the page elsewhere; nothing was changed")


def write_report(data: ReportData, out: Path) -> int:
    """Write the page to ``out``, atomically; returns its size in bytes."""
    page = render_page(data).encode("utf-8")
    write_atomic(out, page)
    return len(page)
