"""The README's first command runs the demo end to end; it must keep working."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the repo it leaves to look around in lands here
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit.demo"], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "created .expertise/database.yaml" in done.stdout
    assert "already present as" in done.stdout  # the duplicate learning is refused
    assert "expertise: set up .expertise/ with 7 domains" in done.stdout  # history shows the commits
    assert "Expertise-Change: " in done.stdout
    assert "testing: learned" in done.stdout  # the bundled sample session was learned from
    assert "-> changed shop/pricing.py" in done.stdout  # the failing test and what fixed it
    assert "## Project expertise: for this task" in done.stdout  # rendered for a task
    assert f"left at {tmp_path}{os.sep}expertise-demo-" in done.stdout
