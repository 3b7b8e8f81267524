from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
@click.option(
    "--debounce",
    type=click.FloatRange(min=0.05, max=30),
    default=0.4,
    show_default=True,
    help="Seconds of quiet that end a burst of changes.",
)
@click.pass_obj
def watch(start: Path, debounce: float) -> None:
    """Keep the expertise true while you work, until Ctrl-C or SIGTERM.

    Hand edits to .expertise/*.yaml are validated and committed as yours (an invalid edit is left as
    written, with one line saying why); code files moved or deleted update core_files; bursts such as
    a git checkout become at most one revision per domain.
    """
    from expertise_kit.project import find_project
    from expertise_kit.upkeep.watch import run_watch

    def say(line: str) -> None:
        click.echo(line)
        sys.stdout.flush()

    run_watch(find_project(start), debounce=debounce, say=say)
