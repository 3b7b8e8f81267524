"""Keeping expertise true to the code: renamed files followed, deleted ones dropped, mentions of code
that is gone marked stale, failures past retention pruned. One ``validated`` commit per run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from expertise_kit import clock
from expertise_kit.clock import iso
from expertise_kit.document.domainfile import DomainDoc
from expertise_kit.document.entries import FailureEntry, FileEntry, Item, is_learned, item_id, item_last_seen, item_text
from expertise_kit.document.ids import normalise_path
from expertise_kit.document.splice import Edit, Remove, Replace, SetKey
from expertise_kit.errors import UserError
from expertise_kit.store import Store, describe_entry
from expertise_kit.store.transaction import Transaction
from expertise_kit.versioning.commit import CommitOutcome
from expertise_kit.versioning.git import open_repo, run_git
from expertise_kit.versioning.merge import conflicts_in
from expertise_kit.vocab import FAILURES, FILES, section, section_names

__all__ = ["ValidationReport", "validate_domain", "validate_domains", "code_index", "CodeIndex"]

_PATH_MENTION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z]{1,5})(?![\w/])")
_SYMBOL_MENTION = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?`")
_NOT_SYMBOLS = {"true", "false", "none", "null", "self", "cls", "pytest", "git", "npm", "make", "python"}
_RENAME_HISTORY = 500  # commits scanned for renames when a domain was never validated


@dataclass
class CodeIndex:
    """What exists in the project now: tracked and untracked-but-not-ignored files, and renames."""

    files: set[str]
    basenames: set[str]
    directories: set[str]
    renames: dict[str, tuple[str, str]]  # old path -> (new path, commit)

    def exists(self, path: str) -> bool:
        clean = normalise_path(path)
        return clean.rstrip("/") in self.files or clean.rstrip("/") in self.directories

    def follow(self, path: str) -> tuple[str, str] | None:
        """Where a renamed file went, following chains (a -> b -> c), if it still exists there."""
        seen = set()
        current, commit = normalise_path(path), ""
        while current in self.renames and current not in seen:
            seen.add(current)
            current, commit = self.renames[current]
        return (current, commit) if seen and self.exists(current) else None


def code_index(store: Store, since: str | None) -> CodeIndex:
    project = store.project
    files: set[str] = set()
    renames: dict[str, tuple[str, str]] = {}
    if project.git is not None:
        with open_repo(project.git.toplevel) as repo:
            listed = run_git(repo, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]).stdout
            prefix = project.root.relative_to(project.git.toplevel).as_posix()
            for name in listed.split("\0"):
                if name and (project.git.toplevel / name).exists():
                    files.add(
                        name[len(prefix) + 1 :] if prefix not in ("", ".") and name.startswith(prefix + "/") else name
                    )
            args = ["log", "-M", "--diff-filter=R", "--name-status", "--format=%H", "--reverse"]
            args += [f"--since={since}"] if since else [f"-n{_RENAME_HISTORY}"]
            log = run_git(repo, args, check=False).stdout
            commit = ""
            for line in log.splitlines():
                parts = line.split("\t")
                if len(parts) == 1 and len(line) in (40, 64):
                    commit = line
                elif len(parts) == 3 and parts[0].startswith("R"):
                    renames[parts[1]] = (parts[2], commit)
            staged = run_git(repo, ["diff", "--cached", "-M", "--name-status"], check=False).stdout
            for line in staged.splitlines():
                parts = line.split("\t")
                if len(parts) == 3 and parts[0].startswith("R"):
                    renames[parts[1]] = (parts[2], "staged")
    else:
        for path in project.root.rglob("*"):
            if path.is_file() and ".git" not in path.parts and ".expertise" not in path.parts:
                files.add(path.relative_to(project.root).as_posix())
    directories = {"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)}
    return CodeIndex(files, {f.rsplit("/", 1)[-1] for f in files}, directories, renames)


@dataclass
class ValidationReport:
    domain: str
    renamed: list[dict[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    removed_lines: list[str] = field(default_factory=list)
    stale: list[dict[str, Any]] = field(default_factory=list)
    unstaled: list[str] = field(default_factory=list)
    pruned_failures: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)  # left by a merge, until a person resolves them
    last_validated: str = ""
    commit: CommitOutcome | None = None

    @property
    def problems(self) -> int:
        """What needs correcting now; entries already marked stale were seen by a human and don't count."""
        fresh = sum(1 for s in self.stale if s.get("new"))
        return len(self.renamed) + len(self.removed) + fresh + len(self.pruned_failures) + len(self.conflicts)

    def as_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "renamed": self.renamed,
            "removed": self.removed,
            "stale": self.stale,
            "no_longer_stale": self.unstaled,
            "pruned_failures": self.pruned_failures,
            "conflicts": self.conflicts,
            "last_validated": self.last_validated,
            "problems": self.problems,
            "commit": self.commit.sha if self.commit else None,
        }


