from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from expertise_kit.commands._output import echo_json

if TYPE_CHECKING:
    from expertise_kit.fast.classify import Rules


def _rules(start: Path) -> dict[str, Rules]:
    from expertise_kit.config import Config, load_config
    from expertise_kit.errors import NotInitialised
    from expertise_kit.fast.classify import rules_from
    from expertise_kit.project import find_project

    try:
        config = load_config(find_project(start).expertise_dir)
    except NotInitialised:
        config = Config.default()  # classifying needs no project: use the built-in rules
    return rules_from(config.domains)


@click.command()
@click.argument("text", required=False, default="")
@click.option("--file", "files", multiple=True, help="A file the task touches; repeat for more.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the domain, every score and close seconds.")
@click.option("--batch", is_flag=True, help='Read JSON lines {"description": ..., "files": [...]} on stdin.')
@click.pass_obj
def classify(start: Path, text: str, files: tuple[str, ...], as_json: bool, batch: bool) -> None:
    """Say which domain a task belongs to.

    Words count whole (split on camelCase, snake_case and kebab-case, plurals folded); file paths count
    by directory, name and extension, and weigh more than words. A weak signal gives `general`. With
    --batch, one domain is printed per input line, in order; a bad line prints `general` and a warning.
    """
    from expertise_kit.fast.classify import classify as run

    rules = _rules(start)
    if not batch:
        result = run(text, list(files), rules)
        if as_json:
            echo_json(result.as_json())
        else:
            click.echo(result.domain)
        return
    out = sys.stdout
    for number, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            task = json.loads(line)
            description = str(task.get("description") or "")
            paths = [str(p) for p in task.get("files") or []]
        except (ValueError, AttributeError, TypeError):
            click.echo(f"expertise: warning: stdin:{number}: not a JSON object, printed general", err=True)
            out.write("general\n")
            continue
        result = run(description, paths, rules)
        out.write((json.dumps(result.as_json(), ensure_ascii=False) if as_json else result.domain) + "\n")
