from __future__ import annotations

import time
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
    from expertise_kit.commands._shared import open_store
    from expertise_kit.document.names import validate_domain_name
    from expertise_kit.fast.cache import read_fresh_cache
    from expertise_kit.fast.classify import classify, rules_from
    from expertise_kit.fast.render import DEFAULT_MAX_CHARS, render_section
    from expertise_kit.fast.retrieve import ESSENTIALS_CHARS, PROMPT_CHARS, essentials, for_prompt
    from expertise_kit.store.cachebuild import rebuild_cache

    store = open_store(start)
    cache = read_fresh_cache(store.project.expertise_dir) or rebuild_cache(store.project, store.config)
    classification = None
    everything = [d for d in cache["config"]["domains"] if not (cache["domains"].get(d) or {}).get("error")]
    now = time.time()
    if domains:
        for name in domains:
            validate_domain_name(name)
            store.path_for(name)
        budget = max_chars or DEFAULT_MAX_CHARS
        result = render_section(cache, list(domains), task=task, files=list(files), max_chars=budget)
    elif task or files:
        classification = classify(task, list(files), rules_from(cache["config"]["domains"]))
        routing = [classification.domain, *classification.secondary[:2]]
        budget = max_chars or PROMPT_CHARS
        result = for_prompt(cache, everything, task=task, files=list(files), routing=routing, max_chars=budget, now=now)
    else:
        result = essentials(cache, everything, max_chars=max_chars or ESSENTIALS_CHARS, now=now)
    if as_json:
        data = result.as_json()
        data["classification"] = classification.as_json() if classification else None
        echo_json(data)
    elif result.text:
        click.echo(result.text, nl=False)
