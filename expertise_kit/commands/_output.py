"""Shared output helpers: JSON the way every command prints it."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import click

__all__ = ["echo_json", "plain_json"]


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if hasattr(value, "__fspath__"):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def plain_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=_default, indent=2)


def echo_json(data: Any) -> None:
    click.echo(plain_json(data))
