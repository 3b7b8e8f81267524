"""Core-file discovery (``expertise improve``): the files that matter to a domain, found and ranked.

Files that matter to a domain are found with the same path rules the classifier uses, among the files
git tracks or would track (so `.gitignore` is respected), leaving out vendored, generated and binary
files, and ranked by how often history touches them rather than by glob order.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from expertise_kit import clock
from expertise_kit.clock import iso
from expertise_kit.document.entries import item_text
from expertise_kit.document.ids import normalise_path
from expertise_kit.fast.classify import path_matches
from expertise_kit.store import Store, WriteResult
from expertise_kit.upkeep.validate import code_index
from expertise_kit.versioning.shared import run

__all__ = ["ImproveReport", "improve_domain", "SKIP_DIRS"]

SKIP_DIRS = {
    "node_modules", "vendor", "third_party", "dist", "build", ".venv", "venv", "__pycache__", ".next",
    "target", "coverage", ".tox", "site-packages", "bower_components", ".expertise", ".git",
}  # fmt: skip
_GENERATED = (".min.js", ".min.css", ".map", ".lock", "_pb2.py", ".pb.go", ".generated.ts", ".snap")
_GENERATED_NAMES = {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Cargo.lock", "go.sum"}
_BINARY = {
    ".png", ".jpg", ".jpeg", ".gif", ".ico", ".webp", ".pdf", ".zip", ".gz", ".tar", ".woff", ".woff2", ".ttf",
    ".eot", ".mp4", ".mp3", ".wasm", ".so", ".dylib", ".dll", ".exe", ".bin", ".pyc", ".jar", ".class",
}  # fmt: skip
HISTORY_DEPTH = 2000
DEFAULT_LIMIT = 20


@dataclass
class ImproveReport:
    domain: str
    considered: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    ranked: list[tuple[str, int]] = field(default_factory=list)
    result: WriteResult | None = None

    def as_json(self) -> dict[str, Any]:
        added = set(self.result.added) if self.result else set()
        return {
            "domain": self.domain,
            "considered": self.considered,
            "skipped": self.skipped,
            "candidates": [{"path": p, "touches": n} for p, n in self.ranked],
            "added": len(added),
            "commit": self.result.commit.sha if self.result and self.result.commit else None,
        }


def _skip_reason(path: str) -> str | None:
    parts = path.split("/")
    if any(part in SKIP_DIRS for part in parts[:-1]):
        return "vendored or build output"
    name = parts[-1]
    if name in _GENERATED_NAMES or name.endswith(_GENERATED):
        return "generated"
    if "." + name.rsplit(".", 1)[-1].lower() in _BINARY:
        return "binary"
    return None


def touches(store: Store) -> Counter[str]:
    """How many of the last ``HISTORY_DEPTH`` commits touched each file, by its path in the project."""
    project = store.project
    counts: Counter[str] = Counter()
    if project.git is None:
        return counts
    try:  # a plain git process: learning asks this too, and importing GitPython costs more than the log
        done = run(project.git, ["log", "--name-only", "--format=", f"-n{HISTORY_DEPTH}"])
    except (OSError, subprocess.SubprocessError):
        return counts  # no git to ask: no history to rank by
    log = done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""
    prefix = project.root.relative_to(project.git.toplevel).as_posix()
    for line in log.splitlines():
        if line.strip():
            counts[line[len(prefix) + 1 :] if prefix not in ("", ".") else line] += 1
    return counts


def improve_domain(store: Store, domain: str, *, limit: int = DEFAULT_LIMIT, dry_run: bool = False) -> ImproveReport:
    report = ImproveReport(domain)
    store.path_for(domain)  # a known, well-formed domain, or a clear error
    rules = store.config.domains[domain].paths
    if not rules:
        return report
    doc = store.load(domain)
    present = {normalise_path(item_text(item)) for item in doc.model.items("core_files")}
    index = code_index(store, since=None)
    candidates = []
    for path in sorted(index.files):
        if not any(path_matches(path, rule) for rule in rules):
            continue
        report.considered += 1
        reason = _skip_reason(path)
        if reason:
            report.skipped[reason] = report.skipped.get(reason, 0) + 1
        elif normalise_path(path) not in present:
            candidates.append(path)
    counts = touches(store)
    ranked = sorted(candidates, key=lambda p: (-counts.get(p, 0), p))[:limit]
    report.ranked = [(p, counts.get(p, 0)) for p in ranked]
    if ranked and not dry_run:
        moment = iso(clock.now())
        items = [
            ("core_files", {"path": p, "source": "learned", "first_seen": moment, "last_seen": moment}) for p in ranked
        ]
        report.result = store.add_items(
            domain,
            items,
            change="improved",
            subject=f"expertise({domain}): discover {len(ranked)} core file{'s' if len(ranked) != 1 else ''}",
        )
    return report
