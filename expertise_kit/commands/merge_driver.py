from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.errors import CheckFailed


@click.command("merge-driver")
@click.argument("base", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("ours", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("theirs", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("name", required=False)
@click.pass_obj
def merge_driver(start: Path, base: Path, ours: Path, theirs: Path, name: str | None) -> None:
    """Git's merge driver for .expertise/ files: `expertise merge-driver %O %A %B %P`.

    `expertise init` registers it. Entries are merged by id: both sides' additions kept, sessions
    unioned and counted once, the later last_seen taken. OURS is overwritten with the result. Exit 0
    when clean; 1 on a true conflict, which stays parseable YAML with both versions under `conflict:`
    in the entry (`expertise validate --check` flags it until resolved).
    """
    from expertise_kit.gitmerge import run_merge_driver

    outcome = run_merge_driver(base, ours, theirs, name, start=start)
    for note in outcome.notes:
        click.echo(f"expertise: {note}", err=True)
    if not outcome.clean:
        raise CheckFailed(outcome.message)
    if outcome.message:
        click.echo(f"expertise: {outcome.message}", err=True)
