"""Soak: 10,000 file events through `expertise watch`, with its memory and child processes before and
after, and the delay from a hand edit to its commit.

Run: python bench/bench_watch.py [--events 10000]
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, temp_repo  # noqa: E402


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=4, help="Further rounds, to see whether memory levels off.")
    args = parser.parse_args()
    env = bench_env()
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init"], env=env, check=True, capture_output=True)
    watch = subprocess.Popen(
        [*expertise_argv(), "-C", str(root), "watch", "--debounce", "0.2"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x.rstrip()) for x in watch.stdout or []], daemon=True).start()

    def wait_for(fragment: str, timeout: float = 30.0) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            try:
                if fragment in lines.get(timeout=0.05):
                    return time.monotonic() - start
            except queue.Empty:
                pass
        raise SystemExit(f"timed out waiting for {fragment!r}")

    wait_for("watching")
    scratch = root / "scratch"
    scratch.mkdir()

    def churn(count: int, tag: str) -> float:
        """Bursts of create, modify, rename, delete: 4 operations a file."""
        started = time.perf_counter()
        done = 0
        while done < count:
            for n in range(250):
                path = scratch / f"{tag}{done}_{n}.txt"
                path.write_text("a")
                path.write_text("b")
                moved = path.with_suffix(".md")
                path.rename(moved)
                moved.unlink()
            done += 1000
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        time.sleep(2.0)  # let the last burst settle
        return elapsed

    churn(1000, "warm")  # the first batch loads the store's modules: measure from after it
    rss_before, kids_before = rss_kb(watch.pid), children(watch.pid)
    generated = churn(args.events, "soak")
    operations = args.events
    rss_after, kids_after = rss_kb(watch.pid), children(watch.pid)
    rounds = []  # does it keep growing, or level off?
    for round_number in range(args.rounds):
        churn(args.events, f"r{round_number}_")
        rounds.append(rss_kb(watch.pid))
    latencies = []
    target = root / ".expertise" / "general.yaml"
    for n in range(5):
        before_edit = target.read_text()
        if n == 0:
            target.write_text(before_edit.replace("best_practices: []", "best_practices:\n  - Practice 0"))
        else:
            target.write_text(before_edit.replace(f"Practice {n - 1}", f"Practice {n}"))
        latencies.append(wait_for("hand edit committed"))
        time.sleep(0.3)
    watch.send_signal(signal.SIGTERM)
    watch.wait(timeout=30)
    summary = ""
    while not lines.empty():
        line = lines.get()
        if line.startswith("stopped after"):
            summary = line
    print(f"{operations:,} file operations in {generated:.1f} s ({summary})")
    print(f"  RSS          before {rss_before / 1024:6.1f} MB   after {rss_after / 1024:6.1f} MB")
    print(f"  RSS after each further {operations:,}: " + ", ".join(f"{kb / 1024:.1f}" for kb in rounds) + " MB")
    print(f"  child procs  before {kids_before:6d}      after {kids_after:6d}")
    p50, worst = statistics.median(latencies) * 1000, max(latencies) * 1000
    print(f"  hand edit -> commit: p50 {p50:.0f} ms, max {worst:.0f} ms (debounce 0.2 s)")
    print(f"  exit code on SIGTERM: {watch.returncode}")


if __name__ == "__main__":
    main()
