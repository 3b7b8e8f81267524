"""Versioning budgets, side by side in one run.

1. One revision: our commit step (`commit_revision`, then the check that the committed blob is the bytes
   written) against a bare `git commit --only` of the same file, alternating, after the same one-line
   change each time. Budget: ratio <= 1.5.
2. `expertise history` over 10,000 revisions. Budget: <= 1 s.

Run: python bench/bench_versioning.py [--runs N] [--revisions N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, p50, temp_repo, time_command  # noqa: E402


def one_revision(runs: int) -> None:
    import os

    env = bench_env()
    os.environ.update({k: v for k, v in env.items() if k.startswith("GIT_") or k == "HOME"})
    from expertise_kit.project import find_project, project_for_init
    from expertise_kit.store import Store
    from expertise_kit.store.scaffold import initialise
    from expertise_kit.store.transaction import committed_holds
    from expertise_kit.versioning.commit import Revision, commit_revision

    root = temp_repo(env)
    initialise(project_for_init(root))
    project = find_project(root)
    store = Store(project)
    ours_file = root / ".expertise" / "database.yaml"
    bare_file = root / ".expertise" / "api.yaml"
    git_argv = ["git", "-c", "commit.gpgsign=false", "commit", "--only", "--no-verify", "--quiet", "-m"]
    ours: list[float] = []
    bare: list[float] = []
    for n in range(runs):
        with open(bare_file, "a") as handle:
            handle.write(f"# bare change {n}\n")
        start = time.perf_counter()
        subprocess.run([*git_argv, f"bare change {n}", "--", str(bare_file)], cwd=root, env=env, check=True)
        bare.append(time.perf_counter() - start)

        with open(ours_file, "a") as handle:
            handle.write(f"# our change {n}\n")
        revision = Revision(
            domains=["database"],
            change="learned",
            subject=f"expertise(database): learn 1 entry from session s{n}",
            paths=[".expertise/database.yaml"],
            sessions=[f"s{n}"],
            added=[f"0000{n:04d} patterns: entry {n}"],
        )
        data = ours_file.read_bytes()
        start = time.perf_counter()
        outcome = commit_revision(project, revision)
        assert outcome.sha, outcome
        held = committed_holds(store, outcome.sha, ours_file, data)
        ours.append(time.perf_counter() - start)
        assert held
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, env=env, capture_output=True, text=True)
    assert status.stdout == "", status.stdout
    ratio = p50(ours) / p50(bare)
    print(f"one revision, p50 of {runs} alternating runs:")
    print(f"  bare `git commit --only` of one file   {p50(bare) * 1000:8.1f} ms")
    print(f"  expertise commit + blob check (same file) {p50(ours) * 1000:6.1f} ms")
    print(f"  ratio                                   {ratio:8.2f}x   (budget <= 1.5)")


def _fast_import(root: Path, revisions: int, env: dict[str, str]) -> None:
    """10,000 commits of .expertise/database.yaml with our trailers, written by git fast-import."""
    chunks: list[bytes] = []
    lines = ["domain: database", "patterns:"]
    stamp = 1_790_000_000
    for n in range(revisions):
        lines.append(f"  - entry number {n}")
        content = ("\n".join(lines) + "\n").encode()
        entry = f"{n:08x}"
        message = (
            f"expertise(database): learn 1 entry from session s{n}\n\n+ {entry} patterns: entry number {n}\n\n"
            f"Expertise-Domain: database\nExpertise-Change: learned\nExpertise-Session: s{n}\n"
            f"Expertise-Added: {entry}\n"
        ).encode()
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(f"committer Bench <bench@example.test> {stamp + n} +0000\n".encode())
        chunks.append(f"data {len(message)}\n".encode() + message)
        if n == 0:
            chunks.append(b"from refs/heads/main^0\n")
        chunks.append(f"M 100644 inline .expertise/database.yaml\ndata {len(content)}\n".encode() + content + b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(chunks), env=env, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, env=env, check=True)


def history_over(revisions: int, runs: int) -> None:
    env = bench_env()
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init"], env=env, check=True, capture_output=True)
    _fast_import(root, revisions, env)
    count = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=root, env=env, capture_output=True, text=True)
    log = ["git", "log", "--format=%H%x1f%ct%x1f%an%x1f%s%x1f%(trailers:only,unfold)%x1e", "--", ".expertise/"]
    git_log = p50(time_command(log, runs, env, cwd=root))
    human = p50(time_command([*expertise_argv(), "-C", str(root), "history"], runs, env))
    as_json = p50(time_command([*expertise_argv(), "-C", str(root), "history", "--json"], runs, env))
    one_domain = p50(time_command([*expertise_argv(), "-C", str(root), "history", "database", "--json"], runs, env))
    print(f"\n`expertise history` over {int(count.stdout) - 1:,} revisions, p50 of {runs} runs:")
    print(f"  plain `git log` with the same format    {git_log * 1000:8.1f} ms")
    print(f"  expertise history                       {human * 1000:8.1f} ms   {human / git_log:5.2f}x git log")
    print(f"  expertise history --json                {as_json * 1000:8.1f} ms   {as_json / git_log:5.2f}x git log")
    print(f"  expertise history database --json       {one_domain * 1000:8.1f} ms   (budget <= 1000 ms)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--revisions", type=int, default=10_000)
    args = parser.parse_args()
    one_revision(args.runs)
    history_over(args.revisions, max(3, args.runs // 8))


if __name__ == "__main__":
    main()
