"""The report in a real browser: headless Chromium at a phone's width and a desktop's, light and dark.

Skipped when no Chromium is installed (CI installs Debian's `chromium` when it can: see .ci/run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import Browser, chromium, dump_dom, screenshot
from conftest import Cli
from report_demo import build_demo
from test_report import assert_inert

CHROMIUM = chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no chromium on PATH (Debian: apt-get install chromium); test_report.py checks the HTML without one",
)

# What the page looks like to someone reading it, measured in the page.
_FACTS = """JSON.stringify((() => {
  const boxes = [...document.querySelectorAll('svg')].map(svg => svg.getBoundingClientRect());
  const rights = [...document.body.querySelectorAll('*')].filter(e => !e.closest('.scroll'))
    .map(e => e.getBoundingClientRect().right);
  const body = getComputedStyle(document.body);
  return {
    width: innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    widest: Math.max(...rights),
    scrolling: [...document.querySelectorAll('.scroll')].filter(e => e.scrollWidth > e.clientWidth + 1).length,
    dark: matchMedia('(prefers-color-scheme: dark)').matches,
    background: body.backgroundColor,
    color: body.color,
    svgs: boxes.length,
    drawn: boxes.filter(box => box.width >= 40 && box.height >= 10).length,
    tables: document.querySelectorAll('table').length,
    revisions: [...document.querySelectorAll('tr.revision')].filter(tr => tr.getBoundingClientRect().height > 0).length,
    live: document.querySelectorAll('script, img, iframe, object, embed, link, base, form, a').length,
    heads: getComputedStyle(document.querySelector('#revisions thead')).display,
    label: getComputedStyle(document.querySelector('#revisions td'), '::before').content,
  };
})())"""


def _luminance(css: str) -> float:
    red, green, blue = (int(part) for part in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@pytest.fixture
def page(repo: Path, run: Cli, tmp_path: Path) -> Path:
    build_demo(repo, tmp_path, hostile=True)
    out = tmp_path / "report.html"
    assert run("report", "--html", str(out)).exit_code == 0
    return out


def test_chromium_parses_the_page_with_nothing_live(page: Path) -> None:
    assert CHROMIUM is not None
    written = assert_inert(page.read_text())
    for dark in (False, True):
        parsed = assert_inert(dump_dom(CHROMIUM, page.as_uri(), dark=dark))
        assert parsed.tags.count("svg") == written.tags.count("svg") >= 15
        assert parsed.tags.count("table") == 5 and parsed.classes.count("revision") == 20


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("width", [375, 768, 1280], ids=["phone", "tablet", "desktop"])
def test_charts_and_tables_fit_the_screen(page: Path, width: int, dark: bool) -> None:
    assert CHROMIUM is not None
    with Browser(CHROMIUM) as browser:
        browser.open(page.as_uri(), width=width, dark=dark)
        facts = json.loads(browser.evaluate(_FACTS))
    assert facts["width"] == width and facts["dark"] is dark
    # No sideways scrolling: not the page, not an element, not a table in its box.
    assert facts["scrollWidth"] <= width and facts["widest"] <= width + 0.5 and facts["scrolling"] == 0, facts
    assert facts["svgs"] >= 15 and facts["drawn"] == facts["svgs"], facts  # every chart drawn, none squashed
    assert facts["tables"] == 5 and facts["revisions"] == 20 and facts["live"] == 0, facts
    background, text = _luminance(facts["background"]), _luminance(facts["color"])
    assert (background < 0.2 < 0.7 < text) if dark else (text < 0.3 < 0.9 < background), facts
    if width < 640:  # a table row reads as a card: its cells under each other, each with its label
        assert facts["heads"] == "none" and facts["label"] == '"commit: "', facts
    else:
        assert facts["heads"] != "none" and facts["label"] in ("none", "normal"), facts


def test_screenshots_from_the_command_line(page: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    shots = {}
    for dark in (False, True):
        shots[dark] = tmp_path / f"report-{'dark' if dark else 'light'}.png"
        screenshot(CHROMIUM, page.as_uri(), shots[dark], width=1280, height=900, dark=dark)
        assert shots[dark].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shots[False].read_bytes() != shots[True].read_bytes()