def _mentions(item: Item) -> list[str]:
    if isinstance(item, str):
        return [item]
    if isinstance(item, FailureEntry):
        return [item.issue, item.error, item.solution or ""]
    if isinstance(item, FileEntry):
        return []
    return [item.text]


def _path_is_gone(path: str, index: CodeIndex) -> bool:
    if "/" in path:
        return not index.exists(path) and path.rsplit("/", 1)[-1] not in index.basenames
    return _looks_like_file(path) and path not in index.basenames


def _missing_mentions(texts: list[str], index: CodeIndex, symbols_present: set[str]) -> list[str]:
    """Paths and backticked identifiers a text names that the code no longer has."""
    missing: list[str] = []
    for text in texts:
        missing.extend(path for path in _PATH_MENTION.findall(text) if _path_is_gone(path, index))
        for symbol in _SYMBOL_MENTION.findall(text):
            name = symbol.rsplit(".", 1)[-1]
            if name.lower() not in _NOT_SYMBOLS and len(name) > 2 and name not in symbols_present:
                missing.append(f"{symbol}()")
    return list(dict.fromkeys(missing))


_CODE_EXTENSIONS = {
    "py", "ts", "tsx", "js", "jsx", "go", "rs", "rb", "java", "kt", "sql", "vue", "svelte", "css", "scss",
    "c", "h", "cpp", "hpp", "cs", "php", "swift", "yaml", "yml", "toml", "json", "md",
}  # fmt: skip


def _looks_like_file(name: str) -> bool:
    return name.rsplit(".", 1)[-1].lower() in _CODE_EXTENSIONS


def _symbols_present(store: Store, candidates: set[str]) -> set[str]:
    """Which identifiers occur as whole words in the tracked files (one `git grep` for all)."""
    project = store.project
    if not candidates or project.git is None:
        return set(candidates)  # without git we can't search cheaply: assume present, flag nothing
    with open_repo(project.git.toplevel) as repo:
        args = ["grep", "-o", "-h", "-w", "-I", "--no-color", "-F"]
        for name in sorted(candidates):
            args += ["-e", name]
        # The expertise files mention the symbols themselves: search the code only.
        found = run_git(repo, [*args, "--", ".", ":(exclude).expertise"], check=False).stdout
    return {line.strip() for line in found.splitlines() if line.strip()}


