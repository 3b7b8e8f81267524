from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json


@click.command()
@click.option("--task", default="", help="What the agent is about to do.")
@click.option("--file", "files", multiple=True, help="A file the task touches; repeat for more.")
@click.option("--domain", "domains", multiple=True, help="Render these domains instead of classifying the task.")
@click.option("--max-chars", type=click.IntRange(min=200), default=None, help="Character budget (default 6000).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: text, domains, entries kept and dropped.")
@click.pass_obj
def render(
    start: Path, task: str, files: tuple[str, ...], domains: tuple[str, ...], max_chars: int | None, as_json: bool
) -> None:
    """Print the markdown section an agent reads before a task.

    Entries are ranked by relevance to --task and --file, then by recurrence, feedback and recency;
    failures with a known fix come first. Learned text is quoted so it reads as data. With no expertise
    yet, prints nothing.
    """
    from expertise_kit.commands._shared import open_store
    from expertise_kit.document.names import validate_domain_name
    from expertise_kit.fast.cache import read_fresh_cache
    from expertise_kit.fast.classify import classify, rules_from
    from expertise_kit.fast.render import DEFAULT_MAX_CHARS, render_section
    from expertise_kit.store.cachebuild import rebuild_cache

    store = open_store(start)
    cache = read_fresh_cache(store.project.expertise_dir) or rebuild_cache(store.project, store.config)
    classification = None
    if domains:
        for name in domains:
            validate_domain_name(name)
            store.path_for(name)
        chosen = list(domains)
    else:
        rules = rules_from(cache["config"]["domains"])
        classification = classify(task, list(files), rules)
        chosen = [classification.domain, *classification.secondary[:2]] if (task or files) else ["general"]
    result = render_section(cache, chosen, task=task, files=list(files), max_chars=max_chars or DEFAULT_MAX_CHARS)
    if as_json:
        data = result.as_json()
        data["classification"] = classification.as_json() if classification else None
        echo_json(data)
    elif result.text:
        click.echo(result.text, nl=False)
