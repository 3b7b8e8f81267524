from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import open_store


@click.command()
@click.argument("domain")
@click.argument("entry_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the entry and the revision that added it.")
@click.pass_obj
def blame(start: Path, domain: str, entry_id: str, as_json: bool) -> None:
    """Say which revision and session brought an entry in.

    ENTRY_ID is the id `expertise show` prints; any unique prefix of 4 or more characters works.
    """
    from expertise_kit.store.blame import blame_entry

    result = blame_entry(open_store(start), domain, entry_id)
    if as_json:
        echo_json(result.as_json())
        return
    click.echo(f"{result.entry} {result.section}: {result.text}")
    row = result.revision
    if row is None:
        click.echo("  not committed yet (see `expertise diff`)")
    else:
        commit = row.commit[:12] if row.commit else "(deferred)"
        how = " by hand" if row.by_hand else ""
        click.echo(f"  added{how} in {commit} {row.time} by {row.author}: {row.subject}")
        if row.sessions:
            click.echo(f"  revision session: {', '.join(row.sessions)}")
    if result.entry_sessions:
        click.echo(f"  seen in sessions: {', '.join(str(s) for s in result.entry_sessions)}")
