"""What ``expertise init`` lays down. Existing files are never touched, so running it twice is safe."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from expertise_kit.config import CONFIG_NAME, CONFIG_TEMPLATE, Config, load_config
from expertise_kit.document.entries import SCHEMA_FILE_NAME, json_schema
from expertise_kit.errors import UserError
from expertise_kit.project import Project, check_not_git_dir
from expertise_kit.store import Store
from expertise_kit.versioning.commit import CommitOutcome
from expertise_kit.versioning.mergedriver import ATTRIBUTES_LINE, ATTRIBUTES_NAME, ATTRIBUTES_TEXT, register_driver
from expertise_kit.vocab import OVERVIEWS, section_names

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
        + "".join(f"{name}: []\n" for name in section_names())
        + "last_validated: null\n"
    )


def _config_text(reflect: str | None) -> str:
    if reflect is None:
        return CONFIG_TEMPLATE
    return CONFIG_TEMPLATE.replace("\nreflect: off ", f"\nreflect: {reflect} ", 1)


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


@dataclass
class InitResult:
    root: Path
    created: list[Path] = field(default_factory=list)
    updated: list[Path] = field(default_factory=list)
    commit: CommitOutcome | None = None
    driver_registered: bool = False  # git config now names the merge driver (it did not before)


def initialise(project: Project, *, reflect: str | None = None) -> InitResult:
    """Lay down what is missing; ``reflect``: the mode a new config.yaml starts with."""
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
    if (directory / CONFIG_NAME).exists():
        config = load_config(directory)
    else:  # the config about to be written: the render cache built below holds it
        config = replace(Config.default(), reflect=reflect or Config.default().reflect)
    store = Store(project, config)
    with store.transaction("manual") as tx:
        wanted: list[tuple[Path, str, str | None]] = [
            (directory / ".gitignore", GITIGNORE, None),
            (directory / CONFIG_NAME, _config_text(reflect), None),
            (directory / SCHEMA_FILE_NAME, schema_text(), None),
            (directory / ATTRIBUTES_NAME, ATTRIBUTES_TEXT, None),
        ]
        wanted += [
            (directory / f"{name}.yaml", domain_template(name, rules.description), name)
            for name, rules in config.domains.items()
        ]
        new_domains = []
        for path, text, domain in wanted:
            if not path.exists() and not path.is_symlink():
                tx.create(path, text, domain=domain)
                result.created.append(path)
                new_domains += [domain] if domain else []
            elif path.name == SCHEMA_FILE_NAME and path.read_text(encoding="utf-8", errors="replace") != text:
                # Ours, generated: keep it in step with the installed version.
                tx.create(path, text)
                result.updated.append(path)
            elif path.name == ATTRIBUTES_NAME and (missing := _attributes_missing(path)) is not None:
                tx.create(path, missing)
                result.updated.append(path)
        if not tx.empty:
            count = len(new_domains)
            others = [p.name for p in [*result.created, *result.updated] if p != directory]
            subject = (
                f"expertise: set up .expertise/ with {count} domain{'s' if count != 1 else ''}"
                if (directory / CONFIG_NAME) in result.created
                else f"expertise: add files for {', '.join(new_domains) or ', '.join(others) or 'the schema'}"
            )
            result.commit = tx.commit(subject)
    result.driver_registered = register_driver(project)
    return result


def _attributes_missing(path: Path) -> str | None:
    """The attributes file with our merge line added, or None when it has it (or can't be read: left alone)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if ATTRIBUTES_LINE in (line.strip() for line in text.splitlines()):
        return None
    return text + ("" if not text or text.endswith("\n") else "\n") + ATTRIBUTES_TEXT
