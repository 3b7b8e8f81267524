from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import open_store


@click.command()
@click.option("--since", default=None, metavar="DATE", help="Count only what happened since DATE (YYYY-MM-DD).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: every figure, with its parts.")
@click.pass_obj
def stats(start: Path, since: str | None, as_json: bool) -> None:
    """What the expertise has been doing: learnings per day and domain, recurring failures and whether
    they stopped after being learned, characters injected per session, feedback, and how often a person
    corrected what was learned.

    Computed from the git history and this clone's local session log; nothing is written but a cache
    of the parsed domain files in git's own directory.
    """
    from expertise_kit.upkeep.stats import collect_stats, parse_since, stats_lines

    data = collect_stats(open_store(start), parse_since(since))
    if as_json:
        echo_json(data)
        return
    for line in stats_lines(data):
        click.echo(line)
