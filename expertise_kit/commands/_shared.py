"""Helpers several commands share: opening the store and describing entries."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from expertise_kit.project import find_project

if TYPE_CHECKING:  # the store pulls in pydantic and ruamel: import it only when a command needs it
    from expertise_kit.store import Store
    from expertise_kit.versioning.commit import CommitOutcome

__all__ = ["open_store", "report_commit"]


def open_store(start: Path) -> Store:
    from expertise_kit.store import Store

    return Store(find_project(start))


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
