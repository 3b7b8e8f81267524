from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import report_commit
from expertise_kit.document.names import validate_domain_name
from expertise_kit.errors import UserError
from expertise_kit.project import find_project


def _ids(ids: list[str] | None) -> str:
    if ids is None:
        return "?"
    return str(len(ids))


@click.command()
@click.argument("domain", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object per revision, newest first.")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=None, help="Show at most N revisions.")
@click.option("--sync", is_flag=True, help="Commit revisions that were deferred while git was busy.")
@click.option(
    "--shared", is_flag=True, help="List the shared layer's revisions (refs/expertise/shared), from every branch."
)
@click.pass_obj
def history(start: Path, domain: str | None, as_json: bool, limit: int | None, sync: bool, shared: bool) -> None:
    """List revisions of the expertise files, newest first.

    Each revision shows its commit, time, change type, session, and how many entries it added and
    removed. Deferred revisions (made while git was busy) are listed first until they are committed.
    A merge that pruned entries at the line cap lists them under its commit (or, while it is still
    open, under a row of its own).
    With --shared: the revisions of the shared layer every worktree and branch reads, each marked with
    the branch it came from.
    """
    project = find_project(start)
    if domain is not None:
        validate_domain_name(domain)
    if shared and sync:
        raise UserError("--shared and --sync can't be used together", hint="run them one at a time")
    rev = None
    if shared:
        from expertise_kit.versioning.shared import SHARED_REF, read_ref

        if project.git is None:
            raise UserError("not a git repository, so there is no shared layer", hint="run it in a git work tree")
        if read_ref(project.git) is None:
            click.echo(f"{SHARED_REF} has no revisions yet", err=True)
            return
        rev = SHARED_REF
    if sync:
        from expertise_kit.store import Store

        with Store(project).transaction("manual") as tx:
            outcome = tx.commit_pending()
        if outcome.deferred:
            raise UserError(f"still deferred: {outcome.deferred}", hint=outcome.hint)
        if not outcome.sha and not outcome.synced:
            click.echo("nothing to sync", err=True)
        report_commit(outcome)
    from expertise_kit.versioning.log import read_history

    rows = read_history(project, domain, limit, rev=rev)
    if as_json:
        echo_json([row.as_json() for row in rows])
        return
    for row in rows:
        commit = row.commit[:12] if row.commit else "(merging)   " if row.pruned is not None else "(deferred)  "
        change = ",".join(row.changes) + (" (by hand)" if row.by_hand else "")
        session = f" [session {', '.join(s[:8] for s in row.sessions)}]" if row.sessions else ""
        counts = f"+{_ids(row.added)} -{_ids(row.removed)}"
        click.echo(f"{commit}  {row.time}  {change:<18} {counts:<9} {row.subject}{session}")
        for removal in row.removals:
            click.echo(f"{'':14}removed {removal['id']} ({removal['cause']} on {removal['branch']}): {removal['text']}")
        for pruned in row.pruned or []:
            kind = "learned" if pruned.get("learned") else "hand-written"
            where = f"{pruned.get('section')} {pruned.get('id')}"
            click.echo(f"    pruned at the cap: {kind} {where}: {pruned.get('text')}")
