from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from expertise_kit.document.entries import Item
from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import open_store
from expertise_kit.vocab import section_names


def _safe(text: str) -> str:
    """One line with control characters gone: a learned error must not drive the user's terminal."""
    from expertise_kit.fast.render import strip_controls

    return " ".join(strip_controls(text).split())


def _provenance(item: Item) -> str:
    from expertise_kit.document.entries import is_learned, item_last_seen

    if not is_learned(item):
        return "hand-written"
    assert not isinstance(item, str)
    parts = [f"{'written by the agent' if item.source == 'agent' else 'learned'} x{item.recurrence}"]
    if item.sessions:
        parts.append(f"{len(item.sessions)} session{'s' if len(item.sessions) != 1 else ''}")
    seen = item_last_seen(item)
    if seen is not None:
        parts.append(f"last {seen:%Y-%m-%d}")
    if item.helpful or item.harmful:
        parts.append(f"+{item.helpful}/-{item.harmful}")
    if item.ended_well:
        parts.append(f"shown in {item.ended_well} good session{'s' if item.ended_well != 1 else ''}")
    return ", ".join(parts)


@click.command()
@click.argument("domain")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: every entry with its id and provenance.")
@click.pass_obj
def show(start: Path, domain: str, as_json: bool) -> None:
    """Show one domain file, with the id of every entry."""
    from expertise_kit.document.entries import FailureEntry, item_id, item_text

    if as_json:
        from expertise_kit.api import Expertise

        echo_json(Expertise(start).show(domain))
        return
    store = open_store(start)
    doc = store.load(domain)
    model = doc.model
    relative = doc.path.relative_to(store.project.root)
    click.echo(f"{domain}: {relative} ({doc.line_count}/{store.config.line_cap} lines, {doc.entry_count} entries)")
    if model.overview:
        click.echo(model.overview)
    for section in section_names():
        items: list[Item] = model.items(section)
        if not items:
            continue
        click.echo(f"\n{section} ({len(items)})")
        for item in items:
            click.echo(f"  {item_id(section, item)}  {_safe(item_text(item))}  [{_provenance(item)}]")
            if isinstance(item, FailureEntry) and item.error and item.issue:
                click.echo(f"            error: {_safe(item.error)}")
    validated = f"{model.last_validated:%Y-%m-%d %H:%M}Z" if model.last_validated else "never"
    click.echo(f"\nlast validated: {validated}")
