"""Make docs/report.png: the report of the tests' demo project, in headless Chromium.

Run from the repository root: .venv/bin/python scripts/report_screenshot.py [--out docs/report.png]
Needs chromium on PATH. The project is built in a temp dir by tests/report_demo.py (the transcript
builders and the real CLI), with the clock set to just after its last session.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import Browser, chromium  # noqa: E402
from report_demo import DEMO_START, build_demo  # noqa: E402

from expertise_kit import clock  # noqa: E402
from expertise_kit.cli import cli  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png")
    parser.add_argument("--width", type=int, default=760)
    parser.add_argument("--height", type=int, default=1700, help="how much of the page, from the top")
    args = parser.parse_args()
    binary = chromium()
    if binary is None:
        raise SystemExit("no chromium on PATH (Debian: apt-get install chromium)")
    work = Path(tempfile.mkdtemp(prefix="expertise-report-demo-"))
    identity = {"GIT_AUTHOR_NAME": "Ada Tester", "GIT_AUTHOR_EMAIL": "ada@example.test"}
    os.environ.update({**identity, "GIT_COMMITTER_NAME": "Ada Tester", "GIT_COMMITTER_EMAIL": "ada@example.test"})
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    repo = work / "shop"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True)
    build_demo(repo, work)
    clock.now = lambda: DEMO_START + timedelta(days=21)  # a day after the last session
    page = work / "report.html"
    cli(["-C", str(repo), "report", "--html", str(page)], standalone_mode=False)
    with Browser(binary) as browser:
        browser.open(page.as_uri(), width=args.width, height=args.height)
        browser.screenshot(args.out)
    print(f"{args.out}: {args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
