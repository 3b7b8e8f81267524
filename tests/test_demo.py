"""The README's first command runs the demo end to end; it must keep working."""

from __future__ import annotations

import subprocess
import sys


def test_demo_runs_end_to_end() -> None:
    done = subprocess.run([sys.executable, "-m", "expertise_kit.demo"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "created .expertise/database.yaml" in done.stdout
    assert "already present as" in done.stdout  # the duplicate learning is refused
    assert "expertise: set up .expertise/ with 7 domains" in done.stdout  # history shows the commits
    assert "Expertise-Change: " in done.stdout
    assert "testing: learned" in done.stdout  # the bundled sample session was learned from
    assert "-> changed shop/pricing.py" in done.stdout  # the failing test and what fixed it
    assert "## Project expertise: for this task" in done.stdout  # rendered for a task
