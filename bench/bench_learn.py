"""Learning from a 50 MB Claude Code transcript, commit included, side by side with plain orjson parsing.

Budget: <= 1.0 s wall and <= 100 MB peak RSS for `expertise learn`. Both are measured as whole
processes (Python start-up included) so the ratio compares like with like.

Two transcripts: a synthetic one (``--mb``), and real data: the three largest Claude Code 2.1 series of
../shared/fixtures (sessions 07aae638, 67fded5a and 833425ea, CLI 2.1.152-2.1.159) concatenated again and
again to 46 MB, learned into a fresh store and then into one that already learned them.

Run: python bench/bench_learn.py [--mb 50] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, temp_repo  # noqa: E402

_SERIES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "transcripts" / "claude" / (
    "maxnoobineating+UbuntuDevcontainer_Dotfiles/projects"
)
REAL_SERIES = [
    _SERIES / "-root-nand2tetris-volumn-projects-esp32-cat-vent" / "07aae638-ddcc-4bc0-b041-541fd9a5a666.jsonl",
    _SERIES / "-root-nand2tetris-volumn-projects-esp32-cat-vent" / "67fded5a-e96e-4bdc-b68a-f3d175a61b76.jsonl",
    _SERIES / "-root-nand2tetris-volumn-projects-esp32" / "833425ea-99b9-4a53-8a30-bed9645f60d9.jsonl",
]


def build_real_transcript(path: Path, megabytes: int = 46) -> tuple[int, int, int]:
    """The real series concatenated up to ``megabytes``: (records, tool calls, failed tool results)."""
    data = b"".join(series.read_bytes() for series in REAL_SERIES)
    with open(path, "wb") as handle:
        while handle.tell() < megabytes << 20:
            handle.write(data if data.endswith(b"\n") else data + b"\n")
    copies = path.stat().st_size // len(data)
    count = lambda needle: data.count(needle) * copies  # noqa: E731
    return count(b"\n"), count(b'"type":"tool_use"'), count(b'"is_error":true')

CWD = "/home/dev/shop"
_PARSE_ONLY = """
import sys, orjson
count = 0
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        if line.strip():
            orjson.loads(line)
            count += 1
