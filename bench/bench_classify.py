"""The classifier against real, author-labelled tasks, side by side with a keyword-count baseline.

The labelled set is built from public git histories that use conventional commits: the author's own
type and scope (`fix(db-postgres): ...`, `test: ...`, `ci: ...`) give the label, the rest of the subject
is the task description, and the commit's changed files are the task's files. Nothing from those
repositories is stored here: point the script at local clones.

Run: python bench/bench_classify.py REPO_DIR [REPO_DIR ...] [--per-repo N]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from expertise_kit.config import Config
from expertise_kit.fast.classify import classify, rules_from

DOMAINS = ["database", "api", "frontend", "testing", "security", "deployment", "general"]
_SUBJECT = re.compile(r"^(?P<type>[a-z]+)(?:\((?P<scope>[^)]*)\))?!?:\s*(?P<text>.+)$")
TYPE_LABELS = {"test": "testing", "tests": "testing", "ci": "deployment", "docs": "general"}
SCOPE_LABELS = {
    "database": ("db", "database", "drizzle", "postgres", "mongodb", "mongo", "sqlite", "migration", "migrations",
                 "prisma", "orm", "sql", "mysql", "kysely"),
    "frontend": ("ui", "dashboard", "admin-ui", "webapp", "web", "frontend", "css", "styles", "components", "www",
                 "design-system", "react", "vue"),
    "api": ("api", "graphql", "rest", "oas", "openapi", "server", "endpoint", "endpoints", "routes", "trpc"),
    "security": ("auth", "security", "permissions", "access-control", "oauth", "2fa", "csrf", "jwt"),
    "testing": ("test", "tests", "e2e", "testing", "integration-tests", "playwright", "jest", "vitest"),
    "deployment": ("ci", "docker", "deploy", "deployment", "helm", "k8s", "infra", "workflows", "github-actions"),
    "general": ("docs", "readme"),
}  # fmt: skip


def _label(kind: str, scope: str) -> str | None:
    if scope:
        parts = {p.strip() for p in scope.split(",")}
        hits = {d for d, names in SCOPE_LABELS.items() for p in parts for n in names if p == n or p.startswith(n + "-")}
        if len(hits) == 1:
            return hits.pop()
        if hits:
            return None  # the author named two domains: not a clean label
    return TYPE_LABELS.get(kind)


def build_set(repo: Path, limit: int) -> list[dict[str, object]]:
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--no-merges", "--format=\x1e%s", "--name-only", f"-n{limit * 20}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout  # fmt: skip  (a shallow snapshot ends early: use what was read)
    tasks = []
    for record in log.split("\x1e")[1:]:
        lines = [line for line in record.splitlines() if line.strip()]
        if not lines:
            continue
        match = _SUBJECT.match(lines[0])
        if not match or "deps" in (match["scope"] or "") or match["type"] in ("chore", "release", "revert"):
            continue
        label = _label(match["type"], match["scope"] or "")
        if label is None:
            continue
        tasks.append({"description": match["text"], "files": lines[1:51], "label": label, "repo": repo.name})
        if len(tasks) >= limit:
            break
    return tasks


# The baseline, for the side-by-side: counting keyword substrings, plus three file rules.
BASELINE_KEYWORDS = {
    "database": ["database", "schema", "migration", "sql", "postgres", "table", "column", "index", "query", "transaction"],
    "api": ["api", "endpoint", "route", "rest", "graphql", "http", "request", "response", "json", "websocket"],
    "frontend": ["ui", "component", "react", "vue", "angular", "frontend", "css", "html", "style", "button", "form", "page"],
    "testing": ["test", "spec", "validation", "assert", "mock", "fixture", "pytest", "jest", "playwright", "coverage"],
    "security": ["auth", "authentication", "authorization", "security", "permission", "token", "encrypt", "password", "jwt"],
    "deployment": ["deploy", "docker", "kubernetes", "ci", "cd", "build", "release", "container", "pipeline", "environment"],
}  # fmt: skip


def baseline_classify(description: str, files: list[str]) -> str:
    text = description.lower()
    scores = {domain: 0 for domain in DOMAINS}
    for domain, keywords in BASELINE_KEYWORDS.items():
        for keyword in keywords:
            if keyword in text:
                scores[domain] += 1
    for file in files:
        lowered = file.lower()
        if "test" in lowered:
            scores["testing"] += 2
        elif "api" in lowered or "route" in lowered:
            scores["api"] += 2
        elif "component" in lowered or "ui" in lowered:
            scores["frontend"] += 2
    best = max(scores, key=lambda d: scores[d])
    return best if scores[best] > 0 else "general"


def recall(gold: list[str], predicted: list[str]) -> dict[str, float]:
    """Per domain: the share of its tasks found (security's was ~0.3 on real tasks)."""
    found = {}
    for domain in DOMAINS:
        total = sum(1 for g in gold if g == domain)
        hits = sum(1 for g, p in zip(gold, predicted, strict=True) if g == p == domain)
        found[domain] = hits / total if total else float("nan")
    return found


def macro_f1(gold: list[str], predicted: list[str]) -> tuple[float, float, dict[str, float]]:
    per_class = {}
    for domain in DOMAINS:
        tp = sum(1 for g, p in zip(gold, predicted, strict=True) if g == p == domain)
        fp = sum(1 for g, p in zip(gold, predicted, strict=True) if p == domain and g != domain)
        fn = sum(1 for g, p in zip(gold, predicted, strict=True) if g == domain and p != domain)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        per_class[domain] = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    present = [d for d in DOMAINS if d in gold]
    macro = sum(per_class[d] for d in present) / len(present)
    accuracy = sum(1 for g, p in zip(gold, predicted, strict=True) if g == p) / len(gold)
    return macro, accuracy, per_class


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--per-repo", type=int, default=1500)
    parser.add_argument("--dump", type=Path, help="Write the labelled set as JSON lines here.")
    args = parser.parse_args()
    tasks = [t for repo in args.repos for t in build_set(repo, args.per_repo)]
    if not tasks:
        sys.exit("no labelled tasks found")
    if args.dump:
        args.dump.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    rules = rules_from(Config.default().domains)
    gold = [str(t["label"]) for t in tasks]
    ours = [classify(str(t["description"]), list(t["files"]), rules).domain for t in tasks]  # type: ignore[arg-type]
    baseline = [baseline_classify(str(t["description"]), list(t["files"])) for t in tasks]  # type: ignore[arg-type]
    print(f"{len(tasks):,} tasks from {len(args.repos)} repositories; labels: {dict(Counter(gold).most_common())}\n")
    print(f"{'classifier':<28} {'macro-F1':>9} {'accuracy':>9}   per-domain F1")
    for name, predicted in (("baseline (substrings)", baseline), ("expertise_kit", ours)):
        macro, accuracy, per_class = macro_f1(gold, predicted)
        detail = " ".join(f"{d[:5]}={per_class[d]:.2f}" for d in DOMAINS)
        print(f"{name:<28} {macro:9.3f} {accuracy:9.3f}   {detail}")
        found = " ".join(f"{d[:5]}={r:.2f}" for d, r in recall(gold, predicted).items())
        print(f"{'':<48}recall {found}")


if __name__ == "__main__":
    main()
