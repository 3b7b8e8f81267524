"""``config.yaml``'s settings read in plain Python, where they surely validate: ``config`` and the merge
driver read most files so, without importing pydantic (``configschema``), which is asked only when this
is unsure. Standard library only."""

from __future__ import annotations

from expertise_kit.errors import UserError
from expertise_kit.vocab import DEFAULT_LINE_CAP, DEFAULT_RETENTION_DAYS

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DEFAULT_CORE_FILES_MAX", "DEFAULT_RETIRE_DAYS", "SETTINGS", "plain_settings"]

DEFAULT_CORE_FILES_MAX = 5
DEFAULT_RETIRE_DAYS = 3


def _count(least: int, most: int) -> Any:
    return lambda v: type(v) is int and least <= v <= most


def _one_of(*modes: str) -> Any:
    return lambda v: type(v) is bool or (type(v) is str and v in modes)


# Every key config.yaml may hold: its default, and what its value must plainly be (configschema's rules).
SETTINGS: dict[str, tuple[Any, Any]] = {
    "line_cap": (DEFAULT_LINE_CAP, _count(50, 100_000)),
    "failure_retention_days": (DEFAULT_RETENTION_DAYS, _count(1, 36_500)),
    "core_files_max": (DEFAULT_CORE_FILES_MAX, _count(0, 1000)),
    "shared_layer": (True, lambda v: type(v) is bool),
    "shared": (None, _one_of("on", "read", "off")),
    "shared_retire_days": (DEFAULT_RETIRE_DAYS, _count(0, 36_500)),
    "reflect": ("off", _one_of("off", "failures", "always")),
    "domains": ({}, lambda v: v is None or (type(v) is dict and all(_plain_rules(n, r) for n, r in v.items()))),
}
_WORDS = lambda v: type(v) is list and all(type(w) is str for w in v)  # noqa: E731
_RULE_KEYS: dict[str, Any] = {
    "keywords": _WORDS,
    "paths": _WORDS,
    "extend": lambda v: type(v) is bool,
    "description": lambda v: type(v) is str,
}
_BOOLEANS = {"shared": {True: "on", False: "off"}, "reflect": {True: "failures", False: "off"}}


def _plain_rules(name: object, rules: object) -> bool:
    from expertise_kit.document.names import validate_domain_name

    if type(name) is not str or type(rules) is not dict:
        return False
    try:
        validate_domain_name(name)
    except UserError:
        return False
    return all(key in _RULE_KEYS and _RULE_KEYS[key](value) for key, value in rules.items())


def plain_settings(data: Any) -> dict[str, Any] | None:
    """Every setting of ``data`` (defaults filled in, ``true``/``false`` read as their modes) when the
    schema surely reads them so; None when unsure, and the schema decides."""
    if type(data) is not dict or not all(key in SETTINGS and SETTINGS[key][1](value) for key, value in data.items()):
        return None
    values = {key: data.get(key, default) for key, (default, _) in SETTINGS.items()}
    for key, meaning in _BOOLEANS.items():
        if type(values[key]) is bool:
            values[key] = meaning[values[key]]
    values["domains"] = values["domains"] or {}
    return values
