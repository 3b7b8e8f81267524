"""The one clock. Tests replace ``now`` with monkeypatch; nothing else reads the time."""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["now", "iso"]


def now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def iso(moment: datetime) -> str:
    """UTC, seconds, a trailing ``Z``: short, sortable as text, and unambiguous in a diff."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
