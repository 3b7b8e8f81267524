"""A realistic project for the report, built through the real CLI from the transcript builders.

Three weeks of sessions: a push failure learned twice and then gone, a cart test that keeps failing, a
Codex migration, hand-written rules, feedback, and an entry made stale by ``validate``. Commit dates are
spread with ``GIT_AUTHOR_DATE``/``GIT_COMMITTER_DATE`` (environment, not a stand-in for git), and
``clock.now`` follows the same time. ``hostile=True`` adds markup where the store keeps text: entries
edited in by hand, a commit subject, forged ``Expertise-*`` trailers, a session id and a file name in a
transcript. Used by tests/test_report*.py and scripts/report_screenshot.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from builders import CWD, ClaudeSession, shop_session, write_codex
from click.testing import CliRunner, Result

from expertise_kit import clock
from expertise_kit.cli import cli

__all__ = ["build_demo", "HOSTILE", "DEMO_START"]

DEMO_START = datetime(2026, 10, 31, 9, 0, tzinfo=timezone.utc)
HOSTILE = [
    "<script>alert(1)</script> close the tag",
    '"><img src=x onerror=alert(1)> in an attribute',
    "control\x07chars\x1b[31m and a \u202eRTL override\u202c here",
    "</td></tr></table><h1>forged heading</h1>",
    "<svg onload=alert(1)><style>body{display:none}</style>",
]


def _git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, env=env)
    return done.stdout


class _Demo:
    def __init__(self, root: Path, tmp: Path) -> None:
        self.root = root
        self.tmp = tmp
        self.moment = DEMO_START
        self.counter = 0

    def at(self, days: float) -> None:
        self.moment = DEMO_START + timedelta(days=days)

    def run(self, *args: str) -> Result:
        stamp = self.moment.strftime("%Y-%m-%dT%H:%M:%S+0000")
        result = CliRunner().invoke(
            cli, ["-C", str(self.root), *args], env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
            catch_exceptions=False,
        )  # fmt: skip
        assert result.exit_code == 0, (args, result.output, result.stderr)
        return result

    def commit(self, message: str) -> None:
        """A commit of everything, by a person, at the demo's current time."""
        stamp = self.moment.strftime("%Y-%m-%dT%H:%M:%S+0000")
        env = {**os.environ, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        _git(self.root, "add", "-A", env=env)
        _git(self.root, "commit", "-q", "-m", message, env=env)

    def learn(self, session: ClaudeSession) -> None:
        self.counter += 1
        self.run("learn", str(session.write(self.tmp / f"session-{self.counter}.jsonl")))

    def entry_id(self, domain: str, needle: str) -> str:
        shown = json.loads(self.run("show", domain, "--json").stdout)["entries"]
        return str(next(e["id"] for e in shown if needle in json.dumps(e)))


def _push(session_id: str, branch: str) -> ClaudeSession:
    s = ClaudeSession(session_id)
    s.prompt("Ship the fix")
    s.tool("Edit", {"file_path": f"{CWD}/shop/cart.py", "old_string": "a", "new_string": "b"}, "ok")
    s.bash("git push", f"fatal: The current branch {branch} has no upstream branch.", exit_code=128)
    s.bash(f"git push --set-upstream origin {branch}", "branch set up to track")
    s.say("Pushed.")
    return s


def _flaky(session_id: str, n: int) -> ClaudeSession:
    s = ClaudeSession(session_id)
    s.prompt("The cart test fails again")
    s.bash(
        "python -m pytest tests/test_cart.py -q",
        f"E   KeyError: 'currency'\nFAILED tests/test_cart.py::test_cart_{n} - KeyError\n1 failed",
        exit_code=1,
    )
    s.tool("Read", {"file_path": f"{CWD}/shop/cart.py"}, "def cart(): ...")
    s.tool("Edit", {"file_path": f"{CWD}/shop/cart.py", "old_string": "a", "new_string": "b"}, "ok")
    s.bash("python -m pytest tests/test_cart.py -q", "1 passed")
    s.say("Fixed.")
    return s


def _docs(session_id: str, page: str) -> ClaudeSession:
    s = ClaudeSession(session_id)
    s.prompt("Tidy the docs")
    s.tool("Edit", {"file_path": f"{CWD}/docs/{page}.md", "old_string": "a", "new_string": "b"}, "ok")
    s.say("Done.")
    return s


def build_demo(root: Path, tmp: Path, *, hostile: bool = False) -> Path:
    """Fill the git repo at ``root`` (one commit, nothing else) with a few weeks of expertise."""
    for name in ("shop/pricing.py", "shop/checkout.py", "shop/cart.py", "shop/money.py", "tests/test_cart.py",
                 "app/models.py", "docs/index.md"):  # fmt: skip
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\ndef total(cart):\n    return cart\n")
    (root / "shop" / "legacy_tax.py").write_text("def legacy_rounding(x):\n    return x\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the shop")
    demo = _Demo(root, tmp)
    saved = clock.now
    clock.now = lambda: demo.moment  # feedback, validate's retention: the demo's own time
    try:
        _fill(demo, root, tmp, hostile)
    finally:
        clock.now = saved
    return root


def _fill(demo: _Demo, root: Path, tmp: Path, hostile: bool) -> None:
    demo.run("init")
    demo.at(0.1)
    demo.run("add", "database", "patterns", "Always use UUID primary keys")
    demo.run("add", "security", "best_practices", "Never log request bodies: they carry card numbers")
    demo.run("add", "general", "patterns", "Round money with `legacy_rounding()` from shop/legacy_tax.py")
    demo.at(1)
    demo.learn(shop_session("5e55104e-1d2c-4b1a-9f00-000000000001"))
    demo.at(2)
    demo.learn(_push("1aaaaaaa-0000-4000-8000-000000000001", "feat/cart"))
    demo.at(3.5)
    demo.run("learn", str(write_codex(tmp / "codex.jsonl")))
    demo.at(5)
    demo.learn(_push("1aaaaaaa-0000-4000-8000-000000000002", "feat/tax"))
    for n, day in enumerate((6, 8, 9.5, 12, 13, 15.5, 17, 19), start=3):
        demo.at(day)
        if n % 3 == 0:
            demo.learn(_flaky(f"2bbbbbbb-0000-4000-8000-00000000000{n}", n))
        else:
            demo.learn(_docs(f"3ccccccc-0000-4000-8000-00000000000{n}", f"page{n}"))
    demo.at(19.5)
    demo.run("feedback", demo.entry_id("general", "git push"), "--helpful")
    demo.run("feedback", demo.entry_id("general", "git push"), "--helpful")
    demo.run("feedback", demo.entry_id("database", "UUID"), "--helpful")
    demo.run("feedback", demo.entry_id("testing", "checkout"), "--harmful", "--note", "the fix was elsewhere")
    demo.at(20)
    (root / "shop" / "legacy_tax.py").unlink()
    demo.commit("drop the legacy tax code")
    demo.run("validate")
    if hostile:
        demo.at(20.5)
        # By hand, as a person (or a merge) could: `add` refuses control characters, YAML's escapes don't.
        # Each names a helper that doesn't exist, so validate marks it stale and the page lists it.
        api = root / ".expertise" / "api.yaml"
        quoted = "".join(f"  - {json.dumps(text + ' `vanished_helper()`', ensure_ascii=True)}\n" for text in HOSTILE)
        api.write_text(api.read_text().replace("\npatterns: []\n", f"\npatterns:\n{quoted}", 1))
        demo.commit("<script>alert(5)</script> \u202eedited by hand")
        # Trailers are only text in a commit message: anyone can write them.
        (root / ".expertise" / "security.yaml").write_text(
            (root / ".expertise" / "security.yaml").read_text() + "# reviewed\n"
        )
        forged = "\n".join(f"Expertise-{key}: {value}" for key, value in (
            ("Domain", "<img src=x onerror=alert(6)>"), ("Change", "learned"),
            ("Session", '"><script>alert(7)</script>'), ("Added", "<b>x</b>"),
        ))  # fmt: skip
        demo.commit(f"forged trailers\n\n{forged}")
        demo.run("validate")
        evil = ClaudeSession('"><script>alert(2)</script>')
        evil.prompt("<b>bold</b> prompt")
        evil.tool("Edit", {"file_path": f"{CWD}/shop/<img src=x onerror=alert(3)>.py", "old_string": "a",
                           "new_string": "b"}, "ok")  # fmt: skip
        evil.bash("make <script>", "E   <iframe src=javascript:alert(4)>\n1 failed", exit_code=2)
        evil.bash("make build", "ok")
        evil.say("Done.")
        demo.learn(evil)
        demo.run("feedback", demo.entry_id("general", "onerror"), "--harmful")