def plan_validation(
    store: Store, doc: DomainDoc, index: CodeIndex, retention_days: int
) -> tuple[list[Edit], ValidationReport]:
    report = ValidationReport(doc.name)
    report.conflicts = [{"id": where, "section": name, "text": text} for where, name, text in conflicts_in(doc)]
    raws = doc.loaded.plain
    edits: list[Edit] = []
    cutoff = clock.now() - timedelta(days=retention_days)
    candidates = {
        s.rsplit(".", 1)[-1]
        for _, _, item in doc.entries()
        for text in _mentions(item)
        for s in _SYMBOL_MENTION.findall(text)
    }
    present = _symbols_present(store, candidates)
    for section_name in section_names():
        kind = section(section_name).kind
        for index_in_section, item in enumerate(doc.model.items(section_name)):
            raw = raws[section_name][index_in_section]
            entry = item_id(section_name, item)
            if kind == FILES:
                path = item_text(item)
                if index.exists(path):
                    continue
                moved = index.follow(path)
                if moved is not None:
                    new_raw: Any = moved[0] if isinstance(raw, str) else {**raw, "path": moved[0]}
                    edits.append(Replace(section_name, index_in_section, new_raw))
                    report.renamed.append({"from": path, "to": moved[0], "commit": moved[1]})
                else:
                    edits.append(Remove(section_name, index_in_section))
                    report.removed.append(path)
                    report.removed_lines.append(describe_entry(entry, section_name, path) + " (deleted)")
                continue
            if kind == FAILURES and is_learned(item):
                seen = item_last_seen(item)
                if seen is not None and seen < cutoff:
                    edits.append(Remove(section_name, index_in_section))
                    report.pruned_failures.append(describe_entry(entry, section_name, item_text(item)))
                    continue
            missing = _missing_mentions(_mentions(item), index, present)
            was_stale = not isinstance(item, str) and item.stale
            if missing and not was_stale:
                marked = {"text": raw, "stale": True} if isinstance(raw, str) else {**raw, "stale": True}
                edits.append(Replace(section_name, index_in_section, marked))
            elif not missing and was_stale:
                cleaned = {k: v for k, v in raw.items() if k != "stale"}
                edits.append(Replace(section_name, index_in_section, cleaned))
                report.unstaled.append(entry)
            if missing:
                report.stale.append({"id": entry, "section": section_name, "missing": missing, "new": not was_stale})
    return edits, report


def validate_domains(
    store: Store, domains: list[str], *, check: bool = False, moved: dict[str, str] | None = None
) -> tuple[list[ValidationReport], list[UserError]]:
    """Validate ``domains`` as one ``validated`` commit; with ``check`` nothing is written.

    ``moved`` adds renames git can't know yet (``watch`` sees files moved before they are committed).
    A domain whose file can't be read is reported and left out; the others are still validated.
    """
    reports: list[ValidationReport] = []
    failures: list[UserError] = []
    with store.transaction("validated", dry_run=check) as tx:
        moment = iso(clock.now())
        written: list[ValidationReport] = []
        for domain in domains:
            try:
                doc = tx.load(domain)
            except UserError as exc:
                failures.append(exc)
                continue
            since = doc.model.last_validated.isoformat() if doc.model.last_validated else None
            index = code_index(store, since)
            index.renames.update({old: (new, "moved") for old, new in (moved or {}).items()})
            edits, report = plan_validation(store, doc, index, store.config.failure_retention_days)
            reports.append(report)
            if check:
                continue
            edits.append(SetKey("last_validated", moment))
            report.last_validated = moment
            before = len(tx.planned)
            tx.edit(doc, edits)
            if len(tx.planned) > before:
                written.append(report)
        if written:
            outcome = tx.commit(_describe(tx, written))
            for report in written:
                report.commit = outcome
    return reports, failures


def _describe(tx: Transaction, written: list[ValidationReport]) -> str:
    """The revision's subject; its notes and removed lines go on the transaction."""
    for report in written:
        tx.notes += [
            f"~ {report.domain} core_files: {r['from']} -> {r['to']} (renamed"
            + (f" in {r['commit'][:12]})" if r["commit"] else ")")
            for r in report.renamed
        ]
        tx.notes += [
            f"! {report.domain} stale: {s['id']} {s['section']} mentions {', '.join(s['missing'][:3])}"
            for s in report.stale
        ]
        tx.removed += report.removed_lines + [line + " (past retention)" for line in report.pruned_failures]
    problems = sum(report.problems for report in written)
    names = [report.domain for report in written]
    scope = names[0] if len(names) == 1 else ",".join(names) if len(names) <= 3 else f"{len(names)} domains"
    return f"expertise({scope}): validate against the code" + (
        f" ({problems} correction{'s' if problems != 1 else ''})" if problems else ""
    )


def validate_domain(store: Store, domain: str, *, check: bool = False) -> ValidationReport:
    """One domain; a file that can't be read raises its UserError."""
    reports, failures = validate_domains(store, [domain], check=check)
    if failures:
        raise failures[0]
    return reports[0]
