"""Helpers several commands share: opening the store and describing entries."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..project import find_project

if TYPE_CHECKING:  # the store pulls in pydantic and ruamel: import it only when a command needs it
    from ..models import Item
    from ..store import Store
    from ..versioning import CommitOutcome

__all__ = ["open_store", "entry_record", "report_commit"]


def open_store(start: Path) -> Store:
    from ..store import Store

    return Store(find_project(start))


def entry_record(section: str, item: Item) -> dict[str, Any]:
    """One entry as JSON: its id and section, then every field (plain strings become hand-written)."""
    from ..models import FailureEntry, item_id

    record: dict[str, Any] = {"id": item_id(section, item), "section": section}
    if isinstance(item, str):
        key = "path" if section == "core_files" else ("issue" if section == "learned_from_failures" else "text")
        record.update({key: item, "source": "manual"})
    else:
        record.update(item.model_dump(mode="json"))
        if isinstance(item, FailureEntry) and not item.solution:
            record["solution"] = None
    return record


def report_commit(outcome: CommitOutcome | None) -> None:
    """One line about the revision's commit: its hash, or why it was deferred (on stderr)."""
    if outcome is None:
        return
    if outcome.sha:
        also = (
            f" (with {outcome.synced} deferred revision{'s' if outcome.synced != 1 else ''})" if outcome.synced else ""
        )
        click.echo(f"committed {outcome.sha[:12]}{also}")
    elif outcome.deferred:
        click.echo(f"note: commit deferred: {outcome.deferred}; {outcome.hint}", err=True)
