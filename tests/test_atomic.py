"""A kill at any moment during a write leaves the old file or the new one, never a mix."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import Cli

from expertise_kit.document.yamlio import load_yaml_file

KILL_AT = {
    # where the simulated kill happens: (patched function, kill before or after calling it)
    "mid_temp_write": ("fsync", "before"),
    "before_replace": ("replace", "before"),
    "after_replace": ("replace", "after"),
}


def _crashing_add(project: Path, target: str, when: str) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        f"""
        import os, sys
        from expertise_kit.document import atomic
        real = getattr(os, {target!r})
        def crash(*args, **kwargs):
            if {when!r} == "after":
                real(*args, **kwargs)
            os._exit(137)  # no cleanup, no finally: as good as SIGKILL
        setattr(atomic.os, {target!r}, crash)
        from expertise_kit.cli import cli
        cli(["-C", {str(project)!r}, "add", "database", "patterns", "the new entry"], prog_name="expertise")
        """
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("moment", sorted(KILL_AT))
def test_simulated_kill_leaves_old_or_new(project: Path, run: Cli, moment: str) -> None:
    path = project / ".expertise" / "database.yaml"
    old = path.read_bytes()
    target, when = KILL_AT[moment]
    done = _crashing_add(project, target, when)
    assert done.returncode == 137, done.stderr
    now = path.read_bytes()
    if moment == "after_replace":
        assert b"the new entry" in now
    else:
        assert now == old
    load_yaml_file(path)  # parses either way
    # The next write succeeds and sweeps the dead writer's temp file.
    assert run("add", "database", "patterns", "after the crash").exit_code == 0
    leftovers = [p.name for p in (project / ".expertise").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_sigkill_at_random_moments(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "database.yaml"
    assert run("add", "database", "patterns", "seed").exit_code == 0  # so each add is a one-line insert
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    rng = random.Random(20261122)
    outcomes = {"old": 0, "new": 0}
    for attempt in range(12):
        old = path.read_bytes()
        command = [
            sys.executable,
            "-m",
            "expertise_kit",
            "-C",
            str(project),
            "add",
            "database",
            "patterns",
            f"entry {attempt}",
        ]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(rng.uniform(0.05, 0.6))
        process.send_signal(signal.SIGKILL)
        process.wait()
        now = path.read_bytes()
        if now == old:
            outcomes["old"] += 1
        else:
            outcomes["new"] += 1
            added = f"  - entry {attempt}".encode()
            assert [line for line in now.splitlines() if line != added] == old.splitlines()
            assert now.splitlines().count(added) == 1
        load_yaml_file(path)
    assert sum(outcomes.values()) == 12
