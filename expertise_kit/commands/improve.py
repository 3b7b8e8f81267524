from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json


@click.command()
@click.argument("domain", required=False)
@click.option(
    "--limit", type=click.IntRange(min=1, max=200), default=20, show_default=True, help="Files to add per domain."
)
@click.option("--dry-run", is_flag=True, help="Show what would be added without writing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the ranked candidates per domain.")
@click.pass_obj
def improve(start: Path, domain: str | None, limit: int, dry_run: bool, as_json: bool) -> None:
    """Discover the files that matter to a domain and add them to its core_files.

    Candidates come from the domain's path rules (shared with the classifier) among files git tracks
    or would track; vendored, generated and binary files are skipped; the rest are ranked by how often
    git history touches them.
    """
    from expertise_kit.commands._shared import open_store, report_commit
    from expertise_kit.upkeep.discovery import improve_domain

    store = open_store(start)
    names = [domain] if domain else [n for n in store.config.domain_names if store.config.domains[n].paths]
    reports = [improve_domain(store, name, limit=limit, dry_run=dry_run) for name in names]
    if as_json:
        echo_json([r.as_json() for r in reports])
        return
    for report in reports:
        added = len(report.result.added) if report.result else 0
        verb = "would add" if dry_run else "added"
        click.echo(
            f"{report.domain}: {report.considered} files match, {verb} {added if not dry_run else len(report.ranked)}"
        )
        for path, touches in report.ranked:
            click.echo(f"  {touches:>4} commits  {path}")
        if report.result:
            report_commit(report.result.commit)
