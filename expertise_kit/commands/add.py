from __future__ import annotations

import click

from expertise_kit.commands._shared import open_store, report_commit
from expertise_kit.document.names import normalise_section


@click.command()
@click.argument("domain")
@click.argument("section", metavar="SECTION")
@click.argument("text")
@click.option("--error", "error", default=None, help="For learned_from_failures: the error seen.")
@click.option("--solution", default=None, help="For learned_from_failures: what fixed it.")
@click.pass_context
def add(ctx: click.Context, domain: str, section: str, text: str, error: str | None, solution: str | None) -> None:
    """Add a hand-written entry to DOMAIN's SECTION.

    SECTION is one of: core_files, patterns, best_practices, learned_from_failures,
    effective_patterns, successful_techniques. An entry already present (same id) is not added twice.
    """
    from expertise_kit.store import manual_item

    key = normalise_section(section)
    if (error or solution) and key != "learned_from_failures":
        raise click.UsageError("--error and --solution only apply to learned_from_failures")
    from expertise_kit.learning.redact import redact_counting

    # Git history is forever: a credential pasted into a hand-written entry is scrubbed as a learned one is.
    found: dict[str, int] = {}
    scrubbed: list[str | None] = []
    for value in (text, error, solution):
        if value is None:
            scrubbed.append(None)
            continue
        clean, counts = redact_counting(value)
        scrubbed.append(clean)
        for kind, n in counts.items():
            found[kind] = found.get(kind, 0) + n
    text, error, solution = scrubbed[0] or "", scrubbed[1], scrubbed[2]
    if found:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(found.items()))
        click.echo(f"warning: scrubbed {sum(found.values())} secret(s) from the entry ({kinds})", err=True)
    store = open_store(ctx.obj)
    result = store.add_items(domain, [(key, manual_item(key, text, error=error, solution=solution))])
    relative = result.path.relative_to(store.project.root)
    if result.duplicates:
        click.echo(f"already present as {result.duplicates[0]} in {relative}; nothing changed")
    for entry in result.added:
        click.echo(f"added {entry} to {relative} ({key})")
    for pruned in result.pruned:
        kind = "learned" if pruned.learned else "hand-written"
        click.echo(f"warning: pruned {kind} {pruned.section} entry to stay under the cap: {pruned.text[:80]}", err=True)
    report_commit(result.commit)
    if result.over_by:
        click.echo(
            f"warning: {relative} is still {result.over_by} lines over the {store.config.line_cap}-line cap",
            err=True,
        )
