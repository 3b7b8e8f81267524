from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import open_store, report_commit


@click.command()
@click.argument("rev")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the revision undone, entries back and gone, commit.")
@click.pass_obj
def revert(start: Path, rev: str, as_json: bool) -> None:
    """Undo one revision as a new revision.

    Entries the revision added are removed, entries it removed come back, and entries it changed get
    their old values. If any of them has changed again since, nothing is written and the clash is
    named.
    """
    from expertise_kit.store.revert import revert_revision

    store = open_store(start)
    result = revert_revision(store, rev)
    if as_json:
        from expertise_kit.api import revert_record

        echo_json(revert_record(result))
        return
    click.echo(f"reverted {result.sha[:12]} {result.subject}")
    for line in result.removed:
        click.echo(f"  - {line}")
    for line in result.added:
        click.echo(f"  + {line}")
    report_commit(result.commit)
