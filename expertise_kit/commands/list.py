from __future__ import annotations

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.errors import Failures, UserError


@click.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object per domain.")
@click.pass_context
def list_domains(ctx: click.Context, as_json: bool) -> None:
    """One row per domain: lines, entries and last revision.

    A file that can't be read gets an error row, its reason on stderr, and exit status 1.
    """
    from expertise_kit.api import Expertise

    rows = Expertise(ctx.obj).list()
    if as_json:
        echo_json(rows)
    else:
        width = max(len(row["domain"]) for row in rows)
        click.echo(f"{'domain':<{width}}  {'lines':>5}  {'entries':>7}  {'status':<7}  last revision")
        for row in rows:
            lines = "-" if row["lines"] is None else row["lines"]
            entries = "-" if row["entries"] is None else row["entries"]
            last = row["last_revision"]
            revision = f"{last['commit'][:12]} {last['time'][:10]} {last['subject']}" if last else "-"
            click.echo(f"{row['domain']:<{width}}  {lines:>5}  {entries:>7}  {row['status']:<7}  {revision}")
    failures = [UserError(row["error"]) for row in rows if row["status"] != "ok"]
    if failures:
        raise Failures(failures)
