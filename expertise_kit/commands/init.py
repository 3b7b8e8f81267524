from __future__ import annotations

from pathlib import Path

import click

from ..project import project_for_init
from ._shared import report_commit


@click.command()
@click.pass_obj
def init(start: Path) -> None:
    """Create .expertise/ with its config and the domain files.

    Safe to run again: files that exist are left alone, and missing ones (say, a domain newly added
    to config.yaml) are created.
    """
    from ..scaffold import initialise

    project = project_for_init(start)
    result = initialise(project)
    if not result.created and not result.updated:
        click.echo(f"{project.expertise_dir} is already set up; nothing to do")
        return
    for path in result.created:
        click.echo(f"created {path.relative_to(project.root)}")
    for path in result.updated:
        click.echo(f"updated {path.relative_to(project.root)}")
    report_commit(result.commit)
