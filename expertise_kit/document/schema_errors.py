"""Turning pydantic errors into the one-line ``path:line: field: message`` users get."""

from __future__ import annotations

from typing import Any, NoReturn

from expertise_kit.document.yamlio import LoadedYaml, line_of
from expertise_kit.errors import UserError

__all__ = ["raise_first_error"]

_UNION_TAGS = {"string", "mapping"}


def _field_path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif part not in _UNION_TAGS:
            parts.append(("." if parts else "") + part)
    return "".join(parts) or "(top level)"


def raise_first_error(exc: Any, loaded: LoadedYaml) -> NoReturn:
    """``exc``: pydantic's ValidationError (taken as Any, so that reading a valid file never imports it)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = tuple(first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown setting"
    raise UserError(
        f"{_field_path(loc)}: {message}{more}",
        path=loaded.path,
        line=line_of(loaded.tree, loc),
        hint="fix it by hand; the file was not changed",
    )
