"""``.expertise/config.yaml``: domains, caps, retention and classifier rules. Every key has a default."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expertise_kit.document.names import validate_domain_name
from expertise_kit.document.schema_errors import raise_first_error
from expertise_kit.document.yamlio import LoadedYaml, line_of, load_yaml_file
from expertise_kit.errors import UserError
from expertise_kit.plainconfig import DEFAULT_CORE_FILES_MAX, DEFAULT_RETIRE_DAYS, plain_settings
from expertise_kit.vocab import (
    DEFAULT_DOMAINS,
    DEFAULT_KEYWORDS,
    DEFAULT_LINE_CAP,
    DEFAULT_PATHS,
    DEFAULT_RETENTION_DAYS,
)

REFLECT_MODES = ("off", "failures", "always")  # docs/reflect.md
SHARED_MODES = ("on", "read", "off")

__all__ = ["Config", "DomainRules", "load_config", "set_reflect", "CONFIG_NAME", "CONFIG_TEMPLATE", "REFLECT_MODES"]

CONFIG_NAME = "config.yaml"

CONFIG_TEMPLATE = f"""\
# expertise_kit settings. Every key is optional; the values shown are the defaults.
line_cap: {DEFAULT_LINE_CAP}  # lines per domain file; learned entries are pruned first
failure_retention_days: {DEFAULT_RETENTION_DAYS}  # `expertise validate` prunes failures not seen for this long
core_files_max: {DEFAULT_CORE_FILES_MAX}  # learned key files a domain: edited in 2+ sessions, or central in history
shared: on  # on: read and publish the shared layer (refs/expertise/shared); read: only read it; off: neither
shared_retire_days: {DEFAULT_RETIRE_DAYS}  # days after its branches were deleted unmerged that a lesson leaves it
reflect: off  # ask the agent to write its lessons, at most 4 times a session: off, failures or always (docs/reflect.md)
# The seven built-in domains ({", ".join(DEFAULT_DOMAINS)}) always exist.
# Add your own here, or extend a built-in domain's rules. For example:
#   payments:
#     keywords: [invoice, refund, stripe]
#     paths: ["billing/", "*.ledger"]
#   testing:
#     keywords: [hypothesis]
# Set `extend: false` to replace a built-in domain's rules instead of adding to them.
domains: {{}}
"""


@dataclass(frozen=True)
class DomainRules:
    name: str
    keywords: tuple[str, ...]
    paths: tuple[str, ...]
    description: str = ""


@dataclass(frozen=True)
class Config:
    line_cap: int = DEFAULT_LINE_CAP
    failure_retention_days: int = DEFAULT_RETENTION_DAYS
    domains: dict[str, DomainRules] = field(default_factory=dict)
    shared_layer: bool = True  # the shared layer is read (``shared: on`` or ``read``)
    core_files_max: int = DEFAULT_CORE_FILES_MAX
    shared: str = "on"  # on | read | off
    shared_retire_days: int = DEFAULT_RETIRE_DAYS
    reflect: str = "off"

    @property
    def shared_publish(self) -> bool:
        """Whether this clone writes to the shared layer (``shared: on``)."""
        return self.shared == "on"

    @property
    def domain_names(self) -> tuple[str, ...]:
        return tuple(self.domains)

    @classmethod
    def default(cls) -> Config:
        return cls(domains=_merge({}))


def _merge(user: dict[str, dict[str, Any]]) -> dict[str, DomainRules]:
    """The built-in domains' rules, with the user's (``keywords``, ``paths``, ``extend``, ``description``)."""
    merged: dict[str, DomainRules] = {}
    for name in (*DEFAULT_DOMAINS, *(n for n in user if n not in DEFAULT_DOMAINS)):
        rules = user.get(name)
        keywords = DEFAULT_KEYWORDS.get(name, ())
        paths = DEFAULT_PATHS.get(name, ())
        description = ""
        if rules is not None:
            extend = rules.get("extend", True)
            keywords = (*keywords, *rules.get("keywords", ())) if extend else tuple(rules.get("keywords", ()))
            paths = (*paths, *rules.get("paths", ())) if extend else tuple(rules.get("paths", ()))
            description = rules.get("description", "")
        merged[name] = DomainRules(name, tuple(dict.fromkeys(keywords)), tuple(dict.fromkeys(paths)), description)
    return merged


def load_config(expertise_dir: Path) -> Config:
    path = expertise_dir / CONFIG_NAME
    if not os.path.lexists(path):  # a broken link or a symlink loop is refused by the reader, not skipped
        return Config.default()
    return _config_of(load_yaml_file(path), path)


def _config_of(loaded: LoadedYaml, path: Path) -> Config:
    data: Any = loaded.plain
    domains = data.get("domains")
    if domains is None:
        data["domains"] = {}
    elif isinstance(domains, dict):
        for name in domains:
            try:
                validate_domain_name(name if isinstance(name, str) else repr(name))
            except UserError as exc:
                line = line_of(loaded.tree, ("domains", name))
                raise UserError(exc.message, path=path, line=line, hint=exc.hint) from None
    values = plain_settings(data)
    if values is None:  # not sure: the schema reads it, and names what is wrong
        from pydantic import ValidationError

        from expertise_kit.configschema import ConfigModel

        try:
            values = ConfigModel.model_validate(data).model_dump()
        except ValidationError as exc:
            raise_first_error(exc, loaded)
    mode = (values["shared"] or "on") if values["shared_layer"] else "off"  # the older key, false, still turns it off
    return Config(
        values["line_cap"], values["failure_retention_days"], _merge(values["domains"]), mode != "off",
        values["core_files_max"], mode, values["shared_retire_days"], values["reflect"],
    )  # fmt: skip


_REFLECT_LINE = re.compile(r"^reflect:[ \t]*([^#\r\n]*?)[ \t]*(#[^\r\n]*)?(?=\r?$)", re.M)


def set_reflect(expertise_dir: Path, mode: str) -> bool:
    """Set ``reflect:`` in config.yaml to ``mode``, editing only that line (or adding it); whether the file
    changed. Nothing is written unless the edited text loads, with that mode."""
    if mode not in REFLECT_MODES:
        raise UserError(f"reflect must be one of {', '.join(REFLECT_MODES)}, not {mode!r}")
    path = expertise_dir / CONFIG_NAME
    if load_config(expertise_dir).reflect == mode:
        return False
    from expertise_kit.document.atomic import write_atomic
    from expertise_kit.document.yamlio import parse_yaml_text, read_text_file

    text = read_text_file(path) if os.path.lexists(path) else CONFIG_TEMPLATE
    found = _REFLECT_LINE.search(text)
    if found:
        comment = f"  {found.group(2)}" if found.group(2) else ""
        text = f"{text[: found.start()]}reflect: {mode}{comment}{text[found.end() :]}"
    else:
        newline = "\r\n" if "\r\n" in text else "\n"  # the file's own line ends
        text = f"{text}{'' if text.endswith(newline) or not text else newline}reflect: {mode}{newline}"
    if _config_of(parse_yaml_text(text, path), path).reflect != mode:
        raise UserError("`reflect:` could not be set here", path=path, hint=f"set `reflect: {mode}` by hand")
    write_atomic(path, text.encode("utf-8"))
    return True
