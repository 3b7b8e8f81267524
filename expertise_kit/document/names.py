"""Checking domain and section names. A domain name becomes a file name, so it must be boring."""

from __future__ import annotations

import re

from expertise_kit.errors import UserError
from expertise_kit.vocab import SECTION_ALIASES, section_names

__all__ = ["validate_domain_name", "normalise_section"]

_DOMAIN_RE = re.compile(r"[a-z][a-z0-9_]{0,39}")
# Device names Windows refuses as file names, with or without an extension.
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul"} | {f"{p}{n}" for p in ("com", "lpt") for n in range(10)}


def validate_domain_name(name: str, *, source: str | None = None) -> str:
    """Return ``name`` if it is a plain lowercase identifier, else raise a UserError.

    ``source`` names the file the name came from (the config), for the error line.
    """
    hint = "use a lowercase identifier such as 'payments' (letters, digits, '_'; at most 40)"
    shown = repr(name)
    if not isinstance(name, str) or not name:
        raise UserError("domain name is empty", path=source, hint=hint)
    if name.lower() in _WINDOWS_RESERVED:
        raise UserError(f"domain name {shown} is a reserved device name on Windows", path=source, hint=hint)
    if name == "config":  # its file would be .expertise/config.yaml, the project's settings
        raise UserError("domain name 'config' is taken by .expertise/config.yaml", path=source, hint=hint)
    if not _DOMAIN_RE.fullmatch(name):
        raise UserError(f"domain name {shown} is not a plain identifier", path=source, hint=hint)
    return name


def normalise_section(name: str) -> str:
    """Accept ``best-practices``, ``Best_Practices`` and the short ``failures`` and ``files``."""
    key = name.strip().lower().replace("-", "_")
    key = SECTION_ALIASES.get(key, key)
    if key not in section_names():
        raise UserError(f"unknown section {name!r}", hint="use one of " + ", ".join(section_names()))
    return key
