"""`expertise report --html` over a big history, end to end. Budget: 10,000 revisions in <= 2 s.

The repo is made in about a second with `git fast-import`: 10,000 revisions of the seven domain files over
a year, carrying our trailers (learned, feedback, validated and manual changes, sessions, entries added
and removed), plus a few commits made by hand with no trailers (their entry changes are worked out from
the two versions). The domain files at the tip are realistic: learned entries with sessions, recurrence,
feedback, failures and stale marks, one line each as the learner writes them.

Printed, p50 of --runs runs, each a fresh process:
  - the same `git log` the report reads, for scale;
  - the report with domain files of --lines lines each (default 150), with the parsed files remembered
    (`document/view.py`: any run after the first, for files not changed since) and on a first run (a
    fresh clone, or every file changed);
  - the same with all seven files at the line cap, 1,000 one-line entries each (the most a capped file
    holds), and `expertise list` on that store: there parsing the YAML is nearly all of it, and `list`,
    `show` and `validate` pay it on every run.

Run: python bench/bench_report.py [--revisions N] [--runs N] [--lines N]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, p50, scratch_dir, temp_repo, time_command  # noqa: E402

DOMAINS = ("database", "api", "frontend", "testing", "security", "deployment", "general")
START = 1_764_000_000  # 2025-11-24: a year of history ending in late 2026
YEAR = 365 * 86_400
HAND_EVERY = 1000  # one commit in this many is a person's, with no trailers


def _session(n: int) -> str:
    return f"{n:08x}-5e55-4000-8000-{n * 7919 % 16**12:012x}"


def _small(domain: str, n: int) -> bytes:
    return f"domain: {domain}\npatterns:\n  - entry number {n} of {domain}\n".encode()


def domain_text(domain: str, lines: int, sessions: list[str], rng: random.Random) -> str:
    """A domain file of about ``lines`` lines, in the layout the store writes."""
    head = [
        "# yaml-language-server: $schema=expertise.schema.json",
        f"domain: {domain}",
        f'overview: "What this project knows about {domain}."',
    ]
    stamp = "'2026-{:02d}-{:02d}T10:00:00Z'"
    body: dict[str, list[str]] = {
        "core_files": [], "patterns": [], "best_practices": [], "learned_from_failures": [],
        "effective_patterns": [], "successful_techniques": [],
    }  # fmt: skip
    budget = max(0, lines - len(head) - len(body) - 1)
    for n in range(budget):
        seen = rng.sample(sessions, k=min(len(sessions), rng.randint(1, 3)))
        first, last = stamp.format(rng.randint(1, 6), rng.randint(1, 28)), stamp.format(rng.randint(7, 11), 2)
        helpful, harmful = rng.choice((0, 0, 0, 1, 2)), rng.choice((0,) * 9 + (1,))
        stale = ", stale: true" if n % 40 == 7 else ""
        common = (
            f"source: learned, sessions: [{', '.join(seen)}], first_seen: {first}, last_seen: {last}, "
            f"recurrence: {len(seen)}, helpful: {helpful}, harmful: {harmful}{stale}"
        )
        kind = n % 6
        if kind == 0:
            body["core_files"].append(f"  - {{path: src/{domain}/module_{n}.py, {common}}}")
        elif kind == 1:
            body["learned_from_failures"].append(
                f"  - {{issue: '`make {domain}-{n}`', error: 'E   KeyError: key_{n}', "
                f"solution: 'changed src/{domain}/module_{n}.py', {common}}}"
            )
        else:
            section = ("patterns", "best_practices", "effective_patterns", "successful_techniques")[kind - 2]
            body[section].append(f"  - {{text: 'Lesson {n} about {domain}: run the checks before pushing', {common}}}")
    out = list(head)
    for key, items in body.items():
        out.append(f"{key}:" if items else f"{key}: []")
        out.extend(items)
    out.append("last_validated: '2026-11-01T00:00:00Z'")
    return "\n".join(out) + "\n"


def fast_history(root: Path, revisions: int, env: dict[str, str], *, lines: int = 150, seed: int = 7) -> None:
    """``revisions`` revisions of ``.expertise/`` in ``root`` (initialised, on main), by one fast-import;
    then the tip's domain files, ``lines`` lines each, as the last revision."""
    rng = random.Random(seed)
    chunks: list[bytes] = []
    step = YEAR // max(1, revisions)
    session = 0
    sessions: list[str] = []
    for n in range(revisions):
        domain = DOMAINS[rng.randrange(len(DOMAINS))]
        path = f".expertise/{domain}.yaml"
        roll = rng.random()
        if n % HAND_EVERY == HAND_EVERY - 1:
            message = f"tidy {domain} by hand\n"
        else:
            change = "learned" if roll < 0.8 else "feedback" if roll < 0.9 else "validated" if roll < 0.93 else "manual"
            trailers = [f"Expertise-Domain: {domain}", f"Expertise-Change: {change}"]
            if change == "learned":
                if rng.random() < 0.6:
                    session += 1
                    sessions.append(_session(session))
                trailers.append(f"Expertise-Session: {_session(session)}")
            added = [f"{rng.getrandbits(32):08x}" for _ in range(rng.randint(1, 3))] if change != "feedback" else []
            if added:
                trailers.append(f"Expertise-Added: {' '.join(added)}")
            if change in ("validated", "manual") and rng.random() < 0.5:
                trailers.append(f"Expertise-Removed: {rng.getrandbits(32):08x}")
            message = f"expertise({domain}): {change} revision {n}\n\n" + "\n".join(trailers) + "\n"
        data = message.encode()
        content = _small(domain, n)
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(f"committer Bench <bench@example.test> {START + n * step} +0000\n".encode())
        chunks.append(f"data {len(data)}\n".encode() + data)
        if n == 0:
            chunks.append(b"from refs/heads/main^0\n")
        chunks.append(f"M 100644 inline {path}\ndata {len(content)}\n".encode() + content + b"\n")
    # The tip: every domain file as a real store has it, in one learned revision.
    message = (
        "expertise(7 domains): learn the tip\n\nExpertise-Domain: general\nExpertise-Change: learned\n"
        f"Expertise-Session: {_session(session + 1)}\n"
    ).encode()
    chunks.append(b"commit refs/heads/main\n")
    chunks.append(f"committer Bench <bench@example.test> {START + YEAR} +0000\n".encode())
    chunks.append(f"data {len(message)}\n".encode() + message)
    recent = sessions[-200:] or [_session(1)]
    for domain in DOMAINS:
        content = domain_text(domain, lines, recent, rng).encode()
        chunks.append(f"M 100644 inline .expertise/{domain}.yaml\ndata {len(content)}\n".encode() + content + b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(chunks), env=env, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, env=env, check=True)


