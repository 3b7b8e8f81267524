from __future__ import annotations

from typing import Any

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import open_store
from expertise_kit.errors import Failures, FileMissing, UserError


@click.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object per domain.")
@click.pass_context
def list_domains(ctx: click.Context, as_json: bool) -> None:
    """One row per domain: lines, entries and last revision.

    A file that can't be read gets an error row, its reason on stderr, and exit status 1.
    """
    store = open_store(ctx.obj)
    rows: list[dict[str, Any]] = []
    failures: list[UserError] = []
    for name in store.config.domain_names:
        row: dict[str, Any] = {
            "domain": name,
            "lines": None,
            "entries": None,
            "last_revision": None,
            "status": "ok",
            "error": None,
        }
        try:
            doc = store.load(name)
        except UserError as exc:
            row.update(status="missing" if isinstance(exc, FileMissing) else "error", error=exc.one_line())
            failures.append(exc)
        else:
            row.update(lines=doc.line_count, entries=doc.entry_count)
        rows.append(row)
    from expertise_kit.versioning.log import last_revisions

    revisions = last_revisions(store.project, [row["domain"] for row in rows])
    for row in rows:
        newest = revisions.get(row["domain"])
        if newest is not None:
            row["last_revision"] = {"commit": newest.commit, "time": newest.time, "subject": newest.subject}
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
    if failures:
        raise Failures(failures)
