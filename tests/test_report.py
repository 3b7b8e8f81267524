"""`expertise report --html`: one self-contained page, the numbers of `expertise stats`, nothing live from
the store, and every bad input named in one line."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import Cli, git, snapshot
from hypothesis import given, settings
from hypothesis import strategies as st
from report_demo import HOSTILE, build_demo

from expertise_kit import clock
from expertise_kit.report.collect import LAST_REVISIONS, DomainSummary, EntrySummary, ReportData, learning_buckets
from expertise_kit.report.page import render_page
from expertise_kit.versioning.log import HistoryRow

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_report import fast_history  # noqa: E402

# Every element the page may contain. Anything else in the parsed page came from data.
ALLOWED = {
    "html", "head", "meta", "title", "style", "body", "header", "main", "footer", "section", "h1", "h2", "h3",
    "p", "div", "span", "small", "code", "em", "bdi", "br", "ul", "li", "table", "thead", "tbody", "tr", "th",
    "td", "figure", "figcaption", "svg", "rect", "line",
}  # fmt: skip
ATTRIBUTES = {
    "lang", "charset", "http-equiv", "content", "name", "id", "class", "data-label", "aria-label", "viewbox",
    "preserveaspectratio", "role", "x", "y", "width", "height", "x1", "x2", "y1", "y2",
}  # fmt: skip


class _Page(HTMLParser):
    """The page as a browser's tokenizer sees it: elements, attributes and text."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.ids: list[str] = []
        self.classes: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes.extend(attrs)
        self.ids.extend(value or "" for name, value in attrs if name == "id")
        self.classes.extend(value or "" for name, value in attrs if name == "class")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock, "now", lambda: datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc))


def assert_inert(page: str) -> _Page:
    parsed = _Page(page)
    assert set(parsed.tags) <= ALLOWED, set(parsed.tags) - ALLOWED
    # No attribute that fetches, links or runs anything: only these.
    assert {name for name, _ in parsed.attributes} <= ATTRIBUTES, {name for name, _ in parsed.attributes}
    # Nothing to fetch in the CSS either, and a policy that would refuse it anyway.
    css = page[page.index("<style>") : page.index("</style>")]
    assert "url(" not in css and "@import" not in css
    assert "default-src 'none'" in page
    # Control characters and direction overrides are gone; newlines only separate the CSS's lines.
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]", page)
    return parsed


def _report(run: Cli, out: Path) -> str:
    result = run("report", "--html", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"wrote {out} (")
    return out.read_text(encoding="utf-8")


def test_the_page_shows_what_stats_counts(repo: Path, run: Cli, tmp_path: Path) -> None:
    build_demo(repo, tmp_path)
    page = _report(run, tmp_path / "report.html")
    parsed = assert_inert(page)
    stats = json.loads(run("stats", "--json").stdout)
    history = json.loads(run("history", "--json").stdout)
    for section in ("summary", "domains", "learnings", "failures", "feedback", "stale", "revisions"):
        assert section in parsed.ids
    # One bar per domain, the timeline, one per learning domain, one per failure, one per rated domain.
    rated = [d for d, c in stats["feedback"]["per_domain"].items() if c["helpful"] or c["harmful"]]
    bars = 7 + 1 + len(stats["learnings_per_domain"]) + len(stats["recurring_failures"]) + len(rated)
    assert parsed.tags.count("svg") == bars and parsed.tags.count("table") == 5
    text = " ".join(" ".join(parsed.text).split())
    assert f"{sum(stats['learnings_per_day'].values())} entries learned" in text
    assert f"{stats['reflection']['entries']} entries written by agents" in text
    assert f"{len(history)} revisions" in text
    for failure in stats["recurring_failures"]:
        assert failure["issue"] in text
    stopped = sum(f["stopped"] for f in stats["recurring_failures"])
    assert f"{stopped} of {len(stats['recurring_failures'])} top failures stopped" in text
    assert "Round money with `legacy_rounding()` from shop/legacy_tax.py" in text  # the stale entry
    assert "+3 / \u22121 helpful / harmful" in text
    shown = re.findall(r'<tr class="revision"><td data-label="commit"><code>([0-9a-f]{12})</code>', page)
    assert shown == [row["commit"][:12] for row in history[:LAST_REVISIONS]]


def test_hostile_entries_sessions_and_subjects_stay_text(repo: Path, run: Cli, tmp_path: Path) -> None:
    build_demo(repo, tmp_path, hostile=True)
    page = _report(run, tmp_path / "report.html")
    parsed = assert_inert(page)
    text = " ".join(parsed.text)
    for hostile in HOSTILE[:2] + HOSTILE[3:]:
        assert hostile in text  # shown, as text
    assert "controlchars[31m and a RTL override here" in text  # the characters went, the words stayed
    assert '"><script>alert(7)</script>' in text  # a forged session trailer
    assert "<img src=x onerror=alert(6)>" in text  # a forged domain trailer
    assert "<script>alert(5)</script> edited by hand" in text  # a commit subject
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page


