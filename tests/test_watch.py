"""expertise watch with the real watchdog, as a subprocess: hand edits, moves, checkouts, SIGTERM."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Cli, git

WAIT = 20.0  # generous: a slow CI machine must not fail these; the latency is measured in bench/


class Watch:
    def __init__(self, project: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "expertise_kit", "-C", str(project), "watch", "--debounce", "0.2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.expect("watching")

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, fragment: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if fragment in line:
                return line
        raise AssertionError(f"no line with {fragment!r}; saw {self.seen}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=WAIT)


@pytest.fixture
def watching(project: Path) -> Iterator[Watch]:
    watch = Watch(project)
    yield watch
    watch.stop()


def _commits(project: Path) -> int:
    return int(git(project, "rev-list", "--count", "HEAD"))


def test_valid_hand_edit_is_committed_as_the_user(project: Path, watching: Watch) -> None:
    before = _commits(project)
    path = project / ".expertise" / "database.yaml"
    path.write_text(path.read_text().replace("best_practices: []", "best_practices:\n  - Written in my editor"))
    watching.expect("database: hand edit committed")
    assert _commits(project) == before + 1
    assert git(project, "log", "-1", "--format=%an|%s").strip() == "Ada Tester|expertise(database): edit by hand"
    assert git(project, "status", "--porcelain", "--", ".expertise") == ""


def test_invalid_hand_edit_is_neither_committed_nor_touched(project: Path, watching: Watch) -> None:
    before = _commits(project)
    path = project / ".expertise" / "api.yaml"
    broken = "domain: api\npatterns: [half written\n"
    path.write_text(broken)
    line = watching.expect("api: not committed")
    assert "api.yaml:3: invalid YAML" in line
    assert path.read_text() == broken and _commits(project) == before


def test_moved_and_deleted_code_updates_core_files(project: Path, run: Cli, watching: Watch) -> None:
    for name in ("src/db/models.py", "src/db/old.py"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("x = 1\n")
        run("add", "database", "core_files", name)
    time.sleep(1.0)  # let the watcher settle the burst our own adds made
    (project / "src/db/models.py").rename(project / "src/db/model.py")
    (project / "src/db/old.py").unlink()
    watching.expect("database: core_files updated (2)")
    text = (project / ".expertise" / "database.yaml").read_text()
    assert "src/db/model.py" in text and "src/db/models.py" not in text and "src/db/old.py" not in text


def test_a_checkout_makes_at_most_one_revision(project: Path, run: Cli, watching: Watch) -> None:
    files = {f"src/module_{n}.py": f"x = {n}\n" for n in range(200)}
    for name, text in files.items():
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text(text)
    git(project, "add", "src")
    git(project, "commit", "-q", "-m", "many files")
    git(project, "checkout", "-q", "-b", "feature")
    for name in list(files)[:100]:
        (project / name).unlink()
    git(project, "commit", "-q", "-am", "drop half")
    time.sleep(1.0)
    start = _commits(project)
    git(project, "checkout", "-q", "main")
    git(project, "checkout", "-q", "feature")
    time.sleep(2.0)  # let the watcher see and settle the burst
    assert _commits(project) - start <= 1


def test_sigterm_stops_cleanly(project: Path) -> None:
    watch = Watch(project)
    assert watch.stop() == 0
    assert watch.expect("stopped").startswith("stopped after ")


def test_an_editor_save_dance_changes_nothing(project: Path, run: Cli, watching: Watch) -> None:
    target = project / "src" / "app.py"
    target.parent.mkdir()
    target.write_text("x = 1\n")
    run("add", "general", "core_files", "src/app.py")
    time.sleep(1.0)
    before = _commits(project)
    # What many editors do on save: write a temp file, move the original aside, rename the temp over.
    temp = target.with_name(".app.py.swp")
    temp.write_text("x = 2\n")
    target.rename(target.with_name("app.py~"))
    temp.rename(target)
    target.with_name("app.py~").unlink()
    time.sleep(2.0)
    assert _commits(project) == before
    assert "src/app.py" in (project / ".expertise" / "general.yaml").read_text()
