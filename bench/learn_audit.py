"""Learn every real transcript series in ../shared, one temp project per series, and print the store audit.

Each origin folder is one series: its sessions are learned one at a time in file-name order (Codex and
dated folders sort by time), as a user's hooks would learn them. The figures are summed over series.

Run: python bench/learn_audit.py [--series NAME] [--show N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, temp_repo  # noqa: E402

_SHARED = Path(__file__).resolve().parents[2] / "shared"
TRANSCRIPTS = Path(os.environ.get("EXPERTISE_TRANSCRIPTS") or _SHARED / "fixtures" / "transcripts")


def series() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for agent in sorted(p for p in TRANSCRIPTS.iterdir() if p.is_dir()):
        for origin in sorted(p for p in agent.iterdir() if p.is_dir()):
            files = sorted(
                (f for f in origin.rglob("*") if f.suffix == ".jsonl" or f.name.endswith(".history.md")),
                key=lambda f: (f.name.startswith("agent-"), str(f)),
            )
            if files:
                found[f"{agent.name}/{origin.name}"] = files
    return found


def learn_series(files: list[Path], env: dict[str, str]) -> tuple[Any, dict[str, Any]]:
    from expertise_kit.learning.audit import store_audit
    from expertise_kit.learning.learn import learn_from
    from expertise_kit.project import find_project, project_for_init
    from expertise_kit.store import Store
    from expertise_kit.store.scaffold import initialise

    root = temp_repo(env)
    initialise(project_for_init(root))
    store = Store(find_project(root))
    for path in files:
        learn_from(store, [path])
    return store, store_audit(store)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--series", default="")
    parser.add_argument("--show", type=int, default=0, help="print the entries of each series")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    env = bench_env()
    os.environ.update(env)
    totals: dict[str, float] = {}
    for name, files in series().items():
        if args.series and args.series not in name:
            continue
        store, audit = learn_series(files, env)
        print(name, json.dumps(audit), flush=True)
        failures = audit["failures"]
        for key, value in audit.items():
            totals[key] = totals.get(key, 0) + (value * failures if key == "with_action" else value)
            if key == "near_duplicates":
                totals[key] += value * audit["entries"] - value
        if args.show:
            for domain in store.config.domains:
                if store.path_for(domain).exists():
                    print(f"--- {domain}")
                    print(store.path_for(domain).read_text(encoding="utf-8"))
    if totals.get("failures"):
        totals["with_action"] = round(totals["with_action"] / totals["failures"], 3)
    if totals.get("entries"):
        totals["near_duplicates"] = round(totals["near_duplicates"] / totals["entries"], 3)
    print("TOTAL", json.dumps(totals))


if __name__ == "__main__":
    main()
