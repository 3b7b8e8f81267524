from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.errors import UserError
from expertise_kit.project import find_project


@click.command()
@click.argument("rev", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the entry changes per file.")
@click.pass_obj
def diff(start: Path, rev: str | None, as_json: bool) -> None:
    """Show what changed, in entries: added (+), removed (-) and changed (~).

    With no REV, the files on disk against the last commit (hand edits, deferred revisions). With REV,
    what that revision changed. A range A..B compares two revisions; A...B shows what B changed since
    it forked from A, as `git diff A...B` does.
    """
    from expertise_kit.versioning.entrydiff import summarise
    from expertise_kit.versioning.git import open_repo
    from expertise_kit.versioning.revspec import diffs_for

    project = find_project(start)
    if project.git is None:
        raise UserError("not a git repository, so there is nothing to compare", hint="run `git init`")
    with open_repo(project.git.toplevel) as repo:
        found = diffs_for(project, repo, rev)
    if found is None:  # an unborn branch: not a mistake, just nothing to compare yet
        click.echo("nothing committed yet, so there is no revision to compare with", err=True)
    diffs = found or []
    if as_json:
        from expertise_kit.api import diff_records

        echo_json(diff_records(diffs))
        return
    if not diffs and found is not None:
        click.echo("no entry changes", err=True)
    for d in diffs:
        status = " (new file)" if d.created else " (deleted)" if d.deleted else ""
        click.echo(f"{d.path}{status}")
        for change in d.changes:
            click.echo(f"  {summarise(change)}")
        for key, (before, after) in d.keys.items():
            click.echo(f"  ~ {key}: {before!r} -> {after!r}")
