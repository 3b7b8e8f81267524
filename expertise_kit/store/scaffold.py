"""What ``expertise init`` lays down. Existing files are never touched, so running it twice is safe."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from expertise_kit.config import CONFIG_NAME, CONFIG_TEMPLATE, load_config
from expertise_kit.document.atomic import ensure_writable, write_atomic, write_lock
from expertise_kit.document.entries import SCHEMA_FILE_NAME, json_schema
from expertise_kit.errors import UserError
from expertise_kit.project import Project, check_not_git_dir
from expertise_kit.versioning.commit import CommitOutcome, Revision, commit_revision
from expertise_kit.vocab import OVERVIEWS

__all__ = ["InitResult", "initialise", "domain_template", "SCHEMA_HEADER", "GITIGNORE"]

SCHEMA_HEADER = f"# yaml-language-server: $schema={SCHEMA_FILE_NAME}\n"
GITIGNORE = "# expertise_kit's caches and scratch files\n.cache/\n.*.tmp\n.lock\n"


def domain_template(domain: str, overview: str = "") -> str:
    summary = overview or OVERVIEWS.get(domain, "")
    return (
        SCHEMA_HEADER
        + f"# Expertise for the {domain} domain: AI agents read this before {domain} tasks.\n"
        + "# Edit it by hand as you like; comments, order and formatting are kept.\n"
        + f"domain: {domain}\n"
        + f"overview: {json.dumps(summary, ensure_ascii=False)}\n"
        + "core_files: []\n"
        + "patterns: []\n"
        + "best_practices: []\n"
        + "learned_from_failures: []\n"
        + "effective_patterns: []\n"
        + "successful_techniques: []\n"
        + "last_validated: null\n"
    )


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


@dataclass
class InitResult:
    root: Path
    created: list[Path] = field(default_factory=list)
    updated: list[Path] = field(default_factory=list)
    commit: CommitOutcome | None = None


def initialise(project: Project) -> InitResult:
    check_not_git_dir(project.root)  # a Project built by hand can still point into a bare repo
    directory = project.expertise_dir
    if directory.exists() and not directory.is_dir():
        raise UserError("exists but is not a directory", path=directory, hint="move it aside and rerun")
    result = InitResult(project.root)
    if not directory.exists():
        try:
            directory.mkdir()
        except OSError as exc:
            raise UserError(f"cannot create it: {exc.strerror}", path=directory, hint="check permissions") from None
        result.created.append(directory)
    ensure_writable(directory)
    with write_lock(project.lock_path):
        _write_new(directory / ".gitignore", GITIGNORE, result)
        _write_new(directory / CONFIG_NAME, CONFIG_TEMPLATE, result)
        config = load_config(directory)
        schema_path = directory / SCHEMA_FILE_NAME
        wanted = schema_text()
        if not schema_path.exists():
            _write_new(schema_path, wanted, result)
        elif schema_path.read_text(encoding="utf-8", errors="replace") != wanted:
            # Ours, generated: keep it in step with the installed version.
            write_atomic(schema_path, wanted.encode())
            result.updated.append(schema_path)
        new_domains = []
        for name, rules in config.domains.items():
            path = directory / f"{name}.yaml"
            if not path.exists() and not path.is_symlink():
                _write_new(path, domain_template(name, rules.description), result)
                new_domains.append(name)
        files = [p for p in [*result.created, *result.updated] if p.is_file()]
        if files:
            count = len(new_domains)
            subject = (
                f"expertise: set up .expertise/ with {count} domain{'s' if count != 1 else ''}"
                if (directory / CONFIG_NAME) in result.created
                else f"expertise: add files for {', '.join(new_domains) or 'the schema'}"
            )
            revision = Revision(
                domains=new_domains,
                change="manual",
                subject=subject,
                paths=[p.relative_to(project.root).as_posix() for p in files],
            )
            result.commit = commit_revision(project, revision)
        if files:
            from expertise_kit.store import Store

            Store(project, config).refresh_cache()
    return result


def _write_new(path: Path, text: str, result: InitResult) -> None:
    if path.exists() or path.is_symlink():
        return
    write_atomic(path, text.encode("utf-8"))
    result.created.append(path)