def test_500_revisions_list_exactly_the_last_20(repo: Path, run: Cli, tmp_path: Path) -> None:
    import os

    assert run("init").exit_code == 0
    fast_history(repo, 500, dict(os.environ), lines=60)
    page = _report(run, tmp_path / "report.html")
    assert_inert(page)
    newest = git(repo, "log", "-n", str(LAST_REVISIONS), "--format=%H", "--", ".expertise/").split()
    shown = re.findall(r'<tr class="revision"><td data-label="commit"><code>([0-9a-f]{12})</code>', page)
    assert shown == [sha[:12] for sha in newest]
    total = int(git(repo, "rev-list", "--count", "HEAD", "--", ".expertise/"))
    assert f"Newest first: 20 of {total:,}." in page and total == 502  # init, 500, and the tip


def test_an_empty_store_renders(project: Path, run: Cli, tmp_path: Path) -> None:
    page = _report(run, tmp_path / "report.html")
    assert_inert(page)
    assert "Nothing learned yet." in page and "No learned failures yet." in page and "No feedback yet" in page
    assert page.count('<tr class="revision">') == 1  # init's own revision


def test_to_standard_output(project: Path, run: Cli) -> None:
    result = run("report", "--html", "-")
    assert result.exit_code == 0 and result.stdout.startswith("<!DOCTYPE html>")
    assert_inert(result.stdout)


def test_a_broken_domain_file_is_named_and_the_rest_shown(project: Path, run: Cli, tmp_path: Path) -> None:
    (project / ".expertise" / "api.yaml").write_text("domain: api\npatterns: [unclosed\n")
    out = tmp_path / "report.html"
    result = run("report", "--html", str(out))
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("expertise: error: ") and ".expertise/api.yaml:" in line
    page = out.read_text()
    assert_inert(page)
    assert "Files that could not be read" in page and "<code>.expertise/api.yaml:3: " in page
    assert str(project) not in page  # a page to share names no path of this machine
    assert '<span class="name">database</span><svg' in page and '<span class="bad">error</span>' in page
    [row] = [r for r in json.loads(run("list", "--json").stdout) if r["domain"] == "api"]
    assert row["error"].startswith(".expertise/api.yaml:3: ")


def test_a_project_outside_git(tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    run = Cli(outside)
    assert run("init").exit_code == 0
    page = _report(run, tmp_path / "report.html")
    assert_inert(page)
    assert "not in a git repository" in page and "<em>deferred</em>" in page


def test_an_unborn_branch(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    run = Cli(fresh)
    assert run("init").exit_code == 0  # its commit is deferred: there is nothing to commit onto
    page = _report(run, tmp_path / "report.html")
    assert_inert(page)
    assert page.count('<tr class="revision">') == 1 and "<em>deferred</em>" in page


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("dir", "is a directory; give a file name, such as report.html"),
        ("missing/report.html", "does not exist; create it, or write the page elsewhere"),
        (".expertise/report.html", "is inside .expertise/, which holds only the expertise files"),
    ],
)
def test_a_bad_output_path_writes_nothing(project: Path, run: Cli, tmp_path: Path, target: str, message: str) -> None:
    (tmp_path / "dir").mkdir()
    out = project / target if target.startswith(".expertise") else tmp_path / target
    before = snapshot(project), snapshot(tmp_path)
    result = run("report", "--html", str(out))
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"expertise: error: {out}: ") and message in line
    assert (snapshot(project), snapshot(tmp_path)) == before


@pytest.mark.parametrize("target", [".git/config", ".git/HEAD", ".git/new-file.html"])
def test_a_page_is_never_written_into_git_s_own_directory(project: Path, run: Cli, target: str) -> None:
    out = project / target
    before = snapshot(project / ".git")
    result = run("report", "--html", str(out))
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"expertise: error: {out}: is inside git's own directory")
    assert snapshot(project / ".git") == before
    git(project, "status")  # the repository still works


def test_a_link_into_git_s_directory_is_refused(project: Path, run: Cli, tmp_path: Path) -> None:
    link = tmp_path / "report.html"
    link.symlink_to(project / ".git" / "config")
    config = (project / ".git" / "config").read_bytes()
    result = run("report", "--html", str(link))
    assert result.exit_code == 1 and "git's own directory" in result.stderr
    assert (project / ".git" / "config").read_bytes() == config and link.is_symlink()


def test_a_fifo_is_refused_not_replaced(project: Path, run: Cli, tmp_path: Path) -> None:
    fifo = tmp_path / "report.html"
    os.mkfifo(fifo)
    result = run("report", "--html", str(fifo))
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"expertise: error: {fifo}: is not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_broken_config_is_one_line_and_no_page(project: Path, run: Cli, tmp_path: Path) -> None:
    (project / ".expertise" / "config.yaml").write_text("line_cap: [\n")
    result = run("report", "--html", str(tmp_path / "report.html"))
    assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1 and "config.yaml" in result.stderr
    assert not (tmp_path / "report.html").exists()


