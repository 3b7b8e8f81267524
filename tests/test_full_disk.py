"""A nearly full disk, for real: a small tmpfs filled to a few pages short, then `expertise add`.

Whatever the gap, an add either refuses in one line about space with nothing changed, or writes the entry
and commits it or records it as pending (one line naming the cause, a hint about space, never about a
lock); once there is room again, the next add commits every pending entry under trailers that list it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import IDENTITY, Cli, git

LOCK_HINT = "another git process holds the index"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"can't mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def _fill(disk: Path, leave: int) -> None:
    """Leave about ``leave`` bytes free on ``disk``."""
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    found = os.statvfs(disk)
    size = found.f_bavail * found.f_frsize - leave
    with filler.open("wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, max(size, 1))


def test_a_full_disk_never_loses_an_entry_nor_shows_a_traceback(small_disk: Path) -> None:
    root = small_disk / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", IDENTITY["GIT_COMMITTER_NAME"])
    git(root, "config", "user.email", IDENTITY["GIT_COMMITTER_EMAIL"])
    (root / "README.md").write_text("# demo\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial")
    run = Cli(root)
    assert run("init").exit_code == 0
    api = root / ".expertise" / "api.yaml"
    added: list[str] = []
    outcomes: set[str] = set()
    for step, leave in enumerate([0, 4096, 8192, 12288, 16384, 20480, 24576, 32768, 65536]):
        _fill(small_disk, leave)
        before = api.read_bytes()
        result = run("add", "api", "patterns", f"Lesson number {step} about pagination")
        lines = result.stderr.splitlines()
        assert "Traceback" not in result.output and len(lines) <= 1, result.output
        assert not any(LOCK_HINT in line for line in lines)
        if result.exit_code == 1:
            outcomes.add("refused")
            assert "no space left on device" in lines[0] and "nothing was changed" in lines[0]
            assert api.read_bytes() == before
            continue
        assert result.exit_code == 0
        [entry] = [word for word in result.stdout.split() if len(word) == 8 and word.isalnum()][:1]
        added.append(entry)
        if lines:
            outcomes.add("deferred")
            assert lines[0].startswith("note: commit deferred: no space left on device")
            assert "free some space" in lines[0]
            history = json.loads(run("history", "--json").stdout)
            deferred = [row for row in history if not row.get("sha")]
            assert any(entry in json.dumps(row) for row in deferred), history
        else:
            outcomes.add("committed")
    assert {"refused", "deferred", "committed"} <= outcomes, outcomes
    (small_disk / "filler").unlink()
    result = run("add", "api", "patterns", "Lesson written once there is room")
    assert result.exit_code == 0 and result.stderr == ""
    log = git(root, "log", "--format=%B").splitlines()
    trailers = " ".join(line for line in log if line.startswith("Expertise-Added"))
    assert all(entry in trailers for entry in added), (added, trailers)
    assert git(root, "status", "--porcelain") == ""
