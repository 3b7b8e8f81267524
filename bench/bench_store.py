"""`show` and `add` on a domain file at the 1000-line cap, side by side with Python's start-up.

Run: python bench/bench_store.py [--runs N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, p50, python_startup, row, temp_repo, time_call, time_command  # noqa: E402

from expertise_kit.document.cap import count_lines  # noqa: E402
from expertise_kit.project import find_project  # noqa: E402
from expertise_kit.store import Store  # noqa: E402


def learned(text: str, day: int) -> dict[str, object]:
    return {
        "text": text,
        "source": "learned",
        "sessions": [f"session-{day:04d}"],
        "first_seen": f"2026-{1 + day % 12:02d}-{1 + day % 28:02d}T10:00:00Z",
        "last_seen": f"2026-{1 + day % 12:02d}-{1 + day % 28:02d}T10:00:00Z",
    }


def fill_to_cap(root: Path) -> Path:
    store = Store(find_project(root))
    items = [
        ("effective_patterns", learned(f"Pattern number {n}: grep for the symbol, then read it", n)) for n in range(200)
    ]
    store.add_items("database", items)
    path = root / ".expertise" / "database.yaml"
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = bench_env()
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init"], check=True, env=env, stdout=subprocess.DEVNULL)
    path = fill_to_cap(root)
    lines = count_lines(path.read_text())
    print(f"domain file: {lines} lines (cap 1000), {path.stat().st_size:,} bytes; p50 of {args.runs} runs\n")

    startup = p50(python_startup(args.runs, env))
    show_cli = p50(time_command([*expertise_argv(), "-C", str(root), "show", "database"], args.runs, env))
    show_json = p50(time_command([*expertise_argv(), "-C", str(root), "show", "database", "--json"], args.runs, env))
    counter = iter(range(10**6))
    add_cli = p50(
        [
            time_command(
                [*expertise_argv(), "-C", str(root), "add", "database", "patterns", f"rule {next(counter)}"], 1, env
            )[0]
            for _ in range(args.runs)
        ]
    )
    store = Store(find_project(root))
    load = p50(time_call(lambda: store.load("database"), args.runs))
    add_call = p50(
        time_call(lambda: store.add_items("database", [("patterns", f"in-process rule {next(counter)}")]), args.runs)
    )
    print(f"{'what':<44} {'p50':>12}   {'vs python -I -c pass':>6}")
    print(row("python -I -c pass (baseline)", startup, startup))
    print(row("expertise show database", show_cli, startup))
    print(row("expertise show database --json", show_json, startup))
    print(row("expertise add (prunes to stay at the cap)", add_cli, startup))
    print(row("Store.load, in process", load, startup))
    print(row("Store.add_items, in process (prunes)", add_call, startup))
    print(f"\nfile after the adds: {count_lines(path.read_text())} lines")


if __name__ == "__main__":
    main()
