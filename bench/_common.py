"""Helpers shared by the benchmarks: temp projects, a pinned git identity, and p50 timing."""

from __future__ import annotations

import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.test",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.test",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def scratch_dir(prefix: str) -> Path:
    """A new temp directory, removed when the bench exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return Path(path)


def bench_env() -> dict[str, str]:
    home = str(scratch_dir("expertise-bench-home-"))
    # The installed hooks run `expertise-hook` from PATH: this interpreter's.
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])
    return {**os.environ, **IDENTITY, "HOME": home, "PATH": path}


def temp_repo(env: dict[str, str]) -> Path:
    root = scratch_dir("expertise-bench-")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    (root / "README.md").write_text("bench\n")
    subprocess.run(["git", "add", "README.md"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=root, check=True, env=env)
    return root


def time_command(argv: list[str], runs: int, env: dict[str, str], cwd: Path | None = None) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
        samples.append(time.perf_counter() - start)
    return samples


def time_call(function: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return samples


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def python_startup(runs: int, env: dict[str, str]) -> list[float]:
    return time_command([sys.executable, "-I", "-c", "pass"], runs, env)


def expertise_argv() -> list[str]:
    return [sys.executable, "-m", "expertise_kit"]


def row(label: str, seconds: float, baseline: float) -> str:
    return f"{label:<44} {seconds * 1000:9.1f} ms   {seconds / baseline:6.2f}x"