def test_html_is_required(project: Path, run: Cli) -> None:
    result = run("report")
    assert result.exit_code == 2 and "--html" in result.stderr


def test_the_cached_view_matches_a_fresh_parse(repo: Path, run: Cli, tmp_path: Path) -> None:
    build_demo(repo, tmp_path)
    first = _report(run, tmp_path / "cold.html")
    views = repo / ".git" / "expertise" / "cache" / "views"
    assert sorted(p.name for p in views.iterdir()) == sorted(f"{d}.json" for d in (
        "database", "api", "frontend", "testing", "security", "deployment", "general"))  # fmt: skip
    second = _report(run, tmp_path / "warm.html")
    assert first == second
    # A torn cache file is a miss, not an error; a hand edit is a miss that shows the edit.
    (views / "general.json").write_bytes(b'{"key": "1:0.1.0:')
    general = repo / ".expertise" / "general.yaml"
    general.write_text(general.read_text().replace("Round money with", "Round all money with"))
    third = _report(run, tmp_path / "edited.html")
    assert "Round all money with" in third

    def without_ids(page: str) -> str:  # an entry's id is made from its text
        return re.sub(r"<code>[0-9a-f]{8}</code>", "", page.replace("Round all money", "Round money"))

    assert without_ids(third) == without_ids(second)


def test_the_report_is_written_in_a_child_process_too(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", "-C", str(project), "report", "--html", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_inert(out.read_text())


# -- the page builder on its own: any text at all stays text --------------------------------------

_ANY_TEXT = st.text(st.characters(codec="utf-8"), max_size=80)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(_ANY_TEXT, min_size=8, max_size=8))
def test_any_text_from_the_store_stays_text(texts: list[str]) -> None:
    entry = EntrySummary(texts[0], "patterns", texts[1], texts[2], True, 2, 1, True)
    row = HistoryRow(commit="a" * 40, time=texts[3], author=texts[4], subject=texts[5], domains=[texts[6]],
                     changes=["learned"], sessions=[texts[7]])  # fmt: skip
    data = ReportData(
        project=texts[4], generated="2026-11-20T10:00:00Z", line_cap=1000, in_git=True,
        domains=[DomainSummary(texts[0], texts[1], "error", error=texts[2])],
        stats={
            "learnings_per_day": {"2026-11-20": 1}, "learnings_per_domain": {texts[6]: 1},
            "recurring_failures": [{"id": texts[1], "domain": texts[0], "issue": texts[2], "error": texts[3],
                                    "recurrence": 2, "first_seen": None, "last_seen": texts[4],
                                    "sessions_since_last_seen": 1, "stopped": False}],
            "injected_chars": {"sessions": 0, "mean": None}, "correction_rate": {"share": None},
            "feedback": {"per_domain": {texts[0]: {"helpful": 2, "harmful": 1, "ended_well": 0}}, "revisions": 1},
            "reflection": {"entries": 1},
        },
        revisions=[row], revision_count=1, learnings_unit="day", learnings=[("2026-11-20", 1)],
        feedback=[entry], stale=[entry], stale_count=1,
    )  # fmt: skip
    parsed = assert_inert(render_page(data))
    assert parsed.tags.count("tr") == 10  # five tables, each a head row and one row
    assert parsed.tags.count("svg") == 4  # the timeline, one learning domain, one failure, one rated domain


@settings(max_examples=200, deadline=None)
@given(
    days=st.dictionaries(st.dates(date(2000, 1, 1), date(2030, 12, 31)).map(date.isoformat), st.integers(0, 50),
                         max_size=30),
    today=st.dates(date(2000, 1, 1), date(2031, 12, 31)),
)  # fmt: skip
def test_learning_buckets_keep_every_learning_and_no_gap(days: dict[str, int], today: date) -> None:
    unit, buckets = learning_buckets(days, today)
    assert sum(count for _, count in buckets) == sum(days.values())
    if not days:
        assert buckets == []
        return
    starts = [date.fromisoformat(key) for key, _ in buckets]
    assert starts == sorted(starts) and len(starts) == len(set(starts))
    assert starts[0] <= min(date.fromisoformat(d) for d in days) and starts[-1] <= max(
        today, *map(date.fromisoformat, days)
    )
    step = {"day": 1, "week": 7}.get(unit)
    for before, after in zip(starts, starts[1:], strict=False):
        if step:
            assert after - before == timedelta(days=step)
        else:
            assert after.day == 1 and (after.year * 12 + after.month) - (before.year * 12 + before.month) == 1
    assert len(buckets) <= {"day": 92, "week": 106}.get(unit, 12 * 40)


def test_learning_buckets_ignore_a_day_that_is_not_a_date() -> None:
    assert learning_buckets({"2026-11-20": 2, "not a day": 5}, date(2026, 11, 21)) == (
        "day", [("2026-11-20", 2), ("2026-11-21", 0)])  # fmt: skip
