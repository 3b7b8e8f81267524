from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json


@click.command()
@click.option("--task", default="", help="What the agent is about to do.")
@click.option("--file", "files", multiple=True, help="A file the task touches; repeat for more.")
@click.option("--domain", "domains", multiple=True, help="Render these whole domains instead (for reading).")
@click.option("--max-chars", type=click.IntRange(min=200), default=None, help="Character budget.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: text, domains, entries kept and dropped.")
@click.pass_obj
def render(
    start: Path, task: str, files: tuple[str, ...], domains: tuple[str, ...], max_chars: int | None, as_json: bool
) -> None:
    """Print the markdown section an agent reads before a task, as the pre-task hook does.

    With --task or --file: the entries of every domain relevant to them, best first (words and files
    matched, then recurrence and feedback), above a relevance floor, within 2,000 characters. With
    neither: the project's essentials (recurring failures and fixes, conventions, most edited files)
    within 1,500. With --domain: those domains whole, ranked, within 6,000. Learned text is quoted so it
    reads as data. With no expertise yet, prints nothing.
    """
    from expertise_kit.api import Expertise

    data = Expertise(start).render(task, files, domains=domains, max_chars=max_chars)
    if as_json:
        echo_json(data)
    elif data["text"]:
        click.echo(data["text"], nl=False)
