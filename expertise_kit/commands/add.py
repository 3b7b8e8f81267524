from __future__ import annotations

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import open_store, report_commit
from expertise_kit.document.names import normalise_section


@click.command()
@click.argument("domain")
@click.argument("section", metavar="SECTION")
@click.argument("text")
@click.option("--error", "error", default=None, help="For learned_from_failures: the error seen.")
@click.option("--solution", default=None, help="For learned_from_failures: what fixed it.")
@click.option(
    "--session", default=None, metavar="ID",
    help="Written by the agent of this session, when asked to reflect (source: agent; docs/reflect.md).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the entry's id, whether it was added, the commit.")
@click.pass_context
def add(
    ctx: click.Context,
    domain: str,
    section: str,
    text: str,
    error: str | None,
    solution: str | None,
    session: str | None,
    as_json: bool,
) -> None:
    """Add a hand-written entry to DOMAIN's SECTION.

    SECTION is one of: core_files, patterns, best_practices, learned_from_failures,
    effective_patterns, successful_techniques. An entry already present (same id) is not added twice.
    With --session, the agent of that session wrote it: the entry says `source: agent`, its commit names
    the session, and what the learner parsed from the same session as the same lesson takes its wording.
    """
    from expertise_kit.api import add_entry, add_record

    key = normalise_section(section)
    if (error or solution) and key != "learned_from_failures":
        raise click.UsageError("--error and --solution only apply to learned_from_failures")
    store = open_store(ctx.obj)
    result, found = add_entry(store, domain, key, text, error=error, solution=solution, session=session)
    if found:
        kinds = ", ".join(f"{n} {kind}" for kind, n in found.items())
        click.echo(f"warning: scrubbed {sum(found.values())} secret(s) from the entry ({kinds})", err=True)
    if as_json:
        echo_json(add_record(result, store, key, found))
        return
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