def _store(revisions: int, lines: int, env: dict[str, str]) -> Path:
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init"], env=env, check=True, capture_output=True)
    fast_history(root, revisions, env, lines=lines)
    return root


def _timed(root: Path, out: Path, runs: int, env: dict[str, str], *, cold: bool) -> float:
    """p50 of the report, each run a fresh process; ``cold``: with no remembered views (a fresh clone)."""
    views = root / ".git" / "expertise" / "cache" / "views"
    argv = [*expertise_argv(), "-C", str(root), "report", "--html", str(out)]
    samples = []
    for _ in range(runs):
        if cold:
            shutil.rmtree(views, ignore_errors=True)
        else:
            subprocess.run(argv, env=env, check=True, capture_output=True)  # the views are remembered
        samples.extend(time_command(argv, 1, env))
    return p50(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lines", type=int, default=150)
    args = parser.parse_args()
    env = bench_env()
    out = scratch_dir("expertise-report-") / "report.html"
    small = _store(args.revisions, args.lines, env)
    listed = subprocess.run(
        [*expertise_argv(), "-C", str(small), "history", "--json"], env=env, capture_output=True, text=True, check=True
    )
    log = ["git", "log", "--format=%H%x1f%ct%x1f%an%x1f%s%x1f%(trailers:only,unfold)%x1e", "--", ".expertise/"]
    git_log = p50(time_command(log, args.runs, env, cwd=small))
    warm = _timed(small, out, args.runs, env, cold=False)
    cold = _timed(small, out, args.runs, env, cold=True)
    size = out.stat().st_size
    capped = _store(args.revisions, 1000, env)
    few = max(1, args.runs // 2)
    capped_warm = _timed(capped, out, few, env, cold=False)
    capped_cold = _timed(capped, out, few, env, cold=True)
    listing = p50(time_command([*expertise_argv(), "-C", str(capped), "list"], few, env))
    print(f"`expertise report --html` over {len(json.loads(listed.stdout)):,} revisions, p50, each a fresh process:")
    print(f"  plain `git log` with the report's format          {git_log * 1000:8.1f} ms")
    print(f"  domain files of {args.lines} lines, views remembered        {warm * 1000:8.1f} ms   (budget <= 2000 ms)")
    print(f"  domain files of {args.lines} lines, first run (no views)    {cold * 1000:8.1f} ms")
    print(f"  seven files at the 1,000-line cap, views remembered {capped_warm * 1000:8.1f} ms")
    print(f"  seven files at the cap, first run (no views)        {capped_cold * 1000:8.1f} ms")
    print(f"  `expertise list` on that store, for scale           {listing * 1000:8.1f} ms")
    print(f"  page size: {size:,} bytes")


if __name__ == "__main__":
    main()
