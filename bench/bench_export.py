"""`expertise export` with 7 domains at the 1000-line cap (bench_hook's store), side by side with
`expertise --version` (the CLI's own start-up): a first export with no render cache (every file parsed),
a repeat that changes nothing, and `--check`, which a pre-commit hook runs on every commit.

    .venv/bin/python bench/bench_export.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, p50, row, temp_repo, time_command  # noqa: E402
from bench_hook import fill  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    env = bench_env()
    root = temp_repo(env)
    cli = [*expertise_argv(), "-C", str(root)]
    subprocess.run([*cli, "init"], env=env, check=True, capture_output=True)
    fill(root)
    cache = root / ".git" / "expertise" / "cache"
    cold = []
    for _ in range(args.runs):  # no cache, no AGENTS.md: everything parsed and written
        shutil.rmtree(cache, ignore_errors=True)
        (root / "AGENTS.md").unlink(missing_ok=True)
        cold += time_command([*cli, "export", "--to", "agents-md"], 1, env)
    baseline, repeat, check, cursor = [], [], [], []
    for _ in range(args.runs):  # alternate, so all see the same machine load
        baseline += time_command([*cli, "--version"], 1, env)
        repeat += time_command([*cli, "export", "--to", "agents-md"], 1, env)
        check += time_command([*cli, "export", "--to", "agents-md", "--check"], 1, env)
        cursor += time_command([*cli, "export", "--to", "cursor-rules"], 1, env)
    base = p50(baseline)
    print(f"{'7 domains at the cap, p50 of ' + str(args.runs):<44} {'time':>12}   {'ratio':>7}")
    print(row("expertise --version (baseline)", base, base))
    print(row("export --to agents-md, no cache yet", p50(cold), base))
    print(row("export --to agents-md, nothing new", p50(repeat), base))
    print(row("export --to agents-md --check", p50(check), base))
    print(row("export --to cursor-rules, nothing new", p50(cursor), base))
    print(f"AGENTS.md: {len((root / 'AGENTS.md').read_text()):,} characters")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