print(count)
"""


def build_transcript(path: Path, megabytes: int) -> int:
    """A long, realistic session: reads of real-sized files, edits, test runs, some failing, repeated."""
    body = "".join(f"    line {n}: value = compute(value, {n})  # padding to look like code\n" for n in range(160))
    session = "be4c0000-0000-4000-8000-00000000b001"
    parent = None
    count = 0
    stamp = 0
    target = megabytes << 20
    with open(path, "w", encoding="utf-8") as handle:

        def emit(kind: str, message: dict[str, object], extra: dict[str, object] | None = None) -> None:
            nonlocal parent, count, stamp
            count += 1
            stamp += 1
            uuid = f"{count:08x}-0000-4000-8000-{count:012x}"
            record = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": CWD,
                      "sessionId": session, "version": "2.0.74", "type": kind, "message": message, "uuid": uuid,
                      "timestamp": f"2026-11-20T{10 + stamp // 3600 % 10:02d}:{stamp // 60 % 60:02d}:"
                                   f"{stamp % 60:02d}.000Z",
                      **(extra or {})}  # fmt: skip
            handle.write(json.dumps(record) + "\n")
            parent = uuid

        def tool(name: str, params: dict[str, object], output: str, error: bool = False) -> None:
            tool_id = f"toolu_{count:024d}"
            emit(
                "assistant",
                {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": params}]},
            )
            result: dict[str, object] = {"tool_use_id": tool_id, "type": "tool_result", "content": output}
            if error:
                result["is_error"] = True
            emit("user", {"role": "user", "content": [result]}, {"toolUseResult": {"stdout": output[:200]}})

        emit("user", {"role": "user", "content": "Make the pricing module use Decimal everywhere"})
        turn = 0
        while handle.tell() < target:
            turn += 1
            module = f"{CWD}/shop/module_{turn % 40}.py"
            tool("Read", {"file_path": module}, body)
            tool("Edit", {"file_path": module, "old_string": "float(", "new_string": "Decimal("}, "ok")
            if turn % 7 == 0:
                tool(
                    "Bash",
                    {"command": "python -m pytest -q"},
                    f"E   AssertionError: assert {turn} == 0\n1 failed",
                    True,
                )
            else:
                tool("Bash", {"command": "python -m pytest -q"}, f"{turn} passed in 0.5s")
        emit("assistant", {"role": "assistant", "content": [{"type": "text", "text": "All modules use Decimal."}]})
    return count


def run_measured(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds and peak RSS (MB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr}")
    # ru_maxrss of children is the max over all children so far: run the big one last or compare fresh.
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024, done.stdout


def peak_rss_of(argv: list[str], env: dict[str, str]) -> float:
    """Peak RSS in MB, measured in a fresh grandchild so earlier children don't mask it."""
    probe = (
        "import resource, subprocess, sys;"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run([sys.executable, "-c", probe, *argv], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.strip()) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = bench_env()
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init"], env=env, check=True, capture_output=True)
    transcript = root.parent / f"{root.name}-session.jsonl"
    records = build_transcript(transcript, args.mb)
    size = transcript.stat().st_size
    print(f"transcript: {size / (1 << 20):.1f} MB, {records:,} records\n")
    parse_argv = [sys.executable, "-c", _PARSE_ONLY, str(transcript)]
    learn_argv = [*expertise_argv(), "-C", str(root), "learn", str(transcript)]
    parse_times, learn_times = [], []
    commits: list[str] = []
    for run in range(args.runs):
        parse_times.append(run_measured(parse_argv, env)[0])
        # Each learn run starts from the same state: undo the previous run's commits and files.
        if run:
            subprocess.run(["git", "reset", "-q", "--hard", "HEAD~" + str(len(commits))], cwd=root, env=env, check=True)
        head_before = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, env=env, capture_output=True, text=True
        ).stdout
        learn_times.append(run_measured(learn_argv, env)[0])
        commits = subprocess.run(
            ["git", "rev-list", f"{head_before.strip()}..HEAD"], cwd=root, env=env, capture_output=True, text=True
        ).stdout.split()
    parse_rss = peak_rss_of(parse_argv, env)
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~" + str(len(commits))], cwd=root, env=env, check=True)
    learn_rss = peak_rss_of(learn_argv, env)
    best_parse, best_learn = min(parse_times), min(learn_times)
    print(f"{'what':<46} {'wall (best of ' + str(args.runs) + ')':>18} {'peak RSS':>10}")
    print(f"{'plain orjson line parsing (python + orjson)':<46} {best_parse:16.3f} s {parse_rss:8.1f} MB")
    print(f"{'expertise learn, commit included':<46} {best_learn:16.3f} s {learn_rss:8.1f} MB")
    print(f"\nratio learn / parse: {best_learn / best_parse:.2f}x   budget: <= 1.0 s wall, <= 100 MB peak RSS")
    print(f"commits made by one learn: {len(commits)}")
    os.unlink(transcript)
    if all(series.is_file() for series in REAL_SERIES):
        real_case(env, args.runs)
    else:
        print("\nreal data: ../shared/fixtures not found; skipped")


def real_case(env: dict[str, str], runs: int) -> None:
    """Real Claude Code 2.1 sessions, 46 MB: into a fresh store, then into one that already learned them."""
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init"], env=env, check=True, capture_output=True)
    transcript = root.parent / f"{root.name}-real.jsonl"
    records, calls, failures = build_real_transcript(transcript)
    size = transcript.stat().st_size
    print(f"\nreal data: {size / (1 << 20):.1f} MB, {records:,} records, {calls:,} tool calls, {failures:,} failed")
    argv = [*expertise_argv(), "-C", str(root), "learn", str(transcript)]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, env=env, capture_output=True, text=True).stdout
    fresh, again = [], []
    for _ in range(runs):
        subprocess.run(["git", "reset", "-q", "--hard", head.strip()], cwd=root, env=env, check=True)
        fresh.append(run_measured(argv, env)[0])
        again.append(run_measured(argv, env)[0])
    subprocess.run(["git", "reset", "-q", "--hard", head.strip()], cwd=root, env=env, check=True)
    fresh_rss = peak_rss_of(argv, env)
    again_rss = peak_rss_of(argv, env)
    print(f"{'expertise learn, into a fresh store':<46} {min(fresh):16.3f} s {fresh_rss:8.1f} MB")
    print(f"{'expertise learn, into one that learned them':<46} {min(again):16.3f} s {again_rss:8.1f} MB")
    shown = ", ".join(f"{t:.2f}" for t in fresh), ", ".join(f"{t:.2f}" for t in again)
    print(f"  every run, fresh: {shown[0]} s; again: {shown[1]} s")
    print("budget: <= 1.0 s wall, <= 100 MB peak RSS")
    os.unlink(transcript)


if __name__ == "__main__":
    main()
